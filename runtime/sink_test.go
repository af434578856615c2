package runtime

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/flatjson"
)

// losingOutput is a MemoryOutput whose prepared transactions can vanish, as
// Kafka's do when the broker dies with them open or they time out; their
// records stay readable, as in Kafka's log.
type losingOutput struct {
	*MemoryOutput
	lost     map[string]bool           // committables the "broker" aborted
	prepared map[string][]OutputRecord // each committable's records, as the log keeps them
	open     map[string][]OutputRecord // the records of each open transaction
	gone     map[string]bool           // committables whose records the log no longer has
}

func newLosingOutput() *losingOutput {
	return &losingOutput{MemoryOutput: NewMemoryOutput(), lost: map[string]bool{}, prepared: map[string][]OutputRecord{},
		open: map[string][]OutputRecord{}, gone: map[string]bool{}}
}

func (l *losingOutput) Write(txn string, key, value []byte) error {
	l.open[txn] = append(l.open[txn], OutputRecord{Key: key, Value: value})
	return l.MemoryOutput.Write(txn, key, value)
}

func (l *losingOutput) WriteAt(txn string, key, value []byte, _ time.Time) error {
	return l.Write(txn, key, value)
}

func (l *losingOutput) Prepare(txn string) (string, error) {
	c, err := l.MemoryOutput.Prepare(txn)
	if c != "" {
		l.prepared[c] = l.open[txn]
	}
	delete(l.open, txn)
	return c, err
}

func (l *losingOutput) Commit(c string) error {
	if l.lost[c] {
		return fmt.Errorf("commit %s: %w", c, ErrTxnLost)
	}
	return l.MemoryOutput.Commit(c)
}

func (l *losingOutput) Prepared(_ context.Context, c string) ([]OutputRecord, error) {
	if l.gone[c] {
		return nil, errors.New("the log no longer holds the transaction")
	}
	return l.prepared[c], nil
}

func (l *losingOutput) Missing(_ context.Context, _ string, recs []OutputRecord) ([]OutputRecord, error) {
	seen := map[string]int{}
	for _, x := range l.MemoryOutput.Committed() {
		seen[string(x.Key)+"|"+string(x.Value)]++
	}
	var missing []OutputRecord
	for _, r := range recs {
		if k := string(r.Key) + "|" + string(r.Value); seen[k] > 0 {
			seen[k]--
		} else {
			missing = append(missing, r)
		}
	}
	return missing, nil
}

// commitOrRedo is recoverSink's handling of one pre-committed transaction
// when nothing else lingers: commit it, or write again what a lost one
// left out.
func commitOrRedo(out TxnOutput, t pendingTxn) error {
	err := out.Commit(t.committable)
	if !redoable(out, err) {
		return err
	}
	_, err = redoLost(nil, out, t, err)
	return err
}

func TestCommitOrRedo(t *testing.T) {
	recs := []OutputRecord{{Value: []byte(`{"order_id":"o-1"}`)}, {Value: []byte(`{"order_id":"o-2"}`)}}
	prepare := func(out *losingOutput, name string) pendingTxn {
		for _, r := range recs {
			out.Write(name, r.Key, r.Value)
		}
		c, _ := out.Prepare(name)
		return pendingTxn{checkpoint: 7, txn: name, committable: c}
	}
	t.Run("commits normally", func(t *testing.T) {
		out := newLosingOutput()
		p := prepare(out, "s/0/3")
		if err := commitOrRedo(out, p); err != nil || out.Len() != 2 {
			t.Fatalf("%v, %d committed", err, out.Len())
		}
	})
	t.Run("writes a lost transaction again, once", func(t *testing.T) {
		out := newLosingOutput()
		p := prepare(out, "s/0/3")
		out.lost[p.committable] = true
		if err := commitOrRedo(out, p); err != nil || out.Len() != 2 {
			t.Fatalf("redo: %v, %d committed", err, out.Len())
		}
		// A second recovery from the same checkpoint finds the records.
		if err := commitOrRedo(out, p); err != nil || out.Len() != 2 {
			t.Fatalf("second recovery: %v, %d committed, want the 2 once", err, out.Len())
		}
	})
	t.Run("writes only what a partial commit left out", func(t *testing.T) {
		out := newLosingOutput()
		p := prepare(out, "s/0/3")
		out.lost[p.committable] = true
		// The commit reached the partition of the first record only.
		out.Write("other", recs[0].Key, recs[0].Value)
		c, _ := out.Prepare("other")
		out.MemoryOutput.Commit(c)
		if err := commitOrRedo(out, p); err != nil {
			t.Fatal(err)
		}
		got := out.Committed()
		if len(got) != 2 || string(got[0].Value) != string(recs[0].Value) || string(got[1].Value) != string(recs[1].Value) {
			t.Fatalf("committed %v, want each record once", got)
		}
	})
	t.Run("a transaction the log no longer holds is an error", func(t *testing.T) {
		out := newLosingOutput()
		p := prepare(out, "s/0/3")
		out.lost[p.committable] = true
		out.gone[p.committable] = true
		if err := commitOrRedo(out, p); !errors.Is(err, ErrTxnLost) || out.Len() != 0 {
			t.Fatalf("err = %v, %d committed, want ErrTxnLost and nothing", err, out.Len())
		}
	})
}

// A sink's state names its pre-committed transactions and keeps none of
// their records: the output has them.
func TestSinkStateKeepsNoRecords(t *testing.T) {
	st := sinkState{owner: 1, nextSeq: 9, pending: []pendingTxn{
		{checkpoint: 4, txn: "p/1/7", committable: "p/1/7#1", n: 100_000},
		{checkpoint: 5, txn: "p/1/8", committable: "p/1/8#1"},
	}}
	entries := st.entries()
	if len(entries) != 1 || len(entries[sinkStateName]) > 64 {
		t.Fatalf("entries %v", entries)
	}
	got, err := decodeSinkState(entries[sinkStateName])
	if err != nil {
		t.Fatal(err)
	}
	if got.owner != 1 || got.nextSeq != 9 || len(got.pending) != 2 || got.pending[0].txn != "p/1/7" ||
		got.pending[1].committable != "p/1/8#1" || got.pending[0].checkpoint != 4 {
		t.Fatalf("round trip: %+v", got)
	}
	if _, err := decodeSinkState(entries[sinkStateName][:len(entries[sinkStateName])-3]); err == nil {
		t.Fatal("a truncated sink state decoded")
	}
}

// Checkpoints of older versions hold each transaction's records inline,
// behind it; they still restore, the records read past.
func TestSinkStateReadsPastInlineRecords(t *testing.T) {
	var recs []byte
	for _, r := range [][2]string{{"c-1", "v1"}, {"", "v2"}} {
		recs = backend.AppendString(recs, r[0])
		recs = backend.AppendString(recs, r[1])
	}
	b := binary.AppendUvarint(nil, 0) // owner
	b = binary.AppendUvarint(b, 3)    // next sequence number
	for _, txn := range []string{"p/0/2", "p/0/3"} {
		b = binary.AppendUvarint(b, 2) // checkpoint
		b = backend.AppendString(b, txn)
		b = backend.AppendString(b, txn+"#1")
		b = binary.AppendUvarint(b, 2+1)
		b = append(b, recs...)
	}
	st, err := decodeSinkState(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.pending) != 2 || st.pending[1].txn != "p/0/3" || st.nextSeq != 3 {
		t.Fatalf("%+v", st)
	}
	if _, err := decodeSinkState(b[:len(b)-2]); err == nil {
		t.Fatal("a truncated inline record decoded")
	}
}

// stampingOutput is a MemoryOutput that takes timestamps, as the Kafka
// output does, and keeps them in the order the records came.
type stampingOutput struct {
	*MemoryOutput
	stamps []time.Time
}

func (s *stampingOutput) WriteAt(txn string, key, value []byte, at time.Time) error {
	s.stamps = append(s.stamps, at)
	return s.MemoryOutput.Write(txn, key, value)
}

// The sink stamps each record with the time its subtask began the batch
// holding it: a time within the run, never earlier than the record before.
func TestSinkStampsRecordsWithTheirBatchStart(t *testing.T) {
	gen := newTestInput(3, 20_000, 0)
	env := &Env{Sources: map[string]Source{}, Outputs: map[string]TxnOutput{}}
	for _, topic := range []string{topicOrders, topicPayments} {
		s, err := gen.Source(topic)
		if err != nil {
			t.Fatal(err)
		}
		env.Sources[topic] = s
	}
	out := &stampingOutput{MemoryOutput: NewMemoryOutput()}
	env.Outputs["revenue"] = out
	j, err := New(Config{Types: testJob.Types, Job: testJob.Spec(), Env: env, Checkpoint: checkpoint.Config{Interval: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	res, err := j.Run(context.Background(), RunOptions{})
	after := time.Now()
	if err != nil || res.Status != JobFinished {
		t.Fatalf("run: %v, %v", err, res.Status)
	}
	if len(out.stamps) == 0 || len(out.stamps) != out.Len() {
		t.Fatalf("%d stamps for %d committed records", len(out.stamps), out.Len())
	}
	distinct := map[time.Time]bool{}
	for i, at := range out.stamps {
		distinct[at] = true
		if at.Before(before) || at.After(after) {
			t.Fatalf("record %d stamped %v, outside the run %v–%v", i, at, before, after)
		}
		if i > 0 && at.Before(out.stamps[i-1]) {
			t.Fatalf("record %d stamped %v, before the record ahead of it (%v)", i, at, out.stamps[i-1])
		}
	}
	// The records of a batch share its time: no clock read per record.
	if len(distinct) > len(out.stamps)/2 {
		t.Fatalf("%d distinct stamps for %d records", len(distinct), len(out.stamps))
	}
	t.Logf("%d distinct stamps for %d records", len(distinct), len(out.stamps))
}

// A sink restored from a checkpoint whose pre-committed transaction the
// output lost writes that transaction's records again, read back from the
// output, once.
func TestSinkRedoesALostTransactionFromItsCheckpoint(t *testing.T) {
	out := newLosingOutput()
	task := checkpoint.TaskID{Operator: "sink", Index: 0}
	s1 := &sinkOp{skipSet: skipSet{ids: flatjson.MustField("order_id")}, key: "customer", out: out, topic: "revenue", txnPrefix: "p"}
	if err := s1.Open(&OperatorContext{Task: task, Parallelism: 1, restored: map[string][][]byte{}}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 3 {
		r := &testRow{OrderID: fmt.Sprintf("o-%d", i), Customer: "c-1", Total: int64(100 * (i + 1))}
		want = append(want, string(r.AppendJSON(nil)))
		if err := s1.Process(&Record{Value: r}, nil); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := s1.SnapshotState(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(s1.pending) != 1 {
		t.Fatalf("%d transactions pre-committed, want 1", len(s1.pending))
	}
	out.lost[s1.pending[0].committable] = true // the broker died with it open
	restored := map[string][][]byte{}
	for name, v := range entries {
		restored[name] = [][]byte{append([]byte(nil), v...)} // as a store gives it back
	}
	obs := NewObserver(nil, 16)
	s2 := &sinkOp{skipSet: skipSet{ids: flatjson.MustField("order_id"), obs: obs}, key: "customer", out: out, topic: "revenue", txnPrefix: "p"}
	if err := s2.Open(&OperatorContext{Task: task, Parallelism: 1, Restored: true, RestoredFrom: 1, restored: restored}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range out.Committed() {
		got = append(got, string(r.Value))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed %q, want %q once each", got, want)
	}
	// The recovery says what it wrote again.
	obs.Close()
	var said []view.Event
	for e := range obs.Events() {
		said = append(said, e.Event)
	}
	if w := (view.TxnRewritten{Task: "sink/0", Checkpoint: 1, Records: 3}); len(said) != 1 || said[0] != w {
		t.Fatalf("events %+v, want one %+v", said, w)
	}
}

// completedAt is a checkpoint whose source subtask read up to offsets, with
// the records of order ids inFlight in flight.
func completedAt(id int64, offsets checkpoint.Offsets, inFlight ...string) *checkpoint.Completed {
	return &checkpoint.Completed{ID: id, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{
		{Operator: "orders", Index: 0}: {Offsets: offsets},
		{Operator: "join", Index: 0}:   {InFlightIDs: inFlight},
	}}
}

// The skip set a fallback made survives a checkpoint taken during the
// replay (every subtask restored from it gets it), and goes once a
// completed checkpoint's sources are past the damaged one's offsets and
// none of the records it skips is still in flight.
func TestSinkSkipSetLastsUntilTheReplayIsPast(t *testing.T) {
	until := checkpoint.Offsets{"orders": {0: 100, 1: 50}}
	at := map[int64]*checkpoint.Completed{
		7: completedAt(7, checkpoint.Offsets{"orders": {0: 120, 1: 40}}),
		// Past the damaged offsets, but an unaligned barrier overtook the
		// record that emits o-000002 again: it reaches the sink later.
		8: completedAt(8, checkpoint.Offsets{"orders": {0: 120, 1: 50}}, "o-000002", "o-000009"),
		9: completedAt(9, checkpoint.Offsets{"orders": {0: 130, 1: 60}}, "o-000009"),
	}
	ctx := &OperatorContext{Task: checkpoint.TaskID{Operator: "sink", Index: 0}, Parallelism: 1,
		Completed: func(id int64) (*checkpoint.Completed, bool) { c, ok := at[id]; return c, ok }}
	s := &sinkOp{skipSet: skipSet{ids: flatjson.MustField("order_id"), skip: map[string]struct{}{"o-000001": {}, "o-000002": {}}, skipUntil: until}, key: "customer", out: NewMemoryOutput(), ctx: ctx}
	entries, err := s.SnapshotState(6)
	if err != nil {
		t.Fatal(err)
	}
	restored := map[string][][]byte{}
	for name, v := range entries {
		restored[name] = append(restored[name], v)
	}
	r := &sinkOp{skipSet: skipSet{ids: flatjson.MustField("order_id")}, key: "customer", out: NewMemoryOutput(), ctx: ctx}
	rctx := *ctx
	rctx.Restored, rctx.restored = true, restored
	if err := r.restoreSkip(&rctx); err != nil {
		t.Fatal(err)
	}
	if len(r.skip) != 2 || !covers(until, r.skipUntil) {
		t.Fatalf("restored skip set %v until %v", r.skip, r.skipUntil)
	}
	if !r.skipping(&testRow{OrderID: "o-000001"}) || r.skipping(&testRow{OrderID: "o-000001"}) {
		t.Fatal("an id in the set is skipped exactly once")
	}
	if err := r.NotifyCheckpointComplete(7); err != nil || r.skip == nil {
		t.Fatalf("checkpoint 7 is not past partition 1 yet: %v, set %v", err, r.skip)
	}
	if err := r.NotifyCheckpointComplete(8); err != nil || r.skip == nil {
		t.Fatalf("checkpoint 8 holds a skipped record in flight: %v, set %v", err, r.skip)
	}
	if err := r.NotifyCheckpointComplete(9); err != nil || r.skip != nil {
		t.Fatalf("checkpoint 9 is past the damaged one with nothing skipped in flight: %v, set %v", err, r.skip)
	}
}

// positionedOutput is a MemoryOutput that can read its committed output
// from a committable's position on, as the Kafka output can: a
// transaction's position is the committed length when it was prepared.
type positionedOutput struct {
	*MemoryOutput
	at map[string]int64
}

func (p *positionedOutput) Prepare(txn string) (string, error) {
	c, err := p.MemoryOutput.Prepare(txn)
	if c != "" {
		p.at[c] = int64(p.Len())
	}
	return c, err
}

func (p *positionedOutput) PositionOf(c string) (string, map[int32]int64, bool) {
	at, ok := p.at[c]
	return "revenue", map[int32]int64{0: at}, ok
}

func (p *positionedOutput) CommittedFrom(_ context.Context, from map[int32]int64) ([]OutputRecord, error) {
	return p.Committed()[from[0]:], nil
}

// sinkHarness is a sink subtask over out, opened on a restored state (nil:
// none) with Replay replay, and what a checkpoint of it does.
type sinkHarness struct {
	t   *testing.T
	out *positionedOutput
}

func (h sinkHarness) rec(id string) *Record {
	return &Record{Value: &testRow{OrderID: id, Customer: "c-1"}}
}

// open opens a sink subtask restored from restored (nil: nothing).
func (h sinkHarness) open(restored map[string][][]byte, from int64, replay checkpoint.Offsets) *sinkOp {
	h.t.Helper()
	s := &sinkOp{skipSet: skipSet{ids: flatjson.MustField("order_id")}, key: "customer", out: h.out, topic: "revenue", txnPrefix: "p"}
	ctx := &OperatorContext{Task: checkpoint.TaskID{Operator: "sink", Index: 0}, Parallelism: 1, Restored: restored != nil,
		RestoredFrom: from, Replay: replay, restored: restored, Completed: func(int64) (*checkpoint.Completed, bool) { return nil, false }}
	if restored == nil {
		ctx.restored = map[string][][]byte{}
	}
	if err := s.Open(ctx); err != nil {
		h.t.Fatal(err)
	}
	return s
}

// checkpoint has s write ids, snapshot as checkpoint id and commit it; it
// returns the state it snapshotted, as a restore reads it.
func (h sinkHarness) checkpoint(s *sinkOp, id int64, ids ...string) map[string][][]byte {
	h.t.Helper()
	for _, o := range ids {
		if err := s.Process(h.rec(o), nil); err != nil {
			h.t.Fatal(err)
		}
	}
	entries, err := s.SnapshotState(id)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := s.NotifyCheckpointComplete(id); err != nil {
		h.t.Fatal(err)
	}
	restored := map[string][][]byte{}
	for name, v := range entries {
		restored[name] = [][]byte{append([]byte(nil), v...)}
	}
	return restored
}

// once fails unless the committed output holds each of ids exactly once.
func (h sinkHarness) once(ids ...string) {
	h.t.Helper()
	count := map[string]int{}
	for _, r := range h.out.Committed() {
		id, _ := flatjson.MustField("order_id").Of(r.Value)
		count[string(id)]++
	}
	for _, o := range ids {
		if count[o] != 1 {
			h.t.Fatalf("committed %v, want each of %v once", count, ids)
		}
	}
}

// A fallback to a checkpoint taken before the sink first committed (its
// state names no position in the output), and a start with no checkpoint
// at all over committed output, skip everything the output holds.
func TestSinkFallbackBeforeItsFirstCommitSkipsTheWholeOutput(t *testing.T) {
	h := sinkHarness{t: t, out: &positionedOutput{MemoryOutput: NewMemoryOutput(), at: map[string]int64{}}}
	s1 := h.open(nil, 0, nil)
	cp1 := h.checkpoint(s1, 1)        // before any output
	h.checkpoint(s1, 2, "o-1", "o-2") // deleted: the job falls back to 1

	s2 := h.open(cp1, 1, checkpoint.Offsets{})
	h.checkpoint(s2, 3, "o-1", "o-2", "o-3") // deleted too, and 1 with it

	s3 := h.open(nil, 0, checkpoint.Offsets{})
	h.checkpoint(s3, 4, "o-1", "o-2", "o-3", "o-4")
	h.once("o-1", "o-2", "o-3", "o-4")
}

// A second fallback past a damaged checkpoint, restored from a checkpoint
// taken while the sink still skipped after a first one, holds what the
// newly damaged checkpoint committed as well as what was still skipped:
// nothing is written twice.
func TestSinkSecondFallbackSkipsBoth(t *testing.T) {
	h := sinkHarness{t: t, out: &positionedOutput{MemoryOutput: NewMemoryOutput(), at: map[string]int64{}}}
	s1 := h.open(nil, 0, nil)
	cp1 := h.checkpoint(s1, 1, "o-1", "o-2")
	h.checkpoint(s1, 2, "o-3") // damaged: the job falls back to 1

	s2 := h.open(cp1, 1, checkpoint.Offsets{"orders": {0: 30}})
	if _, ok := s2.skip["o-3"]; !ok {
		t.Fatalf("first fallback skips %v, want o-3 among them", s2.skip)
	}
	cp3 := h.checkpoint(s2, 3) // taken while o-3 is still to come again
	h.checkpoint(s2, 4, "o-4") // damaged too: the job falls back to 3

	s3 := h.open(cp3, 3, checkpoint.Offsets{"orders": {0: 40}})
	h.checkpoint(s3, 5, "o-3", "o-4", "o-5")
	h.once("o-1", "o-2", "o-3", "o-4", "o-5")
}

// testRow is a record a sink writes, as a job's operators emit them: its
// fields by name (Fielder) and its JSON (JSONAppender).
type testRow struct {
	OrderID, Customer string
	Total             int64
}

func (r *testRow) Field(name string) (string, bool) {
	switch name {
	case "order_id":
		return r.OrderID, true
	case "customer":
		return r.Customer, true
	}
	return "", false
}

func (r *testRow) AppendJSON(dst []byte) []byte {
	return fmt.Appendf(dst, `{"order_id":%q,"customer":%q,"total_cents":%d}`, r.OrderID, r.Customer, r.Total)
}
