package runtime

import (
	"context"
	"fmt"
	"math"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/clock"
	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/barrier"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/view"
)

// TaskMetrics are one subtask's counters. They live as long as the job, not
// an attempt, and are sampled by the UI with atomic loads.
type TaskMetrics struct {
	RecordsIn  atomic.Int64 // records processed (sources: records read)
	RecordsOut atomic.Int64 // records emitted
	// IdleNanos is the time spent waiting for input (or held by the
	// tempo); BackPressuredNanos the time spent waiting for room in a
	// full output channel before taking more input. The rest of the wall time is busy (Flink:
	// idleTimeMsPerSecond, backPressuredTimeMsPerSecond, busyTimeMsPerSecond).
	IdleNanos          atomic.Int64
	BackPressuredNanos atomic.Int64
	// heldSince is when the tempo began to hold the subtask (Unix ns on
	// the wall clock; 0: not held), so that a freeze shows as idle time
	// before it ends (Idle).
	heldSince atomic.Int64
	// waitingSince is when the subtask began to wait for input (Unix ns
	// on the wall clock; 0: not waiting), so that a long wait (a join
	// aligning upstream, a paused source) shows as idle before it ends.
	waitingSince atomic.Int64
	// Watermark is the subtask's current input watermark (event-time ms;
	// 0: none, or an operator that keeps none).
	Watermark atomic.Int64
	// blockedSince is when the subtask began to wait for room in a full
	// output channel (Unix ns on the wall clock; 0: not waiting), so that a wait
	// that lasts shows before it ends (BackPressured).
	blockedSince atomic.Int64
	// Deploys counts how many times the subtask was deployed.
	Deploys atomic.Int64
	// slowUntil is when a slow fault of the subtask ends (Unix ns; 0: not
	// slowed), slowFactor its factor (math.Float64bits), slowPer how long
	// it holds each record (ns). A subtask deployed again while the fault
	// lasts goes on slowly: the fault is the machine's, not the attempt's.
	slowUntil, slowFactor, slowPer atomic.Uint64
	// normalRate is the subtask's normal rate the slow fault measures
	// (math.Float64bits), kept for the instances deployed after this one.
	normalRate atomic.Uint64
	// offsets are a source subtask's next offsets per partition, published
	// after each read (map[int32]int64, never changed once stored).
	offsets atomic.Value
	// lag is a source subtask's lag (see LagReporter; -1: not known),
	// published with its offsets.
	lag    atomic.Int64
	status atomic.Value // TaskStatus
}

// Lag is, for a source subtask whose reader knows it, the most records any
// of its partitions holds past the next one it reads; -1 otherwise.
func (m *TaskMetrics) Lag() int64 {
	if m.offsets.Load() == nil {
		return -1
	}
	return m.lag.Load()
}

// Offsets are, for a source subtask, the next offset it reads in each of
// its partitions (nil for other subtasks and before the first read).
func (m *TaskMetrics) Offsets() map[int32]int64 {
	o, _ := m.offsets.Load().(map[int32]int64)
	return o
}

// Idle is IdleNanos with the tempo's hold or the wait for input under
// way at now, if the subtask is held (a frozen world is idle, not busy)
// or waits.
func (m *TaskMetrics) Idle(now time.Time) int64 {
	return m.IdleNanos.Load() + underWay(m.heldSince.Load(), now) + underWay(m.waitingSince.Load(), now)
}

// underWay is the time since since (Unix ns; 0: nothing under way).
func underWay(since int64, now time.Time) int64 {
	if since == 0 {
		return 0
	}
	return max(now.UnixNano()-since, 0)
}

// idleFrom counts the time since start, a wait for input that has just
// ended, as idle.
func (m *TaskMetrics) idleFrom(start, now time.Time) {
	m.waitingSince.Store(0)
	m.IdleNanos.Add(int64(max(now.Sub(start), 0)))
}

// BackPressured is BackPressuredNanos with the wait under way at now, if
// the subtask is blocked on a full channel.
func (m *TaskMetrics) BackPressured(now time.Time) int64 {
	return m.BackPressuredNanos.Load() + underWay(m.blockedSince.Load(), now)
}

// Slowed returns, while a slow fault holds the subtask, its factor and
// when it ends (ok false: not slowed).
func (m *TaskMetrics) Slowed() (factor float64, until time.Time, ok bool) {
	u := m.slowUntil.Load()
	if u == 0 {
		return 0, time.Time{}, false
	}
	return math.Float64frombits(m.slowFactor.Load()), time.Unix(0, int64(u)), true
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
	// recording mirrors the barrier handler (its records are in flight for
	// an unaligned checkpoint); persisted counts those stored for it.
	recording atomic.Bool
	persisted atomic.Int64
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
	stayAligned bool  // no timeout switches it to unaligned; forwarded
	atLeastOnce bool  // forwarded with the barrier
}

// restoredState is the state a subtask starts from.
type restoredState struct {
	from     int64
	keyed    [][]byte
	operator map[string][][]byte
	replay   checkpoint.Offsets // see OperatorContext.Replay
	// channels are the in-flight records of its input channels, by
	// channelKey, to replay before anything new (an unaligned checkpoint).
	channels map[string][]Record
}

// task is one instance of a subtask in one attempt, run by one goroutine
// (Flink: StreamTask): what sources (sourceTask) and operators
// (operatorTask) share. Its fields are grouped by concern.
type task struct {
	id      checkpoint.TaskID
	name    string
	a       *attempt
	op      *spec.Operator
	deploys int64 // the job's epoch when this instance was deployed
	m       *TaskMetrics
	handler barrier.Handler
	oper    Operator
	keyed   backend.KeyedBackend
	taskLife
	taskWiring
	taskRestore
	taskFaults
	taskCounts
	taskBarriers
	snapChain

	// source is what only a source subtask has (nil for an operator),
	// opr what only an operator has (nil for a source).
	source *sourceTask
	opr    *operatorTask
}

// taskLife is how an instance ends: cancel ends the context start made
// for it (a failover of its region; the attempt's cancel ends it too);
// done counts its goroutine and snapshot writers.
type taskLife struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// taskWiring is what connects an instance to the others: its input
// channels, its outputs, the gate that wakes it, its mailbox.
type taskWiring struct {
	inputs  []*inputChannel
	gate    *gate
	mb      *mailbox
	outputs []*output
}

// taskRestore is what an instance starts from.
type taskRestore struct {
	restored *restoredState
	// replayAll is set on a start with no checkpoint to restore over
	// output earlier runs committed (RunOptions.SkipCommitted).
	replayAll bool
}

// taskFaults are the injected faults of an instance.
type taskFaults struct {
	faults  []*faultEntry
	faultAt int64       // lowest AfterRecords among unfired faults of this task
	fired   *faultEntry // the injected fault this task is failing with
	slow    slowing     // a slow fault, and the rate it starts from
}

// taskCounts are an instance's local counters, flushed to its metrics
// once per batch, and its mail taken but not handled yet.
type taskCounts struct {
	in, out int64
	// emitErr is Collect's first error.
	emitErr   error
	lastFlush time.Time // when the outputs were last flushed
	mail      []mail
}

// taskBarriers is what an instance knows of the checkpoints under way.
type taskBarriers struct {
	lastTrig map[int64]barrierInfo // barrier id → what its barrier carried
	// firstBarrier is the newest checkpoint whose barrier reached the
	// subtask (for Step).
	firstBarrier int64
	// afterBarrier counts the records processed past the pending
	// at-least-once checkpoint's barrier (SubtaskAck.AfterBarrier).
	afterBarrier int64
	// processedInFlight adds up the size of the records processed while
	// an aligned checkpoint aligns (SubtaskAck.ProcessedInFlight).
	processedInFlight int64
}

// snapChain is the chain of stored blobs an instance's next incremental
// snapshot builds on.
type snapChain struct {
	incMu       sync.Mutex
	chain       []checkpoint.Handle
	broken      bool
	lastPersist chan struct{} // closed when the previous snapshot's writer ends
}

// Collect implements Collector for the task's operator.
func (t *task) Collect(rec Record) {
	if t.emitErr != nil {
		return
	}
	t.out++
	for _, o := range t.outputs {
		if err := o.emit(rec); err != nil {
			t.emitErr = err
			return
		}
	}
}

// abandon makes the snapshots this instance's writers are encoding stop
// early: it is being torn down, and the failover must not wait for them.
func (t *task) abandon() {
	if ab, ok := t.keyed.(backend.Abandoner); ok {
		ab.Abandon()
	}
}

// clk is the job's clock, which stops while the world is frozen: the
// durations a subtask reports, its alignment, its slow fault and its
// timeouts are on it.
func (t *task) clk() clock.Clock { return t.a.job.clk }

// wall is the clock the job's clock runs on: the tempo's own waits, the
// buffer timeout and the busy, idle and back-pressured time per second
// are on it.
func (t *task) wall() clock.Clock { return t.a.job.wall }

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
		if t.source != nil && t.source.reader != nil {
			t.source.reader.Close()
			t.source.noteLastCommit()
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
	t.setStatus(TaskDeploying, "")
	if err = t.open(ctx); err != nil {
		return
	}
	t.setStatus(TaskRunning, "")
	if t.source != nil {
		err = t.source.runSource(ctx)
	} else {
		err = t.opr.runOperator(ctx)
	}
	if ctx.Err() != nil {
		err = ctx.Err()
	}
}

func (t *task) open(ctx context.Context) error {
	oc := &OperatorContext{
		stop:           ctx.Done(),
		Task:           t.id,
		Parallelism:    t.op.Parallelism,
		MaxParallelism: t.a.job.spec.MaxParallelism,
		Attempt:        t.deploys,
		Checkpointing:  t.a.job.cfg.Checkpoint.Interval > 0,
		TrackRollback:  t.a.job.handler.Failover() == restart.FailoverIndividual,
		Keyed:          t.keyed,
		restored:       map[string][][]byte{},
		clk:            t.clk(),
		InputChannels:  len(t.inputs),
		watermark:      &t.m.Watermark,
		bad:            t.a.job.bad,
	}
	oc.Completed = t.a.job.completed
	if t.replayAll {
		oc.Replay = checkpoint.Offsets{}
	}
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
	if t.source != nil {
		return t.source.openReader(oc)
	}
	oc.batchStart, oc.channel = &t.opr.batchStart, &t.opr.channel
	return t.oper.Open(oc)
}

func (t *task) flushCounters() {
	if t.in != 0 {
		t.m.RecordsIn.Add(t.in)
		if t.source != nil {
			t.a.job.in.Add(t.in)
		}
		t.in = 0
	}
	if t.out != 0 {
		t.m.RecordsOut.Add(t.out)
		t.out = 0
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
			if err := t.source.sourceCheckpoint(ctx, m.id, m.triggerNs, m.savepoint, m.mode, m.unaligned); err != nil {
				return false, err
			}
		case mailComplete:
			if l, ok := t.oper.(CheckpointListener); ok {
				if err := l.NotifyCheckpointComplete(m.id); err != nil {
					return false, fmt.Errorf("%s: checkpoint %d complete: %w", t.name, m.id, err)
				}
			}
			if t.source != nil {
				t.source.commitOffsets(m.id)
				if t.source.atEnd && t.source.finalBarrier != 0 && m.id >= t.source.finalBarrier {
					return true, nil
				}
			}
		case mailAborted:
			if t.handler != nil {
				if err := t.opr.act(ctx, t.handler.Abort(m.id), 0); err != nil {
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

func (t *task) flushOutputs() {
	for _, o := range t.outputs {
		o.flush()
	}
}

func (t *task) broadcast(e Element) {
	for _, o := range t.outputs {
		o.broadcastEvent(e)
	}
}

// broadcastPriority sends the unaligned barrier e on every output ahead of
// what is queued there.
func (t *task) broadcastPriority(e Element) {
	for _, o := range t.outputs {
		o.broadcastPriority(e)
	}
}

// outputsFull reports whether one of the subtask's output channels is
// full: it then takes no more input (back-pressure).
func (t *task) outputsFull() bool {
	for _, o := range t.outputs {
		if o.full() {
			return true
		}
	}
	return false
}

// wait waits for input, mail or room in an output, counted as idle time,
// or until the aligned-checkpoint timeout may have something to do.
func (t *task) wait(ctx context.Context) {
	start := t.wall().Now()
	t.m.waitingSince.Store(start.UnixNano())
	t.waitGate(ctx)
	t.m.idleFrom(start, t.wall().Now())
}

// backPressured waits, while an output channel is full, for room in it,
// for mail or for an unaligned barrier to take (Flink: a back-pressured
// task still takes mails and priority events), counted as back-pressure.
func (t *task) backPressured(ctx context.Context) {
	start := t.wall().Now()
	t.m.blockedSince.Store(start.UnixNano())
	t.waitGate(ctx)
	t.m.blockedSince.Store(0)
	t.m.BackPressuredNanos.Add(int64(clock.Since(t.wall(), start)))
}

// waitGate waits for the subtask's gate, or for the moment an aligned
// checkpoint it waits for outlives the aligned-checkpoint timeout.
func (t *task) waitGate(ctx context.Context) {
	var d time.Duration
	var ok bool
	if t.opr != nil { // a source has no alignment to time out
		d, ok = t.opr.timeoutDue()
	}
	if ok {
		after, tm := clock.After(t.clk(), d)
		defer tm.Stop()
		select {
		case <-t.gate.c:
		case <-after:
		case <-ctx.Done():
		}
		return
	}
	select {
	case <-t.gate.c:
	case <-ctx.Done():
	}
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
		v := InputView{From: in.from, Input: in.logical, Blocked: in.blocked.Load(), Queue: in.ch.View(),
			Recording: in.recording.Load(), Persisted: in.persisted.Load()}
		if v.Blocked {
			v.HeldBack = v.Queue.Queued
		}
		out[i] = v
	}
	if t.opr == nil {
		return out, AlignmentView{} // a source aligns nothing
	}
	u := t.opr.unalView.Load()
	al := AlignmentView{Checkpoint: t.opr.aligning.Load(), Unaligned: u > 0, TimedOut: u == 2}
	if ns := t.opr.alignStart.Load(); ns != 0 && al.Checkpoint != 0 {
		al.Since = time.Unix(0, ns)
	}
	return out, al
}
