package live

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
)

// With the join's state TTL, a paid order whose order and payment are
// further apart in event time than the TTL is not expected: the live
// verifier counts it as not joined, never as lost.
func TestLiveVerifierStateTTL(t *testing.T) {
	_, c := kafkatest.LiveBroker(t, 1)
	defer noLeaks(t)() // after the broker started: its goroutines stay until cleanup
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p, err := c.SyncProducer()
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var msgs []*sarama.ProducerMessage
	var ords []orders.Order
	for i := range 20 {
		o := orders.Order{OrderID: fmt.Sprintf("o-%06d", i), Customer: "c-1", AmountCents: 100}
		pay := orders.Payment{OrderID: o.OrderID, PaymentID: "p-" + o.OrderID, AmountCents: 100}
		ob, _ := json.Marshal(o)
		pb, _ := json.Marshal(pay)
		payAt := base.Add(time.Second)
		if i%2 == 1 {
			payAt = base.Add(10 * time.Minute) // too far apart to join
		} else {
			ords = append(ords, o)
		}
		msgs = append(msgs,
			&sarama.ProducerMessage{Topic: orders.TopicOrders, Partition: 0, Value: sarama.ByteEncoder(ob), Timestamp: base},
			&sarama.ProducerMessage{Topic: orders.TopicPayments, Partition: 0, Value: sarama.ByteEncoder(pb), Timestamp: payAt})
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
	p.Close()
	out, err := sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	kafkatest.Commit(t, out, kafkatest.WriteTxn(t, out, "t/0", ords))

	v := NewLiveVerifier(LiveConfig{Client: c, Inputs: map[string]string{orders.TopicOrders: orders.TopicOrders, orders.TopicPayments: orders.TopicPayments},
		Output: "revenue", Expect: kafkatest.ExpectOrders("paid-orders", time.Minute)})
	var committed fakeCommitted
	committed.set(1, checkpoint.Offsets{orders.TopicOrders: {0: 20}, orders.TopicPayments: {0: 20}})
	r := startLive(t, v, committed.get, func(s LiveStatus) error {
		if s.Lost > 0 {
			return fmt.Errorf("lost %d", s.Lost)
		}
		return nil
	})
	s := waitFor(t, v, "checkpoint 1 checked", func(s LiveStatus) bool { return s.AsOf == 1 })
	r.stop()
	if s.Lost != 0 || s.NotJoined != 10 || s.Committed != 10 || s.Duplicates != 0 {
		t.Fatalf("status %+v, want 10 committed, 10 not joined, nothing lost", s)
	}
}

// An unaligned checkpoint holds records in flight: the verifier does not
// count their paid orders as lost while they are missing from the output
// committed as of it, and counts them once a later checkpoint commits them
// or no longer holds them.
func TestLiveVerifierDoesNotCountInFlightAsLost(t *testing.T) {
	_, c := kafkatest.LiveBroker(t, 1)
	defer noLeaks(t)()
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

	gen := orders.NewGenerator(12, 600, orders.GeneratorPartitions)
	topics := []string{orders.TopicOrders, orders.TopicPayments}
	var committed fakeCommitted
	v := NewLiveVerifier(LiveConfig{Client: c, Inputs: map[string]string{"orders": "orders", "payments": "payments"}, Output: "revenue", Expect: kafkatest.ExpectOrders("paid-orders", 0)})
	run := startLive(t, v, committed.get, func(LiveStatus) error { return nil })
	defer run.stop()

	// Checkpoint 1 holds two paid orders in flight: they are not in its
	// output.
	b1 := kafkatest.Bounds(gen, topics, 1, 2)
	out1 := kafkatest.NewSince(kafkatest.ExpectedBelow(t, gen, b1, true), nil)
	kafkatest.WriteInputs(t, c, gen, nil, b1)
	kafkatest.Commit(t, o, kafkatest.WriteTxn(t, o, "sink-1", out1[2:]))
	committed.mu.Lock()
	committed.inFlight = []string{out1[0].OrderID, out1[1].OrderID}
	committed.mu.Unlock()
	committed.set(1, b1)
	s := waitFor(t, v, "checkpoint 1", func(s LiveStatus) bool { return s.AsOf == 1 })
	if s.Lost != 0 || s.InFlight != 2 {
		t.Fatalf("checkpoint 1: %+v, want 2 in flight, none lost", s)
	}

	// Checkpoint 2 commits one of them; the other is no longer in flight
	// and not committed: lost.
	b2 := kafkatest.Bounds(gen, topics, 2, 2)
	e2 := kafkatest.ExpectedBelow(t, gen, b2, true)
	kafkatest.WriteInputs(t, c, gen, b1, b2)
	kafkatest.Commit(t, o, kafkatest.WriteTxn(t, o, "sink-2", append(kafkatest.NewSince(e2, kafkatest.ExpectedBelow(t, gen, b1, true)), out1[0])))
	committed.mu.Lock()
	committed.inFlight = nil
	committed.mu.Unlock()
	committed.set(2, b2)
	s = waitFor(t, v, "checkpoint 2", func(s LiveStatus) bool { return s.AsOf == 2 })
	if s.Lost != 1 || s.InFlight != 0 {
		t.Fatalf("checkpoint 2: %+v, want the one left out lost", s)
	}
}
