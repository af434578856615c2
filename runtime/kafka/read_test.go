package kafka_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
)

// The oracle's read_committed read ends where the committed records end,
// found out from the broker rather than from a silence: over a partition
// that holds only an aborted transaction it returns at once (it used to
// wait ten seconds for a first record that never comes), and an aborted
// transaction larger than one fetch between two committed ones hides
// neither of them. The probe's answers list the aborted transaction even
// when they stop short of its marker (kfake leaves it out of an answer its
// overall size limit cut short, so the probe asks for more than one
// partition's worth).
func TestReadCommittedEndsWhereTheCommittedRecordsEnd(t *testing.T) {
	_, c, cl := kafkatest.EmbeddedClient(t)
	o, err := sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	abort := func(txn string, n int) {
		t.Helper()
		value := []byte(strings.Repeat("x", 200))
		for i := 0; i < n; i++ {
			if err := o.Write(txn, nil, value); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := o.Prepare(txn); err != nil {
			t.Fatal(err)
		}
		if err := o.AbortLingering(txn[:len(txn)-1], 0); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(txn, v string) {
		t.Helper()
		if err := o.Write(txn, nil, []byte(v)); err != nil {
			t.Fatal(err)
		}
		cm, err := o.Prepare(txn)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Commit(cm); err != nil {
			t.Fatal(err)
		}
	}
	abort("a/0", 20000) // about 4 MB: more than one fetch answers
	// What the oracle's and the live verifier's probes see: nothing a
	// read_committed consumer would be handed, all the way to the marker.
	end, err := cl.GetOffset("revenue", 0, sarama.OffsetNewest)
	if err != nil {
		t.Fatal(err)
	}
	for from := int64(0); from < end; {
		last, reached, err := kafka.VisibleIn(cl, "revenue", 0, from, end, sarama.ReadCommitted)
		if err != nil {
			t.Fatal(err)
		}
		if last >= 0 || reached <= from {
			t.Fatalf("VisibleIn(%d) = %d, %d: the aborted records look committed (end %d)", from, last, reached, end)
		}
		from = reached
	}
	start := time.Now()
	if got := kafkatest.CommittedValues(t, c, "revenue"); len(got) != 0 {
		t.Fatalf("committed %v, want none", got)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("reading a partition of aborted records took %s", took.Round(time.Millisecond))
	}
	commit("b/0", "first")
	abort("c/0", 20000) // about 4 MB: several fetches of a probe
	commit("d/0", "last")
	if got := kafkatest.CommittedValues(t, c, "revenue"); len(got) != 2 || got[0] != "first" || got[1] != "last" {
		t.Fatalf("committed %v, want [first last]", got)
	}
}

// A read_committed read up to an offset hands over nothing at or past it,
// even when what lies just below it is aborted and the consumer's next
// record is beyond: the ledger reads the output in rounds, each from where
// the last ended, and counted such a record twice.
func TestReadCommittedStopsAtItsBound(t *testing.T) {
	_, c, cl := kafkatest.EmbeddedClient(t)
	o, err := sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for name, v := range map[string]string{"t/0": "a", "t/1": "b"} {
		if err := o.Write(name, nil, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	c0, err := o.Prepare("t/0")
	if err != nil {
		t.Fatal(err)
	}
	kafkatest.Commit(t, o, c0)
	if _, err := o.Prepare("t/1"); err != nil {
		t.Fatal(err)
	}
	if err := o.AbortLingering("t/", 1); err != nil {
		t.Fatal(err)
	}
	end, err := kafka.EndOffsets(cl, "revenue")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Write("t/2", nil, []byte("c")); err != nil {
		t.Fatal(err)
	}
	c2, err := o.Prepare("t/2")
	if err != nil {
		t.Fatal(err)
	}
	kafkatest.Commit(t, o, c2)
	recs, err := kafka.Read(context.Background(), c, "revenue", nil, end, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || string(recs[0].Value) != "a" {
		t.Fatalf("read below %v: %v, want only a", end, recs)
	}
}

// ReadEach hands each record the topic's watermark as of it: the least
// over the partitions of the newest timestamp read of each, a partition
// with nothing to read left out (it would hold the watermark at none for
// good). Over orders with records in partition 0 of 4 only, the watermark
// is each record's own timestamp, and each record says its partition.
func TestReadEachHandsTheWatermarkOverThePartitions(t *testing.T) {
	_, c := kafkatest.Embedded(t)
	cfg, err := c.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Return.Successes = true
	prod, err := sarama.NewSyncProducer(c.Brokers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	base := time.UnixMilli(1_700_000_000_000)
	for i := range 5 {
		msg := &sarama.ProducerMessage{Topic: "orders", Partition: 0, Value: sarama.StringEncoder("x"), Timestamp: base.Add(time.Duration(i) * time.Second)}
		if _, _, err := prod.SendMessage(msg); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	err = kafka.ReadEach(context.Background(), c, "orders", nil, nil, false, func(r runtime.OutputRecord) error {
		if r.Partition != 0 || r.Watermark != r.Time {
			t.Errorf("record at %d of partition %d: watermark %d, want its own time", r.Time, r.Partition, r.Watermark)
		}
		n++
		return nil
	})
	if err != nil || n != 5 {
		t.Fatalf("read %d records, %v", n, err)
	}
}
