package broker_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
	"github.com/faultline-dev/faultline/runtime/verify"
)

// A retention round accounts in the ledger for everything below the
// retained checkpoints' offsets and the output's last stable offset, saves
// it, and deletes the input below the oldest checkpoint and the output
// below where its pre-committed transactions began; the verification that
// goes on from the saved ledger then says what a full read said before.
func TestRetentionDeletesOnlyWhatIsAccountedFor(t *testing.T) {
	// Reads in pieces smaller than a round's work: a round goes on until
	// it is done (once it stopped at the first piece, and the ledger fell
	// further behind the output every round).
	defer func(n int64) { *broker.RoundRecords = n }(*broker.RoundRecords)
	*broker.RoundRecords = 700
	f := kafkatest.NewRetentionFixture(t, exactlyOnce)
	want, err := verify.Verify(context.Background(), kafka.Inputs{C: f.C}, kafkatest.ExpectOrders("paid-orders", 0), "exactly-once", f.Quarter, kafkatest.MustRead(t, f.C, nil))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ledger")
	ledger := kafkatest.MustLedger(kafkatest.ExpectOrders("paid-orders", 0))
	older := &checkpoint.Completed{ID: 1, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{
		{Operator: "src", Index: 0}:  {Offsets: f.Eighth},
		{Operator: "sink", Index: 0}: {OutputFrom: checkpoint.Offsets{"revenue": f.OutFrom}},
	}}
	newer := &checkpoint.Completed{ID: 2, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{
		{Operator: "src", Index: 0}: {Offsets: f.Quarter},
	}}
	readersReady := false
	r := broker.NewRetention(broker.RetentionConfig{Client: f.C, Inputs: f.InputTopic, Output: "revenue", Ledger: ledger, Path: path,
		Checkpoints: func(context.Context) ([]*checkpoint.Completed, error) {
			return []*checkpoint.Completed{older, newer}, nil
		},
		Readers: func() (checkpoint.Offsets, bool) { return nil, readersReady },
		Logf:    t.Logf})

	// A reader that has not started yet holds everything back.
	if err := r.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.LogStart(t, orders.TopicOrders, 0); got != 0 {
		t.Fatalf("deleted below %d of orders/0 while a reader had read nothing", got)
	}
	readersReady = true
	if err := r.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{orders.TopicOrders, orders.TopicPayments} {
		for p, o := range f.Eighth[topic] {
			if got := f.LogStart(t, topic, p); got != o {
				t.Errorf("%s/%d starts at %d, want %d (the oldest checkpoint's offset)", topic, p, got, o)
			}
			if pos, _ := ledger.Position(topic, p); pos != o {
				t.Errorf("ledger at %d of %s/%d, want %d", pos, topic, p, o)
			}
		}
	}
	if got := f.LogStart(t, "revenue", 0); got != f.OutFrom[0] {
		t.Errorf("revenue/0 starts at %d, want %d (where the oldest checkpoint's transaction began)", got, f.OutFrom[0])
	}
	lso, err := kafka.ListOffsets(f.CL, "revenue", []int32{0}, sarama.ReadCommitted)
	if err != nil {
		t.Fatal(err)
	}
	if pos, _ := ledger.Position("revenue", 0); pos != lso[0] {
		t.Errorf("ledger at %d of revenue/0, want its last stable offset %d", pos, lso[0])
	}

	// The next run loads the ledger and reads the rest from its positions.
	saved, err := verify.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	from := map[string]map[int32]int64{}
	for _, topic := range []string{orders.TopicOrders, orders.TopicPayments} {
		from[topic] = saved.Positions[topic]
	}
	got, err := verify.VerifyOn(context.Background(), saved, kafka.Inputs{C: f.C, From: from}, "exactly-once", f.Quarter, kafkatest.MustRead(t, f.C, saved.Positions["revenue"]))
	if err != nil {
		t.Fatal(err)
	}
	if got != want || want.Duplicates != 1 || want.Expected == 0 {
		t.Fatalf("from the ledger: %+v\nfrom everything: %+v", got, want)
	}
}

// Retention never deletes the last record of a partition: the broker
// deletes whole segments, the last one too once all of it is below the
// new start, and a broker that reads back a partition without a segment
// starts it again at offset 0 (the end it had is written nowhere else), so
// after a crash the input would be written a second time and the output
// would go on at offsets the ledger has already counted.
func TestRetentionKeepsTheEndOfAPartitionItEmpties(t *testing.T) {
	dir := t.TempDir()
	_, c := kafkatest.StartOn(t, dir, 1)
	gen := orders.NewGenerator(3, 4_000, orders.GeneratorPartitions)
	topics := []string{orders.TopicOrders, orders.TopicPayments}
	all := kafkatest.Bounds(gen, topics, 1, 1)
	kafkatest.WriteInputs(t, c, gen, checkpoint.Offsets{}, all)
	cp := &checkpoint.Completed{ID: 1, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{{Operator: "src"}: {Offsets: all}}}
	r := broker.NewRetention(broker.RetentionConfig{Client: c, Inputs: map[string]string{orders.TopicOrders: orders.TopicOrders, orders.TopicPayments: orders.TopicPayments},
		Output: "revenue", Ledger: kafkatest.MustLedger(kafkatest.ExpectOrders("paid-orders", 0)), Path: filepath.Join(t.TempDir(), "ledger"),
		Checkpoints: func(context.Context) ([]*checkpoint.Completed, error) { return []*checkpoint.Completed{cp}, nil }, Logf: t.Logf})
	if err := r.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	killed := crashImage(t, dir)
	if err := broker.CheckLog(killed, broker.LogNeeds{}); err != nil {
		t.Fatal(err)
	}
	_, c = kafkatest.StartOn(t, killed, 1)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, topic := range topics {
		ends, err := kafka.EndOffsets(cl, topic)
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range all[topic] {
			if ends[p] != want {
				t.Errorf("%s/%d ends at %d after the crash, want %d", topic, p, ends[p], want)
			}
		}
	}
}

// A checkpoint that completes and commits while a round lists the
// checkpoints is not among them, and its restore reads the output again
// from where its pre-committed transaction began: the round must not
// delete that output. (It did when it listed the checkpoints before it
// read the output's last stable offset: the kill soak of unaligned runs
// then found the log short of the checkpoint at the next start.)
func TestRetentionKeepsTheOutputOfACheckpointCompletingDuringTheRound(t *testing.T) {
	_, c := kafkatest.StartOn(t, t.TempDir(), 1)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	gen := orders.NewGenerator(3, 4_000, orders.GeneratorPartitions)
	topics := []string{orders.TopicOrders, orders.TopicPayments}
	all := kafkatest.Bounds(gen, topics, 1, 1)
	kafkatest.WriteInputs(t, c, gen, checkpoint.Offsets{}, all)
	o, err := sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	pending := kafkatest.WriteTxn(t, o, "t/1", kafkatest.NewSince(kafkatest.ExpectedBelow(t, gen, all, true), nil)[:50])
	_, from, _ := o.PositionOf(pending)
	// The first checkpoint: nothing pre-committed, so no output floor.
	first := &checkpoint.Completed{ID: 1, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{{Operator: "src"}: {Offsets: checkpoint.Offsets{}}}}
	r := broker.NewRetention(broker.RetentionConfig{Client: c, Inputs: map[string]string{orders.TopicOrders: orders.TopicOrders, orders.TopicPayments: orders.TopicPayments},
		Output: "revenue", Ledger: kafkatest.MustLedger(kafkatest.ExpectOrders("paid-orders", 0)), Path: filepath.Join(t.TempDir(), "ledger"),
		Checkpoints: func(context.Context) ([]*checkpoint.Completed, error) {
			// The second checkpoint completes and commits as the list is
			// read, too late to be in it.
			kafkatest.Commit(t, o, pending)
			return []*checkpoint.Completed{first}, nil
		}, Logf: t.Logf})
	if err := r.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	if start := kafkatest.LogStart(t, cl, "revenue", 0); start > from[0] {
		t.Fatalf("the output now starts at %d; the checkpoint that completed during the round needs it from %d", start, from[0])
	}
}

// exactlyOnce opens the exactly-once output of revenue, for the retention
// fixture.
func exactlyOnce(c kafka.Client, cl sarama.Client) (kafkatest.Output, error) {
	return sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
}
