package live

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
)

// The broker goes away for a while: the verifier says so, keeps going, and
// checks the next checkpoint once the broker is back.
func TestLiveVerifierRidesOutBrokerDown(t *testing.T) {
	e, c := kafkatest.LiveBroker(t, 1)
	defer noLeaks(t)() // after the broker started: its goroutines stay until cleanup
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	o, err := sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()

	gen := orders.NewGenerator(3, 300, orders.GeneratorPartitions)
	topics := []string{orders.TopicOrders}
	var committed fakeCommitted
	v := NewLiveVerifier(LiveConfig{Client: c, Inputs: map[string]string{"orders": "orders"}, Output: "revenue", Expect: kafkatest.ExpectOrders("orders", 0)})
	run := startLive(t, v, committed.get, func(s LiveStatus) error {
		if s.Lost != 0 || s.Duplicates != 0 {
			return fmt.Errorf("lost %d, duplicates %d", s.Lost, s.Duplicates)
		}
		return nil
	})
	defer run.stop()

	b1 := kafkatest.Bounds(gen, topics, 1, 2)
	e1 := kafkatest.ExpectedBelow(t, gen, b1, false)
	kafkatest.WriteInputs(t, c, gen, nil, b1)
	kafkatest.Commit(t, o, kafkatest.WriteTxn(t, o, "sink-1", kafkatest.NewSince(e1, nil)))
	committed.set(1, b1)
	waitFor(t, v, "checkpoint 1", func(s LiveStatus) bool { return s.AsOf == 1 && s.Committed == len(e1) })

	e.Down(1500 * time.Millisecond)
	s := waitFor(t, v, "an error while the broker is down", func(s LiveStatus) bool { return s.Err != "" })
	t.Logf("while down: %s", s.Err)
	waitFor(t, v, "the error to clear", func(s LiveStatus) bool { return s.Err == "" && !e.IsDown() })

	b2 := kafkatest.Bounds(gen, topics, 2, 2)
	e2 := kafkatest.ExpectedBelow(t, gen, b2, false)
	kafkatest.WriteInputs(t, c, gen, b1, b2)
	kafkatest.Commit(t, o, kafkatest.WriteTxn(t, o, "sink-2", kafkatest.NewSince(e2, e1)))
	committed.set(2, b2)
	s = waitFor(t, v, "checkpoint 2", func(s LiveStatus) bool { return s.AsOf == 2 })
	if s.Lost != 0 || s.Committed != len(e2) || s.Err != "" {
		t.Fatalf("checkpoint 2: %+v, want %d committed, none lost", s, len(e2))
	}
}

// A bad configuration stops Run at once with a named error.
func TestLiveVerifierRejectsBadConfig(t *testing.T) {
	v := NewLiveVerifier(LiveConfig{Client: kafka.Client{Brokers: []string{"127.0.0.1:1"}}, Inputs: map[string]string{"orders": "orders"}, Output: "revenue", Expect: kafkatest.ExpectOrders("paid-orders", 0)})
	err := v.Run(context.Background(), func() (int64, checkpoint.Offsets, []string, bool) { return 0, nil, nil, false })
	if err == nil || !strings.Contains(err.Error(), "payments") {
		t.Fatalf("Run: %v, want an error naming the payments input", err)
	}
	if s := v.Status(); s.Err == "" || s.Available {
		t.Fatalf("status %+v, want the error", s)
	}
}
