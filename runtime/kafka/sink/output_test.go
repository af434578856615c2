package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
)

func TestOutputTransactions(t *testing.T) {
	_, c, cl := kafkatest.EmbeddedClient(t)
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	// t/0 is committed by the output that wrote it, t/1 by another
	// process's (from its committable), t/2 is left open and then aborted
	// as lingering; t/3 was never used and stops the probe.
	for name, v := range map[string]string{"t/0": "a", "t/1": "b", "t/2": "c"} {
		if err := o.Write(name, nil, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	c0, err := o.Prepare("t/0")
	if err != nil {
		t.Fatal(err)
	}
	c1, err := o.Prepare("t/1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Prepare("t/2"); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(c0); err != nil {
		t.Fatal(err)
	}
	// A second output stands in for a restarted process.
	o2, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	if err := o2.Commit(c1); err != nil {
		t.Fatalf("resumed commit: %v", err)
	}
	if err := o2.Commit(c1); err != nil {
		t.Fatalf("committing again: %v", err)
	}
	if err := o2.AbortLingering("t/", 2); err != nil {
		t.Fatal(err)
	}
	got := kafkatest.CommittedValues(t, c, "revenue")
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("committed %v, want [a b]", got)
	}
	// The aborted t/2 can be used again.
	if err := o2.Write("t/2", nil, []byte("d")); err != nil {
		t.Fatal(err)
	}
	c2, _ := o2.Prepare("t/2")
	if err := o2.Commit(c2); err != nil {
		t.Fatal(err)
	}
	if got := kafkatest.CommittedValues(t, c, "revenue"); len(got) != 3 || got[2] != "d" {
		t.Fatalf("committed %v, want [a b d]", got)
	}
	// A restored sink aborts what its own output still has open and then
	// writes under the same name again: the write goes to a new
	// transaction, not to the writer the abort stopped.
	if err := o2.Write("t/3", nil, []byte("lost")); err != nil {
		t.Fatal(err)
	}
	if err := o2.AbortLingering("t/", 3); err != nil {
		t.Fatal(err)
	}
	if err := o2.Write("t/3", nil, []byte("e")); err != nil {
		t.Fatal(err)
	}
	c3, err := o2.Prepare("t/3")
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Commit(c3); err != nil {
		t.Fatal(err)
	}
	if got := kafkatest.CommittedValues(t, c, "revenue"); len(got) != 4 || got[3] != "e" {
		t.Fatalf("committed %v, want [a b d e]", got)
	}
}

// One transaction of more records than a batch holds, over three
// partitions: each record is committed once, in the partition Kafka's Java
// producer picks for its key (murmur2; Sarama's NewMurmur2Partitioner is
// the independent check), and a read_committed reader sees none of
// them before the commit. The batches of a partition carry consecutive
// sequence numbers; the broker refuses any gap.
func TestOutputBatchesAcrossPartitions(t *testing.T) {
	_, c, cl := kafkatest.EmbeddedClient(t)
	const topic, parts, n = "multi", 3, 3*batchRecords + 100
	if err := kafka.EnsureTopics(context.Background(), cl, map[string]int32{topic: parts}); err != nil {
		t.Fatal(err)
	}
	o, err := NewOutput(c, cl, topic, ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("c-%d", i%97)
		if err := o.Write("big/0", []byte(key), []byte(fmt.Sprintf("%s/%d", key, i))); err != nil {
			t.Fatal(err)
		}
	}
	committable, err := o.Prepare("big/0")
	if err != nil {
		t.Fatal(err)
	}
	partIDs := []int32{0, 1, 2}
	lso, err := kafka.ListOffsets(cl, topic, partIDs, sarama.ReadCommitted)
	if err != nil {
		t.Fatal(err)
	}
	hwm, err := kafka.ListOffsets(cl, topic, partIDs, sarama.ReadUncommitted)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range partIDs {
		if lso[p] != 0 || hwm[p] == 0 {
			t.Fatalf("partition %d before the commit: stable offset %d, end %d; want 0 and more", p, lso[p], hwm[p])
		}
	}
	if err := o.Commit(committable); err != nil {
		t.Fatal(err)
	}
	ends, err := kafka.EndOffsets(cl, topic)
	if err != nil {
		t.Fatal(err)
	}
	partitioner := sarama.NewMurmur2Partitioner(topic)
	seen := map[string]bool{}
	for p := int32(0); p < parts; p++ {
		recs, err := kafka.Read(context.Background(), c, topic, nil, map[int32]int64{p: ends[p]}, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			want, _ := partitioner.Partition(&sarama.ProducerMessage{Key: sarama.ByteEncoder(r.Key)}, parts)
			if want != p {
				t.Fatalf("key %s in partition %d, the Java producer's partitioner picks %d", r.Key, p, want)
			}
			if seen[string(r.Value)] {
				t.Fatalf("%s committed twice", r.Value)
			}
			seen[string(r.Value)] = true
		}
	}
	if len(seen) != n {
		t.Fatalf("%d records committed, want %d", len(seen), n)
	}
}

// A writer closed under a sink that is still writing (a failover abandons
// the attempt's transactions) fails the sink's next write and flush instead
// of blocking them.
func TestRecordWriterAbandoned(t *testing.T) {
	_, _, cl := kafkatest.EmbeddedClient(t)
	w, err := newRecordWriter(cl, "revenue", nil, -1, -1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2*batchRecords; i++ {
		if err := w.write(nil, []byte("x"), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { w.abandon(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("abandon did not return")
	}
	if err := w.write(nil, []byte("y"), time.Now()); !errors.Is(err, kafka.ErrWriterClosed) {
		t.Fatalf("write after abandon: %v, want ErrWriterClosed", err)
	}
	if err := w.flush(); !errors.Is(err, kafka.ErrWriterClosed) {
		t.Fatalf("flush after abandon: %v, want ErrWriterClosed", err)
	}
}

// A broker that refuses every request fails the write within the retries,
// with the partition named, instead of hanging the sink.
func TestRecordWriterBrokerDown(t *testing.T) {
	e, _, cl := kafkatest.EmbeddedClient(t)
	w, err := newRecordWriter(cl, "revenue", nil, -1, -1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.abandon()
	e.Down(time.Minute)
	defer e.Down(0)
	if err := w.write(nil, []byte("x"), time.Now()); err != nil {
		t.Fatal(err)
	}
	err = w.flush()
	if err == nil || !strings.Contains(err.Error(), "revenue/0") {
		t.Fatalf("flush against a broker that is down: %v, want an error naming revenue/0", err)
	}
}

// Without a delivery guarantee records go to an async producer at once:
// Prepare never waits for them, Flush does, and every record is there
// afterwards; at-least-once sends them in batches and Prepare flushes.
// newTopicOutput creates topic with one partition and an output with
// guarantee g writing to it, closed when the test ends.
func newTopicOutput(t *testing.T, c kafka.Client, cl sarama.Client, topic string, g Guarantee) *Output {
	t.Helper()
	if err := kafka.EnsureTopics(context.Background(), cl, map[string]int32{topic: 1}); err != nil {
		t.Fatal(err)
	}
	o, err := NewOutput(c, cl, topic, g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

func TestOutputWithoutTransactions(t *testing.T) {
	_, c, cl := kafkatest.EmbeddedClient(t)
	for _, g := range []Guarantee{None, AtLeastOnce} {
		t.Run(string(g), func(t *testing.T) {
			topic := "out-" + string(g)
			o := newTopicOutput(t, c, cl, topic, g)
			const n = 5000
			for i := 0; i < n; i++ {
				if err := o.Write("ignored", nil, []byte{byte('a' + i%26)}); err != nil {
					t.Fatal(err)
				}
			}
			if c, err := o.Prepare("ignored"); c != "" || err != nil {
				t.Fatalf("Prepare = %q, %v; want no committable", c, err)
			}
			if err := o.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := len(kafkatest.CommittedValues(t, c, topic)); got != n {
				t.Fatalf("%d records in %s, want %d", got, topic, n)
			}
		})
	}
}

// The newest version of each request the writer sends that Sarama lets it
// send for the configured Kafka version (Sarama refuses a version newer
// than the configured release had, and encodes Produce up to v10,
// InitProducerId up to v4, AddPartitionsToTxn and EndTxn up to v3).
func TestRequestVersions(t *testing.T) {
	for _, c := range []struct {
		kafka                                sarama.KafkaVersion
		produce, addPartitions, init, endTxn int16
	}{
		{sarama.V0_11_0_0, 3, 0, 0, 0}, {sarama.V1_0_0_0, 5, 0, 0, 0}, {sarama.V2_0_0_0, 6, 1, 1, 1}, {sarama.V2_1_0_0, 7, 1, 1, 1},
		{sarama.V2_4_0_0, 8, 1, 2, 1}, {sarama.V2_5_0_0, 8, 1, 3, 1}, {sarama.V2_7_0_0, 8, 2, 4, 2}, {sarama.V2_8_0_0, 9, 3, 4, 3},
		{sarama.V3_7_0_0, 10, 3, 4, 3}, {sarama.V4_0_0_0, 10, 3, 4, 3},
	} {
		p, a, i, e := produceVersion(c.kafka), addPartitionsVersion(c.kafka), initProducerIDVersion(c.kafka), endTxnVersion(c.kafka)
		if p != c.produce || a != c.addPartitions || i != c.init || e != c.endTxn {
			t.Errorf("Kafka %s: Produce v%d, AddPartitionsToTxn v%d, InitProducerId v%d, EndTxn v%d; want v%d, v%d, v%d, v%d",
				c.kafka, p, a, i, e, c.produce, c.addPartitions, c.init, c.endTxn)
		}
	}
}

// A record carries the timestamp the sink gave it (Kafka keeps
// milliseconds), with every guarantee.
func TestOutputWritesTheTimestampsItIsGiven(t *testing.T) {
	_, c, cl := kafkatest.EmbeddedClient(t)
	base := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	for i, g := range []Guarantee{ExactlyOnce, AtLeastOnce, None} {
		t.Run(string(g), func(t *testing.T) {
			topic := "stamped-" + string(g)
			o := newTopicOutput(t, c, cl, topic, g)
			txn := fmt.Sprintf("stamps/%d", i)
			want := []time.Time{base, base.Add(1500 * time.Millisecond), base.Add(time.Hour)}
			for j, at := range want {
				if err := o.WriteAt(txn, nil, []byte{byte('a' + j)}, at); err != nil {
					t.Fatal(err)
				}
			}
			cm, err := o.Prepare(txn)
			if err != nil {
				t.Fatal(err)
			}
			if cm != "" {
				if err := o.Commit(cm); err != nil {
					t.Fatal(err)
				}
			} else if err := o.Flush(); err != nil {
				t.Fatal(err)
			}
			cfg, _ := c.Config()
			cfg.Consumer.IsolationLevel = sarama.ReadCommitted
			cons, err := sarama.NewConsumer(c.Brokers, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			for j, at := range want {
				select {
				case m := <-pc.Messages():
					if !m.Timestamp.Equal(at) || string(m.Value) != string(rune('a'+j)) {
						t.Fatalf("record %d: %q at %v, want %q at %v", j, m.Value, m.Timestamp, string(rune('a'+j)), at)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("record %d not read", j)
				}
			}
		})
	}
}

// The sink's transaction timeout is the broker's: a pre-committed
// transaction older than it is aborted by the broker and cannot be
// committed (the case a long freeze of the UI would hit), one younger can.
func TestTransactionTimeoutReachesTheBroker(t *testing.T) {
	_, c, cl := kafkatest.EmbeddedClient(t)
	for _, tc := range []struct {
		timeout time.Duration
		lost    bool
	}{{time.Second, true}, {time.Minute, false}} {
		o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
		if err != nil {
			t.Fatal(err)
		}
		o.WithTransactionTimeout(tc.timeout)
		txn := fmt.Sprintf("timeout-%s/0", tc.timeout)
		if err := o.Write(txn, nil, []byte("v")); err != nil {
			t.Fatal(err)
		}
		committable, err := o.Prepare(txn)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		err = o.Commit(committable)
		if lost := errors.Is(err, runtime.ErrTxnLost); lost != tc.lost {
			t.Errorf("timeout %s, committed 2 s after the pre-commit: %v, want lost %v", tc.timeout, err, tc.lost)
		}
		o.Close()
	}
}
