package runtime

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

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
	redoLog bool         // keep each transaction's records until it commits
	curLog  *redoLog     // the open transaction's, when redoLog
	arena   arena        // the records' bytes, when not redoLog
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
	// redo is the transaction's content, kept when the output may lose a
	// prepared transaction (nil otherwise).
	redo *redoLog
	n    int64 // how many records it holds (not kept in checkpoints)
}

// redoLog is a transaction's records as a checkpoint keeps them, each a
// key and a value, each a uvarint length and its bytes: the sink appends
// to it as it writes, so a checkpoint copies it as it is. The bytes are in
// chunks that are never grown (a record is never split between two), so
// that adding never copies what the log already holds.
type redoLog struct {
	chunks [][]byte
	size   int // bytes in all chunks
	n      int
}

// redoChunk is the size of a redo log's chunks.
const redoChunk = 1 << 20

// add appends a record and returns its key and value inside the log; they
// never change, later adds only append.
func (l *redoLog) add(key string, value []byte) (k, v []byte) {
	need := 2*binary.MaxVarintLen64 + len(key) + len(value)
	last := len(l.chunks) - 1
	if last < 0 || cap(l.chunks[last])-len(l.chunks[last]) < need {
		l.chunks = append(l.chunks, make([]byte, 0, max(redoChunk, need)))
		last++
	}
	b := l.chunks[last]
	start := len(b)
	b = binary.AppendUvarint(b, uint64(len(key)))
	ks := len(b)
	b = append(b, key...)
	b = binary.AppendUvarint(b, uint64(len(value)))
	vs := len(b)
	b = append(b, value...)
	l.chunks[last] = b
	l.size += len(b) - start
	l.n++
	return b[ks:vs:vs][:len(key)], b[vs:len(b):len(b)]
}

// records decodes the log.
func (l *redoLog) records() ([]OutputRecord, error) {
	out := make([]OutputRecord, 0, l.n)
	for _, b := range l.chunks {
		for len(b) > 0 {
			k, v, rest, ok := readRecord(b)
			if !ok {
				return nil, backend.ErrCorrupt
			}
			out = append(out, OutputRecord{Key: k, Value: v})
			b = rest
		}
	}
	if len(out) != l.n {
		return nil, backend.ErrCorrupt
	}
	return out, nil
}

// readRecord reads one record of a redo log: its key, its value and what
// follows.
func readRecord(b []byte) (k, v, rest []byte, ok bool) {
	k, rest, okk := backend.ReadBytes(b)
	v, rest, okv := backend.ReadBytes(rest)
	return k, v, rest, okk && okv
}

// arena holds the bytes of records written without a redo log, in chunks
// that are never reused: an output may keep a record until it is sent.
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

// sinkRedoName names the operator state entry of chunk i of txn's redo log.
func sinkRedoName(txn string, i int) string {
	return sinkStateName + "/redo/" + txn + "/" + strconv.Itoa(i)
}

// entries is the state as operator state entries: the transactions under
// sinkStateName, and each chunk of a redo log under sinkRedoName as it is.
// A prepared transaction's log never changes, so the checkpoint takes its
// chunks without a copy on the sink's goroutine (they are tens of
// megabytes a second).
func (st sinkState) entries() map[string][]byte {
	size := 2 * binary.MaxVarintLen64
	for _, t := range st.pending {
		size += 4*binary.MaxVarintLen64 + len(t.txn) + len(t.committable)
	}
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(st.owner))
	b = binary.AppendUvarint(b, uint64(st.nextSeq))
	m := map[string][]byte{}
	for _, t := range st.pending {
		b = binary.AppendUvarint(b, uint64(t.checkpoint))
		b = backend.AppendString(b, t.txn)
		b = backend.AppendString(b, t.committable)
		// 0: no records here; checkpoints written before the chunks were
		// entries of their own have n+1 and the n records inline.
		b = binary.AppendUvarint(b, 0)
		if t.redo != nil {
			for i, c := range t.redo.chunks {
				m[sinkRedoName(t.txn, i)] = c
			}
		}
	}
	m[sinkStateName] = b
	return m
}

// decodeSinkState reads a sink subtask's state: b is its sinkStateName
// entry, and redo finds the values of an entry of the same checkpoint by
// name (its redo chunks).
func decodeSinkState(b []byte, redo func(name string) [][]byte) (sinkState, error) {
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
		t := pendingTxn{checkpoint: int64(id), txn: name, committable: c}
		cnt, n := binary.Uvarint(rest)
		if n <= 0 {
			return st, backend.ErrCorrupt
		}
		rest = rest[n:]
		if cnt > 0 {
			// The log is copied: b is the stored checkpoint's.
			start := rest
			for i := uint64(1); i < cnt; i++ {
				var ok bool
				if _, _, rest, ok = readRecord(rest); !ok {
					return st, backend.ErrCorrupt
				}
			}
			used := start[:len(start)-len(rest)]
			t.redo = &redoLog{chunks: [][]byte{append([]byte(nil), used...)}, size: len(used), n: int(cnt - 1)}
		} else if redo != nil {
			var err error
			if t.redo, err = restoreRedo(t.txn, redo); err != nil {
				return st, err
			}
		}
		st.pending = append(st.pending, t)
		b = rest
	}
	return st, nil
}

// restoreRedo reads back txn's redo log from its chunk entries (nil when
// it has none), copied: the values are the stored checkpoint's.
func restoreRedo(txn string, redo func(name string) [][]byte) (*redoLog, error) {
	var l *redoLog
	for i := 0; ; i++ {
		vs := redo(sinkRedoName(txn, i))
		if len(vs) == 0 {
			return l, nil
		}
		if l == nil {
			l = &redoLog{}
		}
		c := append([]byte(nil), vs[0]...)
		for rest := c; len(rest) > 0; l.n++ {
			var ok bool
			if _, _, rest, ok = readRecord(rest); !ok {
				return nil, backend.ErrCorrupt
			}
		}
		l.chunks = append(l.chunks, c)
		l.size += len(c)
	}
}

func (s *sinkOp) Open(ctx *OperatorContext) error {
	s.ctx = ctx
	s.timed, _ = s.out.(TimedWriter)
	p, idx := ctx.Parallelism, ctx.Task.Index
	if l, ok := s.out.(FragileOutput); ok && l.PreparedMayBeLost() {
		s.redoLog = true
	}
	// This subtask recovers its own transactions and those of old subtasks
	// that no longer exist at this parallelism.
	next, newest, err := recoverSink(ctx.stop, s.out, s.txnPrefix, ctx.Task.Operator, ctx.RestoredState(sinkStateName), ctx.RestoredState,
		func(owner int) bool { return owner%p == idx }, []int{idx})
	if err != nil {
		return fmt.Errorf("%s: %w", ctx.Task, err)
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
	var key, val []byte
	if s.redoLog {
		if s.curLog == nil {
			s.curLog = &redoLog{}
		}
		key, val = s.curLog.add(c, s.scratch)
	} else {
		if hasKey {
			key = s.arena.copy([]byte(c))
		}
		val = s.arena.copy(s.scratch)
	}
	if !hasKey {
		key = nil
	}
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
			s.pending = append(s.pending, pendingTxn{checkpoint: id, txn: s.current, committable: c, redo: s.curLog, n: s.curN})
		}
		s.current, s.curLog, s.curN = "", nil, 0
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
		s.current, s.curLog, s.curN = "", nil, 0
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
