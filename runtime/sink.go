package runtime

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/faultline-dev/faultline/runtime/view"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/flatjson"
)

// sinkOp writes records to a transactional output with two-phase commit
// (Flink: TwoPhaseCommitSinkFunction / KafkaSink exactly-once): the records
// of one checkpoint epoch go into one transaction; the barrier pre-commits it
// and records its committable in the sink's state; the completion notice
// commits it. On restore, the committables of the restored checkpoint are
// committed and every later transaction the subtask opened is aborted.
//
// Transaction names are TxnPrefix/operator/subtask/N with N counting up; the
// next N is part of the state, so after a restore the names the failed
// attempt used are exactly those from the restored N on.
type sinkOp struct {
	out       TxnOutput
	timed     TimedWriter // out, when it takes timestamps
	topic     string
	txnPrefix string
	ctx       *OperatorContext
	progress  *commitProgress

	nextSeq int64
	arena   arena        // the records' bytes, until the output sent them
	scratch []byte       // a record's value while it is encoded
	curN    int64        // records written into the open transaction
	current string       // open transaction, "" until the first record
	pending []pendingTxn // pre-committed, waiting for their checkpoint
	final   []string     // prepared at the end of input, for the job's final commit

	// anchor is the committable of the last transaction this subtask
	// committed: the output after where it began holds everything the
	// subtask committed since (see replay).
	anchor string
	// key names the field whose value keys each record written ("": no
	// key).
	key string
	skipSet
}

// skipSet is what a sink restored past a damaged checkpoint skips: skip
// holds the ids (the job's id field, which ids reads) the output already
// holds that the job is emitting again; each is dropped once, and the set
// goes when the sources pass skipUntil (the damaged checkpoint's offsets;
// nil: when the set is empty).
type skipSet struct {
	ids       flatjson.Field
	skip      map[string]struct{}
	skipUntil checkpoint.Offsets
	skipped   *atomic.Int64 // shared by the job's sinks, for the report
	obs       *Observer     // says what the skip set holds (may be nil)
}

// Names of the sink's other operator state entries, each per owner
// subtask: its anchor, and what it still skips.
const (
	sinkAnchorName = sinkStateName + "/anchor/"
	sinkSkipName   = sinkStateName + "/skip/"
)

type pendingTxn struct {
	checkpoint  int64
	txn         string // the transaction's name
	committable string
	n           int64 // how many records it holds (not kept in checkpoints)
}

// readRecord reads one record of a redo log (checkpoints taken before the
// sink read a lost transaction back from the output kept one): its key,
// its value and what follows.
func readRecord(b []byte) (k, v, rest []byte, ok bool) {
	k, rest, okk := backend.ReadBytes(b)
	v, rest, okv := backend.ReadBytes(rest)
	return k, v, rest, okk && okv
}

// arena holds the bytes of the records written, in chunks that are never
// reused: an output may keep a record until it is sent.
type arena []byte

func (a *arena) copy(b []byte) []byte {
	if cap(*a)-len(*a) < len(b) {
		*a = make([]byte, 0, max(64<<10, len(b)))
	}
	s := len(*a)
	*a = append(*a, b...)
	return (*a)[s:len(*a):len(*a)]
}

const sinkStateName = "sink-transactions"

// txnPrefix names the transactions of one sink subtask. The separator is a
// character operator names cannot contain, so no prefix is another's.
func txnPrefix(prefix, op string, index int) string {
	if prefix == "" {
		prefix = "faultline"
	}
	return fmt.Sprintf("%s/%s/%d/", prefix, op, index)
}

// sinkState is what a sink subtask keeps in a checkpoint.
type sinkState struct {
	owner   int
	nextSeq int64
	pending []pendingTxn
}

// entries is the state as operator state entries: the transactions under
// sinkStateName. A prepared transaction's records are not kept: should the
// output lose it, the sink reads them back from the output (see redoLost).
func (st sinkState) entries() map[string][]byte {
	size := 2 * binary.MaxVarintLen64
	for _, t := range st.pending {
		size += 4*binary.MaxVarintLen64 + len(t.txn) + len(t.committable)
	}
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(st.owner))
	b = binary.AppendUvarint(b, uint64(st.nextSeq))
	for _, t := range st.pending {
		b = binary.AppendUvarint(b, uint64(t.checkpoint))
		b = backend.AppendString(b, t.txn)
		b = backend.AppendString(b, t.committable)
		// 0: no records here; checkpoints of older versions have n+1 and
		// the n records inline, or 0 and the records in entries of their
		// own, which are read past.
		b = binary.AppendUvarint(b, 0)
	}
	return map[string][]byte{sinkStateName: b}
}

// decodeSinkState reads a sink subtask's state: b is its sinkStateName
// entry. The records older versions kept of each transaction are read
// past: the output has them.
func decodeSinkState(b []byte) (sinkState, error) {
	var st sinkState
	owner, n := binary.Uvarint(b)
	if n <= 0 {
		return st, backend.ErrCorrupt
	}
	b = b[n:]
	next, n := binary.Uvarint(b)
	if n <= 0 {
		return st, backend.ErrCorrupt
	}
	b = b[n:]
	st.owner, st.nextSeq = int(owner), int64(next)
	for len(b) > 0 {
		id, n := binary.Uvarint(b)
		if n <= 0 {
			return st, backend.ErrCorrupt
		}
		name, rest, ok1 := readString(b[n:])
		c, rest, ok2 := readString(rest)
		if !ok1 || !ok2 {
			return st, backend.ErrCorrupt
		}
		cnt, n := binary.Uvarint(rest)
		if n <= 0 {
			return st, backend.ErrCorrupt
		}
		rest = rest[n:]
		for i := uint64(1); i < cnt; i++ {
			var ok bool
			if _, _, rest, ok = readRecord(rest); !ok {
				return st, backend.ErrCorrupt
			}
		}
		st.pending = append(st.pending, pendingTxn{checkpoint: int64(id), txn: name, committable: c})
		b = rest
	}
	return st, nil
}

func (s *sinkOp) Open(ctx *OperatorContext) error {
	s.ctx = ctx
	s.timed, _ = s.out.(TimedWriter)
	p, idx := ctx.Parallelism, ctx.Task.Index
	// This subtask recovers its own transactions and those of old subtasks
	// that no longer exist at this parallelism.
	next, newest, rewritten, err := recoverSink(ctx.stop, s.out, s.txnPrefix, ctx.Task.Operator, ctx.RestoredState(sinkStateName),
		func(owner int) bool { return owner%p == idx }, []int{idx})
	if err != nil {
		return fmt.Errorf("%s: %w", ctx.Task, err)
	}
	for _, r := range rewritten {
		s.obs.Emit(view.TxnRewritten{Task: ctx.Task.String(), Checkpoint: r.checkpoint, Records: r.records})
	}
	s.nextSeq = next[idx]
	if !ctx.Restored && ctx.Replay != nil {
		// No checkpoint to restore over output earlier runs committed.
		if err := s.restoreSkip(ctx); err != nil {
			return fmt.Errorf("%s: %w", ctx.Task, err)
		}
	}
	if ctx.Restored {
		s.progress.committed(ctx.Task.String(), ctx.RestoredFrom)
		if err := s.restoreSkip(ctx); err != nil {
			return fmt.Errorf("%s: %w", ctx.Task, err)
		}
		// What recovery just committed is now the last transaction this
		// subtask committed: a later fallback to a checkpoint taken
		// before this subtask commits again reads the output from there.
		if newest != "" {
			s.anchor = newest
		}
	}
	return nil
}

func (s *sinkOp) txn() string {
	if s.current == "" {
		s.current = txnPrefix(s.txnPrefix, s.ctx.Task.Operator, s.ctx.Task.Index) + strconv.FormatInt(s.nextSeq, 10)
		s.nextSeq++
	}
	return s.current
}

func (s *sinkOp) Process(rec *Record, out Collector) error {
	v, ok := rec.Value.(JSONAppender)
	if !ok {
		return unrecoverable(fmt.Errorf("sink %s: cannot write a %T", s.topic, rec.Value))
	}
	if len(s.skip) > 0 && s.skipping(rec.Value) {
		return nil
	}
	s.scratch = v.AppendJSON(s.scratch[:0])
	var c string
	hasKey := false
	if f, ok := rec.Value.(Fielder); ok {
		c, hasKey = f.Field(s.key)
	}
	var key []byte
	if hasKey {
		key = s.arena.copy([]byte(c))
	}
	val := s.arena.copy(s.scratch)
	s.curN++
	if s.timed != nil {
		return s.timed.WriteAt(s.txn(), key, val, s.ctx.BatchStart())
	}
	return s.out.Write(s.txn(), key, val)
}

// SnapshotState pre-commits the open transaction as part of checkpoint id.
func (s *sinkOp) SnapshotState(id int64) (map[string][]byte, error) {
	if s.current != "" {
		c, err := s.out.Prepare(s.current)
		if err != nil {
			return nil, fmt.Errorf("pre-commit %s: %w", s.current, err)
		}
		if c != "" {
			s.pending = append(s.pending, pendingTxn{checkpoint: id, txn: s.current, committable: c, n: s.curN})
		}
		s.current, s.curN = "", 0
	}
	st := sinkState{owner: s.ctx.Task.Index, nextSeq: s.nextSeq, pending: s.pending}
	entries := st.entries()
	owner := strconv.Itoa(s.ctx.Task.Index)
	if s.anchor != "" {
		entries[sinkAnchorName+owner] = []byte(s.anchor)
	}
	if s.skip != nil {
		ss := skipState{Until: s.skipUntil, IDs: make([]string, 0, len(s.skip))}
		for id := range s.skip {
			ss.IDs = append(ss.IDs, id)
		}
		b, err := json.Marshal(ss)
		if err != nil {
			return nil, err
		}
		entries[sinkSkipName+owner] = b
	}
	return entries, nil
}

// OutputFrom implements OutputPositioner: the lowest offset of each output
// partition at which the pending transactions may have written, as the
// output tells from their committables (nothing when it cannot).
func (s *sinkOp) OutputFrom() checkpoint.Offsets {
	p, ok := s.out.(PositionReader)
	if !ok || len(s.pending) == 0 && s.anchor == "" {
		return nil
	}
	out := checkpoint.Offsets{}
	committables := []string{s.anchor}
	for _, t := range s.pending {
		committables = append(committables, t.committable)
	}
	for _, c := range committables {
		if topic, from, ok := p.PositionOf(c); ok {
			out.Lower(topic, from)
		}
	}
	return out
}

// NotifyCheckpointComplete commits every transaction up to checkpoint id.
func (s *sinkOp) NotifyCheckpointComplete(id int64) error {
	i := 0
	for ; i < len(s.pending) && s.pending[i].checkpoint <= id; i++ {
		if err := s.out.Commit(s.pending[i].committable); err != nil {
			return fmt.Errorf("commit transaction of checkpoint %d: %w", s.pending[i].checkpoint, err)
		}
		s.anchor = s.pending[i].committable
	}
	s.pending = append(s.pending[:0], s.pending[i:]...)
	s.progress.committed(s.ctx.Task.String(), id)
	s.dropSkipPast(id)
	return nil
}

// EndInput runs when every input ended. The transactions pre-committed so
// far belong to completed checkpoints (sources end only after their last
// checkpoint completed) and are committed. What came after the last barrier
// (everything, when checkpointing is off) is only prepared: the job commits
// it once every task has finished, so that a failure elsewhere before the
// end cannot leave it committed and then written again.
func (s *sinkOp) EndInput(Collector) error {
	for _, p := range s.pending {
		if err := s.out.Commit(p.committable); err != nil {
			return err
		}
	}
	s.pending = nil
	if s.current != "" {
		c, err := s.out.Prepare(s.current)
		if err != nil {
			return err
		}
		if c != "" {
			s.final = append(s.final, c)
		}
		s.current, s.curN = "", 0
	}
	return nil
}

// rollback implements RollbackCounter: restarted alone from checkpoint
// from, the sink aborts every transaction it opened after that checkpoint
// (the open one, and those pre-committed for checkpoints that never
// completed), and their records are not written again.
func (s *sinkOp) Rollback(from int64, _ KeyedReader) (int64, any) {
	lost := s.curN
	for _, p := range s.pending {
		if p.checkpoint > from {
			lost += p.n
		}
	}
	return lost, nil
}

// commitProgress records, per sink subtask, the newest checkpoint whose
// transactions it has committed, for the live verification.
type commitProgress struct {
	mu   sync.Mutex
	done map[string]int64
}

func (p *commitProgress) committed(task string, id int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.done == nil {
		p.done = map[string]int64{}
	}
	p.done[task] = id
	p.mu.Unlock()
}

// FinalCommittables are the transactions EndInput prepared for the job's
// final commit.
func (s *sinkOp) FinalCommittables() []string { return s.final }

func (s *sinkOp) Close() error { return nil }

// readString reads what backend.AppendString wrote off the front of b.
func readString(b []byte) (string, []byte, bool) {
	s, rest, ok := backend.ReadBytes(b)
	return string(s), rest, ok
}
