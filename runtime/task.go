package runtime

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"faultline/backend"
	"faultline/checkpoint"
	"faultline/restart"
	"faultline/runtime/barrier"
	"faultline/runtime/spec"
	"faultline/runtime/view"
)

// TaskMetrics are one subtask's counters. They live as long as the job, not
// an attempt, and are sampled by the UI with atomic loads.
type TaskMetrics struct {
	RecordsIn  atomic.Int64 // records processed (sources: records read)
	RecordsOut atomic.Int64 // records emitted
	// IdleNanos is the time spent waiting for input (or held by the
	// tempo); BackPressuredNanos the time spent blocked sending to a full
	// output channel. The rest of the wall time is busy (Flink:
	// idleTimeMsPerSecond, backPressuredTimeMsPerSecond, busyTimeMsPerSecond).
	IdleNanos          atomic.Int64
	BackPressuredNanos atomic.Int64
	// Deploys counts how many times the subtask was deployed.
	Deploys atomic.Int64
	// offsets are a source subtask's next offsets per partition, published
	// after each read (map[int32]int64, never changed once stored).
	offsets atomic.Value
	status  atomic.Value // TaskStatus
}

// Offsets are, for a source subtask, the next offset it reads in each of
// its partitions (nil for other subtasks and before the first read).
func (m *TaskMetrics) Offsets() map[int32]int64 {
	o, _ := m.offsets.Load().(map[int32]int64)
	return o
}

// Status is the subtask's current status.
func (m *TaskMetrics) Status() TaskStatus {
	if s, ok := m.status.Load().(TaskStatus); ok {
		return s
	}
	return TaskCreated
}

// TaskStatus is a subtask's life-cycle state (Flink: ExecutionState).
type TaskStatus string

// Task statuses, named as Flink names them.
const (
	TaskCreated   TaskStatus = "CREATED"
	TaskDeploying TaskStatus = "DEPLOYING"
	TaskRunning   TaskStatus = "RUNNING"
	TaskFinished  TaskStatus = "FINISHED"
	TaskCanceling TaskStatus = "CANCELING"
	TaskCanceled  TaskStatus = "CANCELED"
	TaskFailed    TaskStatus = "FAILED"
)

type inputChannel struct {
	from    string // upstream subtask, e.g. "parse-orders/1"
	ch      *Channel
	logical int // 0: first input of the operator, 1: second
	cur     []Element
	pos     int
	ended   bool
	blocked atomic.Bool // mirrors the barrier handler, for the UI
}

// taskEventKind is what a task tells the job master.
type taskEventKind int

const (
	evFailed taskEventKind = iota
	evFinished
	evSourceAtEnd
)

type taskEvent struct {
	kind  taskEventKind
	task  *task
	err   error
	fault *faultEntry // the injected fault behind a failure, if any
}

// barrierInfo is what a barrier told a subtask about its checkpoint.
type barrierInfo struct {
	ns          int64 // trigger time
	savepoint   bool  // a savepoint: snapshot in full
	atLeastOnce bool  // forwarded with the barrier
}

func modeOf(e *Element) barrier.Mode {
	if e.AtLeastOnce {
		return barrier.AtLeastOnce
	}
	return barrier.ExactlyOnce
}

// switchMode gives the subtask a barrier handler of mode, before it handles
// the first barrier (of checkpoint id) triggered in that mode. A checkpoint
// still aligning in the old mode is given up as subsumed, as a newer
// barrier would subsume it anyway.
func (t *task) switchMode(ctx context.Context, mode barrier.Mode, id int64) error {
	if p := t.handler.Pending(); p != 0 {
		r := t.handler.Abort(p)
		if r.Aborted != 0 {
			r.AbortReason = barrier.Subsumed
		}
		if err := t.act(ctx, r, 0); err != nil {
			return err
		}
	}
	h := barrier.New(mode, len(t.inputs), time.Now)
	if id > 1 {
		h.Abort(id - 1)
	}
	for i, in := range t.inputs {
		if in.ended {
			h.OnEndOfInput(i)
		}
	}
	t.handler = h
	for _, in := range t.inputs {
		in.blocked.Store(false)
	}
	return nil
}

// restoredState is the state a subtask starts from.
type restoredState struct {
	from     int64
	keyed    [][]byte
	operator map[string][][]byte
	replay   checkpoint.Offsets // see OperatorContext.Replay
}

// task is one subtask of one attempt, run by one goroutine (Flink:
// StreamTask).
type task struct {
	id   checkpoint.TaskID
	name string
	a    *attempt
	// ctx ends this instance of the subtask (a failover of its region, or
	// the whole attempt); done counts its goroutine and snapshot writers.
	ctx     context.Context
	cancel  context.CancelFunc
	done    sync.WaitGroup
	deploys int64 // the job's epoch when this instance was deployed
	op      *spec.Operator
	inputs  []*inputChannel
	gate    *gate
	mb      *mailbox
	outputs []*output
	handler barrier.Handler
	m       *TaskMetrics
	// published for the UI by the task goroutine
	aligning   atomic.Int64 // checkpoint being aligned, 0: none
	alignStart atomic.Int64 // unix ns of its first barrier

	oper  Operator
	one   OneInput
	two   TwoInput
	keyed backend.KeyedBackend
	// prefetch is keyed, when it can load a key's state ahead of use
	prefetch backend.Prefetcher
	// grouped is keyed, when it takes the key groups hash edges computed
	grouped backend.GroupedKeys
	// batchStart is when processInput began the batch it is processing
	// (OperatorContext.BatchStart).
	batchStart time.Time
	// channel is the input channel of that batch (OperatorContext.channel).
	channel int

	restored *restoredState
	faults   []*faultEntry
	faultAt  int64       // lowest AfterRecords among unfired faults of this task
	fired    *faultEntry // the injected fault this task is failing with

	// local counters flushed to m once per batch
	in, out  int64
	emitErr  error
	emitCtx  context.Context
	mail     []mail
	lastTrig map[int64]barrierInfo // barrier id → what its barrier carried

	// incremental snapshots: the chain of stored blobs the next delta builds on
	incMu       sync.Mutex
	chain       []checkpoint.Handle
	broken      bool
	lastPersist chan struct{} // closed when the previous snapshot's writer ends

	stepSeen  int64     // the tempo's last step this task went on with
	lastFlush time.Time // when the outputs were last flushed

	// a slow fault in effect: work takes slowFactor times as long
	slowUntil  time.Time
	slowFactor float64

	// sources
	src          Source
	reader       SourceReader
	srcBuf       []Record
	atEnd        bool
	finalBarrier int64
	srcOffsets   map[int64]map[int32]int64 // checkpoint id → offsets, until it completes
}

// Collect implements Collector for the task's operator.
func (t *task) Collect(rec Record) {
	if t.emitErr != nil {
		return
	}
	t.out++
	for _, o := range t.outputs {
		if err := o.emit(t.emitCtx, rec); err != nil {
			t.emitErr = err
			return
		}
	}
}

// abandon makes the snapshots this instance's writers are encoding stop
// early: it is being torn down, and the failover must not wait for them.
func (t *task) abandon() {
	if ab, ok := t.keyed.(interface{ Abandon() }); ok {
		ab.Abandon()
	}
}

func (t *task) setStatus(s TaskStatus, reason string) {
	t.m.status.Store(s)
	t.a.job.obs.Emit(view.TaskStatus{Task: t.name, Status: string(s), Attempt: t.deploys, Reason: reason})
}

// run is the task goroutine's body. A panic anywhere below, in an operator
// above all, becomes the task's failure.
func (t *task) run(ctx context.Context) {
	var err error
	defer func() {
		if r := recover(); r != nil {
			if t.fired != nil && t.fired.Kind == FaultPanic {
				err = fmt.Errorf("%s: injected panic", t.name)
			} else {
				buf := make([]byte, 4096)
				buf = buf[:goruntime.Stack(buf, false)]
				t.a.job.logf("panic in %s: %v\n%s", t.name, r, buf)
				err = fmt.Errorf("%s: panic: %v", t.name, r)
			}
		}
		t.flushCounters()
		if t.oper != nil {
			if cerr := t.oper.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
		if t.reader != nil {
			t.reader.Close()
		}
		switch {
		case err == nil:
			t.setStatus(TaskFinished, "")
			t.a.report(ctx, taskEvent{kind: evFinished, task: t})
		case ctx.Err() != nil:
			// The attempt is being torn down for another reason; a fault
			// that fired here meanwhile has not had its effect: re-arm it.
			if t.fired != nil {
				t.fired.fired.Store(false)
			}
			t.setStatus(TaskCanceled, "")
		default:
			t.setStatus(TaskFailed, err.Error())
			t.a.report(ctx, taskEvent{kind: evFailed, task: t, err: err, fault: t.fired})
		}
	}()
	t.emitCtx = ctx
	t.setStatus(TaskDeploying, "")
	if err = t.open(); err != nil {
		return
	}
	t.setStatus(TaskRunning, "")
	if t.src != nil {
		err = t.runSource(ctx)
	} else {
		err = t.runOperator(ctx)
	}
	if ctx.Err() != nil {
		err = ctx.Err()
	}
}

func (t *task) open() error {
	oc := &OperatorContext{
		Task:           t.id,
		Parallelism:    t.op.Parallelism,
		MaxParallelism: t.a.job.spec.MaxParallelism,
		Attempt:        t.deploys,
		Checkpointing:  t.a.job.cfg.Checkpoint.Interval > 0,
		TrackRollback:  t.a.job.handler.Failover() == restart.FailoverIndividual,
		Keyed:          t.keyed,
		restored:       map[string][][]byte{},
		batchStart:     &t.batchStart,
		InputChannels:  len(t.inputs),
		channel:        &t.channel,
	}
	oc.CompletedOffsets = t.a.job.completedOffsets
	if t.restored != nil {
		oc.Restored = true
		oc.RestoredFrom = t.restored.from
		oc.restored = t.restored.operator
		oc.Replay = t.restored.replay
		if t.keyed != nil {
			if err := t.keyed.Restore(t.restored.keyed); err != nil {
				return fmt.Errorf("restore %s from checkpoint %d: %w", t.name, t.restored.from, err)
			}
		}
	}
	if t.src != nil {
		offsets := map[int32]int64{}
		for _, b := range oc.RestoredState(sourceStateName) {
			o, err := decodeOffsets(b)
			if err != nil {
				return fmt.Errorf("restore %s: %w", t.name, err)
			}
			for p, off := range o {
				offsets[p] = off
			}
		}
		var mine []int32
		for p := 0; p < t.src.Partitions(); p++ {
			if p%t.op.Parallelism == t.id.Index {
				mine = append(mine, int32(p))
			}
		}
		r, err := t.src.Reader(mine, offsets)
		if err != nil {
			return fmt.Errorf("%s: open %s: %w", t.name, t.src.Topic(), err)
		}
		t.reader = r
		return nil
	}
	return t.oper.Open(oc)
}

const sourceStateName = "offsets"

func (t *task) flushCounters() {
	if t.in != 0 {
		t.m.RecordsIn.Add(t.in)
		t.a.job.recordsIn(t, t.in)
		t.in = 0
	}
	if t.out != 0 {
		t.m.RecordsOut.Add(t.out)
		t.out = 0
	}
}

// checkFaults fires a due after-records fault. processed is the task's
// count over all attempts.
func (t *task) checkFaults() error {
	done := t.m.RecordsIn.Load() + t.in
	if done < t.faultAt {
		return nil
	}
	t.faultAt = 1<<63 - 1
	for _, f := range t.faults {
		if f.fired.Load() {
			continue
		}
		if f.AfterRecords <= done {
			if err := t.fire(f); err != nil {
				return err
			}
			continue
		}
		t.faultAt = min(t.faultAt, f.AfterRecords)
	}
	return nil
}

// fire makes an injected fault happen in this task, now.
func (t *task) fire(f *faultEntry) error {
	if !f.fired.CompareAndSwap(false, true) {
		return nil
	}
	if f.Kind == FaultSlow {
		t.slowUntil = time.Now().Add(f.For)
		t.slowFactor = f.Factor
		t.a.job.obs.Emit(view.TaskSlowed{Task: t.name, Factor: f.Factor, ForMs: f.For.Milliseconds()})
		t.a.job.noteFault(t.name, FaultSlow)
		return nil
	}
	t.fired = f
	t.flushCounters()
	switch f.Kind {
	case FaultPanic:
		panic(fmt.Sprintf("injected panic in %s", t.name))
	default:
		return fmt.Errorf("%s: %w: %s", t.name, ErrInjected, f.Kind)
	}
}

// handleMail processes the control messages waiting in the mailbox.
func (t *task) handleMail(ctx context.Context) (finished bool, err error) {
	t.mail = t.mb.drain(t.mail[:0])
	for _, m := range t.mail {
		switch m.kind {
		case mailFault:
			if err := t.fire(m.entry); err != nil {
				return false, err
			}
		case mailTrigger:
			if err := t.sourceCheckpoint(ctx, m.id, m.triggerNs, m.savepoint, m.mode); err != nil {
				return false, err
			}
		case mailComplete:
			if l, ok := t.oper.(CheckpointListener); ok {
				if err := l.NotifyCheckpointComplete(m.id); err != nil {
					return false, fmt.Errorf("%s: checkpoint %d complete: %w", t.name, m.id, err)
				}
			}
			if t.src != nil {
				t.commitOffsets(m.id)
				if t.atEnd && t.finalBarrier != 0 && m.id >= t.finalBarrier {
					return true, nil
				}
			}
		case mailAborted:
			if t.handler != nil {
				if err := t.act(ctx, t.handler.Abort(m.id), 0); err != nil {
					return false, err
				}
			}
			if l, ok := t.oper.(CheckpointAbortListener); ok {
				if err := l.NotifyCheckpointAborted(m.id); err != nil {
					return false, err
				}
			}
		}
	}
	return false, nil
}

func (t *task) flushOutputs(ctx context.Context) error {
	for _, o := range t.outputs {
		if err := o.flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (t *task) broadcast(ctx context.Context, e Element) error {
	for _, o := range t.outputs {
		if err := o.broadcastEvent(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

func (t *task) wait(ctx context.Context) {
	start := time.Now()
	select {
	case <-t.gate.c:
	case <-ctx.Done():
	}
	t.m.IdleNanos.Add(int64(time.Since(start)))
}

// runSource reads the source's partitions, emitting batches and injecting
// barriers when the coordinator triggers a checkpoint (Flink: SourceStreamTask
// with its SourceReader).
func (t *task) runSource(ctx context.Context) error {
	checkpointing := t.a.job.cfg.Checkpoint.Interval > 0
	for ctx.Err() == nil {
		if d := t.pace(ctx); d > 0 {
			t.m.IdleNanos.Add(int64(d))
		}
		finished, err := t.handleMail(ctx)
		if err != nil {
			return err
		}
		if finished {
			return t.broadcast(ctx, Element{Kind: KindEndOfInput})
		}
		if t.atEnd {
			if !checkpointing {
				return t.broadcast(ctx, Element{Kind: KindEndOfInput})
			}
			t.wait(ctx)
			continue
		}
		if t.a.job.paused.Load() {
			t.waitPaused(ctx)
			continue
		}
		began := time.Now()
		recs, done, err := t.reader.Poll(ctx, t.srcBuf[:0], t.a.job.cfg.BatchSize)
		if err != nil {
			return fmt.Errorf("%s: read %s: %w", t.name, t.src.Topic(), err)
		}
		t.srcBuf = recs
		if len(recs) == 0 {
			t.m.IdleNanos.Add(int64(time.Since(began)))
		}
		for i := range recs {
			t.in++
			if t.in+t.m.RecordsIn.Load() >= t.faultAt {
				if err := t.checkFaults(); err != nil {
					return err
				}
			}
			t.Collect(recs[i])
			recs[i] = Record{}
		}
		if t.emitErr != nil {
			return t.emitErr
		}
		if err := t.flushOutputs(ctx); err != nil {
			return err
		}
		t.flushCounters()
		if len(recs) > 0 || t.m.offsets.Load() == nil {
			t.m.offsets.Store(t.reader.Offsets())
		}
		t.dawdle(ctx, began)
		if done {
			t.atEnd = true
			t.a.report(ctx, taskEvent{kind: evSourceAtEnd, task: t})
		}
	}
	return ctx.Err()
}

// commitOffsets hands the offsets of completed checkpoint id (or of the
// newest one before it) to the source reader to commit, and forgets older
// ones.
func (t *task) commitOffsets(id int64) {
	oc, ok := t.reader.(OffsetCommitter)
	if !ok {
		return
	}
	var best int64
	for cid := range t.srcOffsets {
		if cid <= id && cid > best {
			best = cid
		}
	}
	if best == 0 {
		return
	}
	if err := oc.CommitOffsets(t.srcOffsets[best]); err != nil {
		t.a.job.logf("%s: commit offsets of checkpoint %d: %v", t.name, best, err)
	}
	for cid := range t.srcOffsets {
		if cid <= best {
			delete(t.srcOffsets, cid)
		}
	}
}

// dawdle stretches the work done since began by the slow fault's factor
// while it lasts: back-pressure builds upstream, barriers queue behind the
// slow task, alignments and checkpoints take longer.
func (t *task) dawdle(ctx context.Context, began time.Time) {
	if t.slowUntil.IsZero() {
		return
	}
	now := time.Now()
	if now.After(t.slowUntil) {
		t.slowUntil = time.Time{}
		return
	}
	d := time.Duration(float64(now.Sub(began)) * (t.slowFactor - 1))
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

func (t *task) waitPaused(ctx context.Context) {
	tm := time.NewTimer(20 * time.Millisecond)
	defer tm.Stop()
	select {
	case <-t.gate.c:
	case <-tm.C:
	case <-ctx.Done():
	}
}

// sourceCheckpoint snapshots a source's offsets and injects barrier id
// behind every record read so far.
func (t *task) sourceCheckpoint(ctx context.Context, id, triggerNs int64, savepoint bool, mode barrier.Mode) error {
	start := time.Now()
	offs := t.reader.Offsets()
	state := &backend.SubtaskState{Operator: map[string][]byte{sourceStateName: encodeOffsets(offs)}}
	b := barrierElement(id, triggerNs, savepoint, mode == barrier.AtLeastOnce)
	if err := t.broadcast(ctx, b); err != nil {
		return err
	}
	if t.atEnd && t.finalBarrier == 0 {
		t.finalBarrier = id
	}
	if _, ok := t.reader.(OffsetCommitter); ok {
		if t.srcOffsets == nil {
			t.srcOffsets = map[int64]map[int32]int64{}
		}
		t.srcOffsets[id] = offs
	}
	ack := checkpoint.SubtaskAck{
		SyncDuration: time.Since(start),
		StartDelay:   start.Sub(time.Unix(0, triggerNs)),
		Offsets:      checkpoint.Offsets{t.src.Topic(): offs},
	}
	t.persistAsync(id, state, nil, ack, false)
	return nil
}

// BufferTimeout is the longest a record waits in a partly filled output
// batch while its subtask is busy (Flink: execution.buffer-timeout, whose
// default is 100 ms; shorter here, so that a viewer sees records move).
const BufferTimeout = 10 * time.Millisecond

// DefaultMaxChain is how many incremental snapshots may follow a full one
// before the next is full again, which bounds what a restore has to compose.
const DefaultMaxChain = 10

// incrementalBackend is a keyed backend that can snapshot only what changed
// (the Badger backend; Flink: incremental RocksDB checkpoints).
type incrementalBackend interface {
	SnapshotIncremental() backend.Snapshot
}

// persistAsync is the asynchronous part of a snapshot: encode, write to the
// store, acknowledge. It runs in its own goroutine, owned by the attempt.
// delta says the keyed snapshot holds only the changes since this task's
// previous snapshot; the chain it builds on is only known once the previous
// snapshot's writer has finished, so each writer waits for the one before
// it before it updates the chain and acknowledges.
func (t *task) persistAsync(id int64, state *backend.SubtaskState, keyed backend.Snapshot, ack checkpoint.SubtaskAck, delta bool) {
	a := t.a
	prev := t.lastPersist
	done := make(chan struct{})
	t.lastPersist = done
	a.wg.Add(1)
	t.done.Add(1)
	go func() {
		defer a.wg.Done()
		defer t.done.Done()
		defer close(done)
		start := time.Now()
		if keyed != nil {
			if d, ok := keyed.(interface{ Incremental() bool }); ok {
				delta = delta && d.Incremental()
			}
			b, err := keyed.Encode()
			if err != nil {
				t.breakChain()
				a.job.coord.Decline(a.epoch.Load(), id, t.id, checkpoint.ReasonDeclined, fmt.Errorf("%s: encode state: %w", t.name, err))
				return
			}
			state.Keyed = b
		} else {
			delta = false
		}
		parts := state.Parts()
		h, err := a.job.store.PutStateParts(t.ctx, id, t.id, parts)
		if err != nil {
			t.breakChain()
			if t.ctx.Err() == nil {
				a.job.coord.Decline(a.epoch.Load(), id, t.id, checkpoint.ReasonStorage, fmt.Errorf("%s: write state: %w", t.name, err))
			}
			return
		}
		if prev != nil {
			select {
			case <-prev:
			case <-t.ctx.Done():
				return
			}
		}
		t.incMu.Lock()
		if delta && t.broken {
			t.incMu.Unlock()
			a.job.coord.Decline(a.epoch.Load(), id, t.id, checkpoint.ReasonDeclined,
				fmt.Errorf("%s: the incremental snapshot's base was lost; the next snapshot is full", t.name))
			return
		}
		ack.Bytes = h.Size
		if delta {
			ack.Chain = append([]checkpoint.Handle(nil), t.chain...)
			for _, c := range t.chain {
				ack.Bytes += c.Size
			}
			t.chain = append(t.chain, h)
		} else if keyed != nil {
			t.chain = []checkpoint.Handle{h}
			t.broken = false
		}
		t.incMu.Unlock()
		ack.Handle = h
		ack.AsyncDuration = time.Since(start)
		ack.IncrementalBytes = h.Size
		ack.AckTime = time.Now()
		a.job.coord.Acknowledge(a.epoch.Load(), id, t.id, ack)
	}()
}

// breakChain makes the next keyed snapshot a full one: a snapshot whose
// changes were never stored cannot be built on.
func (t *task) breakChain() {
	t.incMu.Lock()
	t.broken = true
	t.incMu.Unlock()
}

// runOperator takes elements from the unblocked input channels in turn and
// hands them to the operator and the barrier handler (Flink: StreamTask's
// input processor with its CheckpointedInputGate).
func (t *task) runOperator(ctx context.Context) error {
	next := 0
	for ctx.Err() == nil {
		finished, err := t.handleMail(ctx)
		if err != nil {
			return err
		}
		if finished {
			return nil
		}
		progressed := false
		for k := 0; k < len(t.inputs); k++ {
			i := (next + k) % len(t.inputs)
			in := t.inputs[i]
			if in.ended || t.handler.Blocked(i) {
				continue
			}
			if in.pos >= len(in.cur) {
				b, ok := in.ch.poll()
				if !ok {
					continue
				}
				if in.cur != nil {
					putBatch(in.cur)
				}
				in.cur, in.pos = b, 0
			}
			if d := t.pace(ctx); d > 0 {
				t.m.IdleNanos.Add(int64(d))
			}
			progressed = true
			done, err := t.processInput(ctx, i)
			if err != nil {
				return err
			}
			if done {
				return t.finishOperator(ctx)
			}
			// Partly filled output batches go out after BufferTimeout even
			// while input keeps coming, and after every batch when the
			// tempo is slowed, so that records and barriers can be seen
			// moving on (Flink: execution.buffer-timeout).
			if now := time.Now(); now.Sub(t.lastFlush) >= BufferTimeout || t.a.job.Tempo() != TempoNormal {
				if err := t.flushOutputs(ctx); err != nil {
					return err
				}
				t.flushCounters()
				t.lastFlush = now
			}
		}
		next++
		if !progressed {
			if err := t.flushOutputs(ctx); err != nil {
				return err
			}
			t.flushCounters()
			t.wait(ctx)
		}
	}
	return ctx.Err()
}

// prefetchAhead is how many records ahead of the one it processes a keyed
// task prefetches state (backend.Prefetcher): far enough for a memory load
// to arrive, near enough that it is still cached when used. 4 was the
// fastest of 0, 4 and 12 in the default job; 2 and 8 were no different
// (docs/PERFORMANCE.md).
const prefetchAhead = 4

// prefetchKey prefetches the state of e's key, if e is a record.
func (t *task) prefetchKey(e *Element) {
	if e.Kind == KindRecord {
		t.prefetch.Prefetch(e.Record.Key, e.keyGroup())
	}
}

// processInput handles the current batch of input i until it ends or the
// channel gets blocked by alignment. done reports that every input ended.
//
// An element counts as handled only once its handling succeeded: when the
// task fails on a record, in.pos still points at it, so that an instance
// that takes over these input channels (individual failover) handles it
// again instead of dropping it.
func (t *task) processInput(ctx context.Context, i int) (done bool, err error) {
	in := t.inputs[i]
	start := in.pos
	began := time.Now()
	t.batchStart = began
	t.channel = i
	defer func() {
		in.ch.markConsumed(in.pos - start)
		t.dawdle(ctx, began)
	}()
	if t.prefetch != nil {
		for j := in.pos; j < min(in.pos+prefetchAhead, len(in.cur)); j++ {
			t.prefetchKey(&in.cur[j])
		}
	}
	for in.pos < len(in.cur) {
		e := &in.cur[in.pos]
		switch e.Kind {
		case KindRecord:
			t.in++
			if t.in+t.m.RecordsIn.Load() >= t.faultAt {
				if err := t.checkFaults(); err != nil {
					return false, err
				}
			}
			if t.keyed != nil {
				if t.prefetch != nil && in.pos+prefetchAhead < len(in.cur) {
					t.prefetchKey(&in.cur[in.pos+prefetchAhead])
				}
				if kg := e.keyGroup(); kg >= 0 && t.grouped != nil {
					t.grouped.SetCurrentKeyInGroup(e.Record.Key, kg)
				} else {
					t.keyed.SetCurrentKey(e.Record.Key)
				}
			}
			if t.two != nil {
				if in.logical == 0 {
					err = t.two.Process1(&e.Record, t)
				} else {
					err = t.two.Process2(&e.Record, t)
				}
			} else {
				err = t.one.Process(&e.Record, t)
			}
			if err != nil {
				return false, fmt.Errorf("%s: %w", t.name, err)
			}
			if t.emitErr != nil {
				return false, t.emitErr
			}
			e.Record = Record{}
		case KindBarrier:
			if mode := modeOf(e); mode != t.handler.Mode() {
				if err := t.switchMode(ctx, mode, e.ID()); err != nil {
					return false, err
				}
			}
			t.lastTrig[e.ID()] = barrierInfo{ns: e.TriggerNanos(), savepoint: e.Savepoint, atLeastOnce: e.AtLeastOnce}
			if err := t.act(ctx, t.handler.OnBarrier(i, e.ID()), e.TriggerNanos()); err != nil {
				return false, err
			}
		case KindCancel:
			if err := t.act(ctx, t.handler.OnCancel(i, e.ID()), 0); err != nil {
				return false, err
			}
		case KindEndOfInput:
			in.pos++
			in.ended = true
			if err := t.act(ctx, t.handler.OnEndOfInput(i), 0); err != nil {
				return false, err
			}
			for _, x := range t.inputs {
				if !x.ended {
					return false, nil
				}
			}
			return true, nil
		}
		in.pos++
		if t.handler.Blocked(i) {
			break
		}
	}
	return false, nil
}

// act carries out what the barrier handler decided.
func (t *task) act(ctx context.Context, r barrier.Result, triggerNs int64) error {
	for i, in := range t.inputs {
		in.blocked.Store(t.handler.Blocked(i))
	}
	t.aligning.Store(t.handler.Pending())
	if st := t.handler.AlignmentStart(); !st.IsZero() {
		t.alignStart.Store(st.UnixNano())
	} else {
		t.alignStart.Store(0)
	}
	if r.Aborted != 0 {
		delete(t.lastTrig, r.Aborted)
		if err := t.broadcast(ctx, cancelElement(r.Aborted)); err != nil {
			return err
		}
		if r.AbortReason == barrier.Subsumed {
			t.a.job.coord.Decline(t.a.epoch.Load(), r.Aborted, t.id, checkpoint.ReasonSubsumed,
				fmt.Errorf("%s: %s", t.name, r.AbortReason))
		}
	}
	if r.Triggered == 0 {
		return nil
	}
	info := barrierInfo{ns: triggerNs}
	if bi, ok := t.lastTrig[r.Triggered]; ok {
		info = bi
	}
	for id := range t.lastTrig {
		if id <= r.Triggered {
			delete(t.lastTrig, id)
		}
	}
	return t.snapshot(ctx, r, info)
}

// snapshot takes the synchronous part of checkpoint r.Triggered, forwards
// the barrier, and leaves the rest to persistAsync.
func (t *task) snapshot(ctx context.Context, r barrier.Result, info barrierInfo) error {
	triggerNs := info.ns
	id := r.Triggered
	start := time.Now()
	state := &backend.SubtaskState{}
	if s, ok := t.oper.(StateSnapshotter); ok {
		opState, err := s.SnapshotState(id)
		if err != nil {
			t.a.job.coord.Decline(t.a.epoch.Load(), id, t.id, checkpoint.ReasonDeclined, fmt.Errorf("%s: snapshot: %w", t.name, err))
			return t.broadcast(ctx, cancelElement(id))
		}
		state.Operator = opState
	}
	var keyed backend.Snapshot
	delta := false
	if t.keyed != nil {
		ib, canDelta := t.keyed.(incrementalBackend)
		if canDelta && t.a.job.cfg.Incremental && !info.savepoint {
			t.incMu.Lock()
			full := t.broken || len(t.chain) == 0 || len(t.chain) > t.a.job.cfg.MaxChain
			t.incMu.Unlock()
			if !full {
				keyed, delta = ib.SnapshotIncremental(), true
			}
		}
		if keyed == nil {
			keyed = t.keyed.Snapshot()
		}
	}
	if err := t.broadcast(ctx, barrierElement(id, triggerNs, info.savepoint, info.atLeastOnce)); err != nil {
		return err
	}
	ack := checkpoint.SubtaskAck{SyncDuration: time.Since(start), Alignment: r.Alignment}
	if p, ok := t.oper.(OutputPositioner); ok {
		ack.OutputFrom = p.OutputFrom()
	}
	if triggerNs != 0 && !r.FirstBarrier.IsZero() {
		ack.StartDelay = r.FirstBarrier.Sub(time.Unix(0, triggerNs))
	}
	t.persistAsync(id, state, keyed, ack, delta)
	return nil
}

// finishOperator ends the operator after every input ended: the operator
// flushes what it holds, and end of input travels on downstream.
func (t *task) finishOperator(ctx context.Context) error {
	if e, ok := t.oper.(InputEnder); ok {
		if err := e.EndInput(t); err != nil {
			return fmt.Errorf("%s: end of input: %w", t.name, err)
		}
		if t.emitErr != nil {
			return t.emitErr
		}
	}
	return t.broadcast(ctx, Element{Kind: KindEndOfInput})
}

// InputView and AlignmentView are what the UI shows of a subtask's input
// channels and of its alignment in progress (see view.InputView).
type (
	InputView     = view.InputView
	AlignmentView = view.AlignmentView
)

func (t *task) views() ([]InputView, AlignmentView) {
	out := make([]InputView, len(t.inputs))
	for i, in := range t.inputs {
		v := InputView{From: in.from, Input: in.logical, Blocked: in.blocked.Load(), Queue: in.ch.View()}
		if v.Blocked {
			v.HeldBack = v.Queue.Queued
		}
		out[i] = v
	}
	al := AlignmentView{Checkpoint: t.aligning.Load()}
	if ns := t.alignStart.Load(); ns != 0 && al.Checkpoint != 0 {
		al.Since = time.Unix(0, ns)
	}
	return out, al
}
