package kafka

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"faultline/checkpoint"
	"faultline/runtime"
	"faultline/runtime/jobs/orders"
	"faultline/runtime/verify"
)

// retentionSetup is a broker on disk with a quarter of the generator's input
// and a job's output of it: committed transactions for the paid orders of
// the first and second eighth, a duplicate, and a transaction still open.
type retentionFixture struct {
	c          Client
	cl         sarama.Client
	gen        *orders.Generator
	eighth     checkpoint.Offsets // the input's first eighth
	quarter    checkpoint.Offsets
	outFrom    map[int32]int64 // where the second transaction began
	inputTopic map[string]string
}

func newRetentionFixture(t *testing.T) *retentionFixture {
	t.Helper()
	_, c := startOn(t, t.TempDir(), 1)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	f := &retentionFixture{c: c, cl: cl, gen: orders.NewGenerator(3, 40_000, orders.GeneratorPartitions),
		inputTopic: map[string]string{orders.TopicOrders: orders.TopicOrders, orders.TopicPayments: orders.TopicPayments}}
	topics := []string{orders.TopicOrders, orders.TopicPayments}
	f.eighth, f.quarter = bounds(f.gen, topics, 1, 8), bounds(f.gen, topics, 1, 4)
	writeInputs(t, c, f.gen, checkpoint.Offsets{}, f.quarter)
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	first := expectedBelow(t, f.gen, f.eighth, true)
	second := newSince(expectedBelow(t, f.gen, f.quarter, true), first)
	commit(t, o, writeTxn(t, o, "t/0", newSince(first, nil)))
	c1 := writeTxn(t, o, "t/1", append(second, second[0])) // one duplicate
	_, f.outFrom, _ = o.PositionOf(c1)
	commit(t, o, c1)
	writeTxn(t, o, "t/2", second[:5]) // prepared, never committed: holds back the LSO
	return f
}

func (f *retentionFixture) logStart(t *testing.T, topic string, p int32) int64 {
	t.Helper()
	f.cl.RefreshMetadata(topic)
	o, err := f.cl.GetOffset(topic, p, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// A retention round accounts in the ledger for everything below the
// retained checkpoints' offsets and the output's last stable offset, saves
// it, and deletes the input below the oldest checkpoint and the output
// below where its pre-committed transactions began; the verification that
// goes on from the saved ledger then says what a full read said before.
func TestRetentionDeletesOnlyWhatIsAccountedFor(t *testing.T) {
	// Reads in pieces smaller than a round's work: a round goes on until
	// it is done (once it stopped at the first piece, and the ledger fell
	// further behind the output every round).
	defer func(n int64) { roundRecords = n }(roundRecords)
	roundRecords = 700
	f := newRetentionFixture(t)
	want, err := verify.Verify(context.Background(), Inputs{C: f.c}, expectOrders("paid-orders", 0), "exactly-once", f.quarter, mustRead(t, f.c, nil))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ledger")
	ledger := mustLedger(expectOrders("paid-orders", 0))
	older := &checkpoint.Completed{ID: 1, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{
		{Operator: "src", Index: 0}:  {Offsets: f.eighth},
		{Operator: "sink", Index: 0}: {OutputFrom: checkpoint.Offsets{"revenue": f.outFrom}},
	}}
	newer := &checkpoint.Completed{ID: 2, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{
		{Operator: "src", Index: 0}: {Offsets: f.quarter},
	}}
	readersReady := false
	r := NewRetention(RetentionConfig{Client: f.c, Inputs: f.inputTopic, Output: "revenue", Ledger: ledger, Path: path,
		Checkpoints: func(context.Context) ([]*checkpoint.Completed, error) {
			return []*checkpoint.Completed{older, newer}, nil
		},
		Readers: func() (checkpoint.Offsets, bool) { return nil, readersReady },
		Logf:    t.Logf})

	// A reader that has not started yet holds everything back.
	if err := r.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.logStart(t, orders.TopicOrders, 0); got != 0 {
		t.Fatalf("deleted below %d of orders/0 while a reader had read nothing", got)
	}
	readersReady = true
	if err := r.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{orders.TopicOrders, orders.TopicPayments} {
		for p, o := range f.eighth[topic] {
			if got := f.logStart(t, topic, p); got != o {
				t.Errorf("%s/%d starts at %d, want %d (the oldest checkpoint's offset)", topic, p, got, o)
			}
			if pos, _ := ledger.Position(topic, p); pos != o {
				t.Errorf("ledger at %d of %s/%d, want %d", pos, topic, p, o)
			}
		}
	}
	if got := f.logStart(t, "revenue", 0); got != f.outFrom[0] {
		t.Errorf("revenue/0 starts at %d, want %d (where the oldest checkpoint's transaction began)", got, f.outFrom[0])
	}
	lso, err := ListOffsets(f.cl, "revenue", []int32{0}, sarama.ReadCommitted)
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
	got, err := verify.VerifyOn(context.Background(), saved, Inputs{C: f.c, From: from}, "exactly-once", f.quarter, mustRead(t, f.c, saved.Positions["revenue"]))
	if err != nil {
		t.Fatal(err)
	}
	if got != want || want.Duplicates != 1 || want.Expected == 0 {
		t.Fatalf("from the ledger: %+v\nfrom everything: %+v", got, want)
	}
}

func mustRead(t *testing.T, c Client, from map[int32]int64) []runtime.OutputRecord {
	t.Helper()
	recs, err := ReadCommitted(context.Background(), c, "revenue", from)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// A read_committed read up to an offset hands over nothing at or past it,
// even when what lies just below it is aborted and the consumer's next
// record is beyond: the ledger reads the output in rounds, each from where
// the last ended, and counted such a record twice.
func TestReadCommittedStopsAtItsBound(t *testing.T) {
	_, c, cl := embeddedClient(t)
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
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
	commit(t, o, c0)
	if _, err := o.Prepare("t/1"); err != nil {
		t.Fatal(err)
	}
	if err := o.AbortLingering("t/", 1); err != nil {
		t.Fatal(err)
	}
	end, err := EndOffsets(cl, "revenue")
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
	commit(t, o, c2)
	recs, err := Read(context.Background(), c, "revenue", nil, end, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || string(recs[0].Value) != "a" {
		t.Fatalf("read below %v: %v, want only a", end, recs)
	}
}

// The terminal UI's live verifier, seeded with the ledger of a run whose
// records the broker deleted, says what it would have said had it read
// everything.
func TestLiveVerifierGoesOnFromTheLedger(t *testing.T) {
	f := newRetentionFixture(t)
	want, err := verify.Verify(context.Background(), Inputs{C: f.c}, expectOrders("paid-orders", 0), "exactly-once", f.quarter, mustRead(t, f.c, nil))
	if err != nil {
		t.Fatal(err)
	}
	ledger := mustLedger(expectOrders("paid-orders", 0))
	cp := &checkpoint.Completed{ID: 1, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{{Operator: "src"}: {Offsets: f.eighth}}}
	r := NewRetention(RetentionConfig{Client: f.c, Inputs: f.inputTopic, Output: "revenue", Ledger: ledger, Path: filepath.Join(t.TempDir(), "ledger"),
		Checkpoints: func(context.Context) ([]*checkpoint.Completed, error) { return []*checkpoint.Completed{cp}, nil }})
	if err := r.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.logStart(t, orders.TopicOrders, 0) == 0 || f.logStart(t, "revenue", 0) == 0 {
		t.Fatal("the round deleted nothing: the test would not show the seed at work")
	}
	v := NewLiveVerifier(LiveConfig{Client: f.c, Inputs: f.inputTopic, Output: "revenue", Expect: expectOrders("paid-orders", 0)})
	v.Seed(ledger)
	var committed fakeCommitted
	committed.set(1, f.quarter)
	run := startLive(t, v, committed.get, func(LiveStatus) error { return nil })
	s := waitFor(t, v, "the quarter checked", func(s LiveStatus) bool { return s.AsOf == 1 })
	run.stop()
	if s.Committed != want.Committed || s.Duplicates != want.Duplicates || s.Lost != want.Lost {
		t.Fatalf("seeded live verifier %+v, full oracle %+v", s, want)
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
	_, c := startOn(t, dir, 1)
	gen := orders.NewGenerator(3, 4_000, orders.GeneratorPartitions)
	topics := []string{orders.TopicOrders, orders.TopicPayments}
	all := bounds(gen, topics, 1, 1)
	writeInputs(t, c, gen, checkpoint.Offsets{}, all)
	cp := &checkpoint.Completed{ID: 1, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{{Operator: "src"}: {Offsets: all}}}
	r := NewRetention(RetentionConfig{Client: c, Inputs: map[string]string{orders.TopicOrders: orders.TopicOrders, orders.TopicPayments: orders.TopicPayments},
		Output: "revenue", Ledger: mustLedger(expectOrders("paid-orders", 0)), Path: filepath.Join(t.TempDir(), "ledger"),
		Checkpoints: func(context.Context) ([]*checkpoint.Completed, error) { return []*checkpoint.Completed{cp}, nil }, Logf: t.Logf})
	if err := r.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	killed := crashImage(t, dir)
	if err := checkLog(killed, LogNeeds{}); err != nil {
		t.Fatal(err)
	}
	_, c = startOn(t, killed, 1)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, topic := range topics {
		ends, err := EndOffsets(cl, topic)
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

// mustLedger is verify.New for an expectation known to be valid.
func mustLedger(e verify.Expect) *verify.Ledger {
	l, err := verify.New(e)
	if err != nil {
		panic(err)
	}
	return l
}

// A checkpoint that completes and commits while a round lists the
// checkpoints is not among them, and its restore reads the output again
// from where its pre-committed transaction began: the round must not
// delete that output. (It did when it listed the checkpoints before it
// read the output's last stable offset: the kill soak of unaligned runs
// then found the log short of the checkpoint at the next start.)
func TestRetentionKeepsTheOutputOfACheckpointCompletingDuringTheRound(t *testing.T) {
	_, c := startOn(t, t.TempDir(), 1)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	gen := orders.NewGenerator(3, 4_000, orders.GeneratorPartitions)
	topics := []string{orders.TopicOrders, orders.TopicPayments}
	all := bounds(gen, topics, 1, 1)
	writeInputs(t, c, gen, checkpoint.Offsets{}, all)
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	pending := writeTxn(t, o, "t/1", newSince(expectedBelow(t, gen, all, true), nil)[:50])
	_, from, _ := o.PositionOf(pending)
	// The first checkpoint: nothing pre-committed, so no output floor.
	first := &checkpoint.Completed{ID: 1, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{{Operator: "src"}: {Offsets: checkpoint.Offsets{}}}}
	r := NewRetention(RetentionConfig{Client: c, Inputs: map[string]string{orders.TopicOrders: orders.TopicOrders, orders.TopicPayments: orders.TopicPayments},
		Output: "revenue", Ledger: mustLedger(expectOrders("paid-orders", 0)), Path: filepath.Join(t.TempDir(), "ledger"),
		Checkpoints: func(context.Context) ([]*checkpoint.Completed, error) {
			// The second checkpoint completes and commits as the list is
			// read, too late to be in it.
			commit(t, o, pending)
			return []*checkpoint.Completed{first}, nil
		}, Logf: t.Logf})
	if err := r.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := &retentionFixture{cl: cl}
	if start := f.logStart(t, "revenue", 0); start > from[0] {
		t.Fatalf("the output now starts at %d; the checkpoint that completed during the round needs it from %d", start, from[0])
	}
}

// expectOrders is what the orders job's verify kind expects (its
// catalogue's relation), by order_id.
func expectOrders(kind string, ttl time.Duration) verify.Expect {
	rel := orders.Catalogue().Relations[kind]
	return verify.Expect{Kind: kind, Inputs: rel.Inputs, Joined: rel.Joined, StateTTL: ttl, ID: "order_id"}
}
