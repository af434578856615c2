package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"faultline/checkpoint"
	"faultline/runtime/jobs/orders"
)

// The broker goes away for a while: the verifier says so, keeps going, and
// checks the next checkpoint once the broker is back.
func TestLiveVerifierRidesOutBrokerDown(t *testing.T) {
	e, c := liveBroker(t, 1)
	defer noLeaks(t)() // after the broker started: its goroutines stay until cleanup
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()

	gen := orders.NewGenerator(3, 300, orders.GeneratorPartitions)
	topics := []string{orders.TopicOrders}
	var committed fakeCommitted
	v := NewLiveVerifier(LiveConfig{Client: c, Inputs: map[string]string{"orders": "orders"}, Output: "revenue", Expect: expectOrders("orders", 0)})
	run := startLive(t, v, committed.get, func(s LiveStatus) error {
		if s.Lost != 0 || s.Duplicates != 0 {
			return fmt.Errorf("lost %d, duplicates %d", s.Lost, s.Duplicates)
		}
		return nil
	})
	defer run.stop()

	b1 := bounds(gen, topics, 1, 2)
	e1 := expectedBelow(t, gen, b1, false)
	writeInputs(t, c, gen, nil, b1)
	commit(t, o, writeTxn(t, o, "sink-1", newSince(e1, nil)))
	committed.set(1, b1)
	waitFor(t, v, "checkpoint 1", func(s LiveStatus) bool { return s.AsOf == 1 && s.Committed == len(e1) })

	e.Down(1500 * time.Millisecond)
	s := waitFor(t, v, "an error while the broker is down", func(s LiveStatus) bool { return s.Err != "" })
	t.Logf("while down: %s", s.Err)
	waitFor(t, v, "the error to clear", func(s LiveStatus) bool { return s.Err == "" && !e.IsDown() })

	b2 := bounds(gen, topics, 2, 2)
	e2 := expectedBelow(t, gen, b2, false)
	writeInputs(t, c, gen, b1, b2)
	commit(t, o, writeTxn(t, o, "sink-2", newSince(e2, e1)))
	committed.set(2, b2)
	s = waitFor(t, v, "checkpoint 2", func(s LiveStatus) bool { return s.AsOf == 2 })
	if s.Lost != 0 || s.Committed != len(e2) || s.Err != "" {
		t.Fatalf("checkpoint 2: %+v, want %d committed, none lost", s, len(e2))
	}
}

// A bad configuration stops Run at once with a named error.
func TestLiveVerifierRejectsBadConfig(t *testing.T) {
	v := NewLiveVerifier(LiveConfig{Client: Client{Brokers: []string{"127.0.0.1:1"}}, Inputs: map[string]string{"orders": "orders"}, Output: "revenue", Expect: expectOrders("paid-orders", 0)})
	err := v.Run(context.Background(), func() (int64, checkpoint.Offsets, []string, bool) { return 0, nil, nil, false })
	if err == nil || !contains(err.Error(), "payments") {
		t.Fatalf("Run: %v, want an error naming the payments input", err)
	}
	if s := v.Status(); s.Err == "" || s.Available {
		t.Fatalf("status %+v, want the error", s)
	}
}

// kfake answers ListOffsets with read_committed by the last stable offset:
// below an open transaction until it ends.
func TestListOffsetsReadCommittedIsLastStableOffset(t *testing.T) {
	_, c := liveBroker(t, 1)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	ord := orders.Order{OrderID: "o-000001", Customer: "c-1", AmountCents: 5}
	commit(t, o, writeTxn(t, o, "a", []orders.Order{ord}))
	open := writeTxn(t, o, "b", []orders.Order{ord, ord})
	lso, err := ListOffsets(cl, "revenue", []int32{0}, sarama.ReadCommitted)
	if err != nil {
		t.Fatal(err)
	}
	hwm, err := ListOffsets(cl, "revenue", []int32{0}, sarama.ReadUncommitted)
	if err != nil {
		t.Fatal(err)
	}
	// a's record and commit marker, then b's two records.
	if lso[0] != 2 || hwm[0] != 4 {
		t.Fatalf("open: LSO %d, high watermark %d; want 2 and 4", lso[0], hwm[0])
	}
	last, end, err := VisibleIn(cl, "revenue", 0, 0, hwm[0], sarama.ReadCommitted)
	if err != nil || last != 0 || end != 2 {
		t.Fatalf("visible below the LSO: last %d, end %d, %v; want 0, 2", last, end, err)
	}
	commit(t, o, open)
	lso, err = ListOffsets(cl, "revenue", []int32{0}, sarama.ReadCommitted)
	if err != nil {
		t.Fatal(err)
	}
	if lso[0] != 5 {
		t.Fatalf("committed: LSO %d, want 5 (after b's marker)", lso[0])
	}
	last, end, err = VisibleIn(cl, "revenue", 0, 1, 5, sarama.ReadCommitted)
	if err != nil || last != 3 || end != 5 {
		t.Fatalf("visible from a's marker: last %d, end %d, %v; want 3, 5", last, end, err)
	}
}
