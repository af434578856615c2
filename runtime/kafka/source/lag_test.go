package source

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
)

// A reader's lag is the most records any of its partitions holds past the
// next one it reads, as the broker's fetches told it: unknown (-1) before
// the first fetch, then it falls as the reader polls and rises as records
// are written.
func TestReaderLagIsTheMostRecordsAPartitionHoldsAhead(t *testing.T) {
	_, c, cl := kafkatest.EmbeddedClient(t)
	prod, err := c.SyncProducer()
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	send := func(part int32, n int) {
		t.Helper()
		var msgs []*sarama.ProducerMessage
		for range n {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: orders.TopicOrders, Partition: part, Value: sarama.StringEncoder("x")})
		}
		if err := prod.SendMessages(msgs); err != nil {
			t.Fatal(err)
		}
	}
	src, err := NewSource(c, cl, orders.TopicOrders, StartEarliest, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := src.Reader([]int32{0, 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	lag := r.(runtime.LagReporter).Lag
	if l := lag(); l != -1 {
		t.Fatalf("lag %d before any fetch, want -1 (not known)", l)
	}
	send(0, 30)
	send(1, 10)
	// poll reads n records, then waits for the lag to become want (the
	// high watermarks come with the fetches, which run on their own).
	poll := func(n int, want int64) {
		t.Helper()
		for n > 0 {
			recs, _, err := r.Poll(context.Background(), nil, n)
			if err != nil {
				t.Fatal(err)
			}
			n -= len(recs)
		}
		deadline := time.Now().Add(10 * time.Second)
		for lag() != want && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if l := lag(); l != want {
			t.Fatalf("lag %d, want %d (next %v)", l, want, r.Offsets())
		}
	}
	poll(0, 30)
	poll(40, 0)
	send(1, 25)
	poll(0, 25)
	poll(25, 0)
}
