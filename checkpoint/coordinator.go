package checkpoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"faultline/internal/clock"
)

// Flink's defaults for execution.checkpointing.timeout and
// execution.checkpointing.max-concurrent-checkpoints.
const (
	DefaultTimeout       = 10 * time.Minute
	DefaultMaxConcurrent = 1
	// historySize is how many checkpoints Stats reports (Flink:
	// web.checkpoints.history, whose default is 10; the TUI shows more).
	historySize = 64
)

// Config of the coordinator; names follow Flink's execution.checkpointing.*
// options (Flink: CheckpointCoordinatorConfiguration).
type Config struct {
	// Interval between periodic checkpoints (execution.checkpointing.interval).
	// 0: no periodic checkpoints; a manual Trigger still works.
	Interval time.Duration
	// MinPause is the least time from the completion of one checkpoint to the
	// trigger of the next periodic one (execution.checkpointing.min-pause).
	// As in Flink, only a completed checkpoint starts the pause; a failed one
	// does not.
	MinPause time.Duration
	// Timeout after which a pending checkpoint expires
	// (execution.checkpointing.timeout); 0 means Flink's default 10m.
	Timeout time.Duration
	// MaxConcurrent pending checkpoints for periodic triggering
	// (execution.checkpointing.max-concurrent-checkpoints); 0 means 1.
	MaxConcurrent int
	// TolerableFailures is how many consecutive failed checkpoints are
	// tolerated before the job is failed
	// (execution.checkpointing.tolerable-failed-checkpoints); Flink's default 0.
	TolerableFailures int
	// Job and Mode are copied into each Completed.
	Job, Mode string
}

// Gateway is how the coordinator reaches the tasks of the running job (Flink:
// the coordinator's calls into the ExecutionGraph: triggerCheckpoint,
// notifyCheckpointComplete, notifyCheckpointAborted, and the
// CheckpointFailureManager's FailJobCallback). Implementations never block
// and never call back into the Coordinator synchronously.
type Gateway interface {
	// TriggerSources injects barrier id at every source subtask still
	// running, in mode: the checkpointing mode the coordinator recorded in
	// it (Config.Mode, then SetMode), so that a checkpoint's barriers and
	// its record never disagree.
	TriggerSources(attempt, id int64, kind Kind, mode string, at time.Time)
	// NotifyComplete tells every subtask that checkpoint id completed.
	NotifyComplete(attempt, id int64)
	// NotifyAborted tells every subtask that checkpoint id was aborted.
	NotifyAborted(attempt, id int64)
	// FailJob fails the job: the tolerable failure threshold was exceeded.
	FailJob(attempt int64, err error)
}

type nopGateway struct{}

func (nopGateway) TriggerSources(int64, int64, Kind, string, time.Time) {}
func (nopGateway) NotifyComplete(int64, int64)                          {}
func (nopGateway) NotifyAborted(int64, int64)                           {}
func (nopGateway) FailJob(int64, error)                                 {}

// ErrThresholdExceeded is wrapped by the error given to Gateway.FailJob when
// more consecutive checkpoints failed than Config.TolerableFailures allows
// (Flink: CheckpointFailureManager.EXCEEDED_CHECKPOINT_TOLERABLE_FAILURE_MESSAGE).
var ErrThresholdExceeded = errors.New("exceeded checkpoint tolerable failure threshold")

// ErrNotRunning is returned by Trigger while no job attempt is running
// (before Start or after Stop).
var ErrNotRunning = errors.New("checkpoint coordinator: job is not running")

// pending is a checkpoint that has been triggered but not yet acknowledged by
// every subtask (Flink: PendingCheckpoint).
type pending struct {
	id          int64
	kind        Kind
	mode        string
	attempt     int64
	triggerTime time.Time
	acks        map[TaskID]SubtaskAck
	waiting     map[TaskID]struct{}
	// finished are the subtasks that finished before or while this checkpoint
	// was pending without acknowledging it; their last state is carried over.
	finished []TaskID
	timer    clock.Timer
	rec      *record
}

// record is one History entry; p is set while the checkpoint is pending.
type record struct {
	stats CheckpointStats
	p     *pending
}

// Coordinator triggers checkpoints, collects the subtasks' acknowledgements,
// writes completed checkpoints to the Store and tells the tasks about
// completion and abortion (Flink: CheckpointCoordinator, with its
// CheckpointRequestDecider and CheckpointFailureManager folded in).
//
// All methods are safe for concurrent use. Calls into the Gateway and onEvent
// are made without the coordinator's lock held, one at a time, in the order
// the coordinator decided them.
type Coordinator struct {
	cfg     Config
	store   Store
	clk     clock.Clock
	gw      Gateway
	onEvent func(Event)

	mu       sync.Mutex
	mode     string // recorded in each checkpoint triggered (Config.Mode at first)
	running  bool
	attempt  int64
	tasks    []TaskID
	finished map[TaskID]bool
	nextID   int64
	pending  map[int64]*pending

	// Periodic triggering (Flink: ScheduledTrigger + CheckpointRequestDecider).
	periodic    clock.Timer
	periodicGen int64     // bumped to invalidate a tick already under way
	nextTick    time.Time // when the periodic timer fires
	due         bool      // a periodic trigger waits for MaxConcurrent
	lastEnd     time.Time // completion time of the last completed checkpoint
	hasLastEnd  bool

	// Failure counting (Flink: CheckpointFailureManager).
	consecutive   int
	lastSucceeded int64
	failedAttempt int64 // the attempt FailJob was called for
	failJobCalled bool

	completedCount, failedCount int
	lastCompletedID             int64
	restored                    []int64
	damaged                     map[int64]string // checkpoints a restore found damaged, and why
	history                     []*record        // oldest first

	// outbox holds Gateway and onEvent calls decided under mu; flush runs
	// them without mu, in order, one goroutine at a time.
	outbox   []func()
	flushing bool
	idle     *sync.Cond // signalled when a flush ends
}

// NewCoordinator returns a coordinator whose first checkpoint id is
// store.MaxID()+1, so that ids keep increasing across processes. gw and
// onEvent may be nil.
func NewCoordinator(cfg Config, store Store, clk clock.Clock, gw Gateway, onEvent func(Event)) *Coordinator {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.TolerableFailures < 0 {
		cfg.TolerableFailures = 0
	}
	if gw == nil {
		gw = nopGateway{}
	}
	c := &Coordinator{
		cfg:      cfg,
		mode:     cfg.Mode,
		store:    store,
		clk:      clk,
		gw:       gw,
		onEvent:  onEvent,
		nextID:   store.MaxID() + 1,
		pending:  map[int64]*pending{},
		finished: map[TaskID]bool{},
	}
	c.idle = sync.NewCond(&c.mu)
	return c
}

// Start tells the coordinator that job attempt attempt is running with these
// subtasks and begins periodic triggering; the first periodic trigger comes
// after Interval. A checkpoint still pending from an earlier attempt is
// aborted as a job failover.
func (c *Coordinator) Start(attempt int64, tasks []TaskID) {
	c.mu.Lock()
	c.stopLocked(ReasonJobFailover, fmt.Errorf("job attempt %d started", attempt))
	c.running = true
	c.attempt = attempt
	c.tasks = slices.Clone(tasks)
	c.finished = map[TaskID]bool{}
	if c.cfg.Interval > 0 {
		c.schedulePeriodicLocked(c.cfg.Interval)
	}
	c.mu.Unlock()
	c.flush()
}

// Stop stops periodic triggering and aborts every pending checkpoint with
// reason (Flink: stopCheckpointScheduler + abortPendingCheckpoints). A
// ReasonJobFailover or ReasonSubsumed abort does not count as a failure.
// Acknowledgements and declines for the stopped attempt are ignored
// afterwards.
func (c *Coordinator) Stop(reason FailureReason, err error) {
	if err == nil {
		err = errors.New("job stopped")
	}
	c.mu.Lock()
	c.stopLocked(reason, err)
	c.mu.Unlock()
	c.flush()
	// Another goroutine may be making the queued calls; wait until it has,
	// so that nothing of this attempt reaches the Gateway or onEvent after
	// Stop returns. (Stop is never called from inside those calls.)
	c.mu.Lock()
	for c.flushing || len(c.outbox) > 0 {
		c.idle.Wait()
	}
	c.mu.Unlock()
}

func (c *Coordinator) stopLocked(reason FailureReason, err error) {
	c.running = false
	c.cancelPeriodicLocked()
	c.due = false
	for _, p := range c.pendingInOrderLocked() {
		c.failLocked(p, reason, fmt.Errorf("checkpoint %d aborted: %w", p.id, err), TaskID{})
	}
}

// Trigger triggers a checkpoint or savepoint now, bypassing Interval,
// MinPause and MaxConcurrent (Flink: triggerCheckpoint / triggerSavepoint
// from the REST API). It returns the new id, or ErrNotRunning.
func (c *Coordinator) Trigger(kind Kind) (int64, error) {
	c.mu.Lock()
	if !c.running {
		c.mu.Unlock()
		return 0, ErrNotRunning
	}
	id := c.triggerLocked(kind)
	c.mu.Unlock()
	c.flush()
	return id, nil
}

// Acknowledge records that task finished its part of checkpoint id (Flink:
// receiveAcknowledgeMessage). Acks for another attempt, for an id that is not
// pending, from a subtask the checkpoint does not wait for, or duplicates are
// ignored. The last expected ack completes the checkpoint.
func (c *Coordinator) Acknowledge(attempt, id int64, task TaskID, ack SubtaskAck) {
	c.mu.Lock()
	if p := c.pendingForLocked(attempt, id); p != nil {
		if _, ok := p.waiting[task]; ok {
			if ack.AckTime.IsZero() {
				ack.AckTime = c.clk.Now()
			}
			delete(p.waiting, task)
			p.acks[task] = ack
			if len(p.waiting) == 0 {
				c.completeLocked(p)
			}
		}
	}
	c.tryPeriodicLocked()
	c.mu.Unlock()
	c.flush()
}

// Decline fails checkpoint id because task could not take its snapshot
// (Flink: receiveDeclineMessage). reason 0 means ReasonDeclined. Declines for
// another attempt or an id that is not pending are ignored.
func (c *Coordinator) Decline(attempt, id int64, task TaskID, reason FailureReason, err error) {
	if reason == 0 {
		reason = ReasonDeclined
	}
	if err == nil {
		err = errors.New("no reason given")
	}
	c.mu.Lock()
	if p := c.pendingForLocked(attempt, id); p != nil {
		_, waiting := p.waiting[task]
		_, acked := p.acks[task]
		if waiting || acked {
			c.failLocked(p, reason, fmt.Errorf("checkpoint %d declined by %s: %w", id, task, err), task)
		}
	}
	c.tryPeriodicLocked()
	c.mu.Unlock()
	c.flush()
}

// TaskFinished tells the coordinator that task reached the end of its input
// (Flink: a FINISHED execution, FLIP-147). Pending checkpoints stop waiting
// for it, which may complete them, and later checkpoints do not expect it;
// each carries the task's state from the latest completed checkpoint, marked
// Finished.
func (c *Coordinator) TaskFinished(attempt int64, task TaskID) {
	c.mu.Lock()
	if c.running && attempt == c.attempt && !c.finished[task] {
		c.finished[task] = true
		for _, p := range c.pendingInOrderLocked() {
			if c.pending[p.id] != p {
				continue // subsumed by a completion earlier in this loop
			}
			if _, ok := p.waiting[task]; !ok {
				continue
			}
			delete(p.waiting, task)
			p.finished = append(p.finished, task)
			if len(p.waiting) == 0 {
				c.completeLocked(p)
			}
		}
	}
	c.tryPeriodicLocked()
	c.mu.Unlock()
	c.flush()
}

// SetMode sets the mode recorded in the checkpoints triggered from now on
// (the job switched between exactly-once and at-least-once).
func (c *Coordinator) SetMode(mode string) {
	c.mu.Lock()
	c.mode = mode
	c.mu.Unlock()
}

// MarkRestored records that the job restored its state from checkpoint id
// (Flink: RestoredCheckpointStats).
func (c *Coordinator) MarkRestored(id int64) {
	c.mu.Lock()
	c.restored = append(c.restored, id)
	c.mu.Unlock()
}

// MarkDamaged records that a restore found checkpoint id damaged, and why:
// Stats shows it so from then on, though it had completed.
func (c *Coordinator) MarkDamaged(id int64, why string) {
	c.mu.Lock()
	if c.damaged == nil {
		c.damaged = map[int64]string{}
	}
	c.damaged[id] = why
	c.mu.Unlock()
}

// NextID is the id the next triggered checkpoint will get.
func (c *Coordinator) NextID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nextID
}

// pendingForLocked returns the pending checkpoint id of the running attempt,
// or nil.
func (c *Coordinator) pendingForLocked(attempt, id int64) *pending {
	if !c.running || attempt != c.attempt {
		return nil
	}
	return c.pending[id]
}

func (c *Coordinator) pendingInOrderLocked() []*pending {
	ps := slices.Collect(maps.Values(c.pending))
	slices.SortFunc(ps, func(a, b *pending) int { return cmp.Compare(a.id, b.id) })
	return ps
}

// triggerLocked creates a pending checkpoint, arms its timeout and asks the
// gateway to inject the barrier (Flink: startTriggeringCheckpoint).
func (c *Coordinator) triggerLocked(kind Kind) int64 {
	id := c.nextID
	c.nextID++
	now := c.clk.Now()
	p := &pending{
		id:          id,
		kind:        kind,
		mode:        c.mode,
		attempt:     c.attempt,
		triggerTime: now,
		acks:        map[TaskID]SubtaskAck{},
		waiting:     map[TaskID]struct{}{},
	}
	for _, t := range c.tasks {
		if c.finished[t] {
			p.finished = append(p.finished, t)
		} else {
			p.waiting[t] = struct{}{}
		}
	}
	p.rec = &record{stats: CheckpointStats{ID: id, Kind: kind, Status: StatusPending, TriggerTime: now}, p: p}
	c.history = append(c.history, p.rec)
	if len(c.history) > historySize {
		c.history = slices.Delete(c.history, 0, len(c.history)-historySize)
	}
	c.pending[id] = p
	p.timer = c.clk.AfterFunc(c.cfg.Timeout, func() { c.expire(p) })

	attempt := c.attempt
	c.emitLocked(Event{Type: EventTriggered, ID: id, Kind: kind, At: now})
	mode := p.mode
	c.outbox = append(c.outbox, func() { c.gw.TriggerSources(attempt, id, kind, mode, now) })
	if len(p.waiting) == 0 {
		c.completeLocked(p) // every subtask has finished
	}
	return id
}

// expire fails p when its timeout passes (Flink: CheckpointCanceller).
func (c *Coordinator) expire(p *pending) {
	c.mu.Lock()
	if c.pending[p.id] == p {
		err := fmt.Errorf("checkpoint %d not acknowledged within the timeout of %s (%d of %d subtasks acknowledged, waiting for %s)",
			p.id, c.cfg.Timeout, len(p.acks), len(p.acks)+len(p.waiting), taskList(sortedTasks(p.waiting)))
		c.failLocked(p, ReasonExpired, err, TaskID{})
	}
	c.tryPeriodicLocked()
	c.mu.Unlock()
	c.flush()
}

func taskList(ts []TaskID) string {
	const show = 4
	names := make([]string, 0, show)
	for i, t := range ts {
		if i == show {
			return strings.Join(names, ", ") + fmt.Sprintf(" and %d more", len(ts)-show)
		}
		names = append(names, t.String())
	}
	return strings.Join(names, ", ")
}

// removeLocked takes p out of the pending checkpoints and stops its timeout.
func (c *Coordinator) removeLocked(p *pending) {
	delete(c.pending, p.id)
	p.timer.Stop()
	p.rec.p = nil
	fillStats(&p.rec.stats, p)
}

// completeLocked turns p, acknowledged by every expected subtask, into a
// Completed, adds it to the store and notifies the tasks (Flink:
// completePendingCheckpoint).
func (c *Coordinator) completeLocked(p *pending) {
	// No caller's context: whichever acknowledgement or timer completes
	// the checkpoint, its metadata must reach the store.
	ctx := context.Background()
	now := c.clk.Now()
	tasks := maps.Clone(p.acks)
	if len(p.finished) > 0 {
		latest, err := c.store.Latest(ctx)
		if err != nil {
			c.failLocked(p, ReasonStorage, fmt.Errorf("checkpoint %d: read the latest completed checkpoint for the state of finished subtasks: %w", p.id, err), TaskID{})
			return
		}
		for _, t := range p.finished {
			if latest == nil {
				break
			}
			if a, ok := latest.Tasks[t]; ok {
				tasks[t] = carryFinished(a)
			}
		}
	}
	done := &Completed{
		ID:             p.id,
		Kind:           p.kind,
		Job:            c.cfg.Job,
		Mode:           p.mode,
		TriggerTime:    p.triggerTime,
		CompletionTime: now,
		Tasks:          tasks,
	}
	if err := c.store.Add(ctx, done); err != nil {
		c.failLocked(p, ReasonStorage, fmt.Errorf("checkpoint %d: write metadata: %w", p.id, err), TaskID{})
		return
	}
	c.removeLocked(p)
	full, incremental := done.Size()
	p.rec.stats.Status = StatusCompleted
	p.rec.stats.EndTime = now
	p.rec.stats.FullBytes, p.rec.stats.IncrementalBytes = full, incremental
	p.rec.stats.WaitingFor = nil

	c.completedCount++
	c.lastCompletedID = p.id
	c.lastEnd, c.hasLastEnd = now, true
	if p.id > c.lastSucceeded { // Flink: handleCheckpointSuccess
		c.lastSucceeded = p.id
		c.consecutive = 0
	}
	for _, older := range c.pendingInOrderLocked() {
		if older.id < p.id {
			c.failLocked(older, ReasonSubsumed, fmt.Errorf("checkpoint %d was subsumed by checkpoint %d, which completed first", older.id, p.id), TaskID{})
		}
	}
	c.emitLocked(Event{Type: EventCompleted, ID: p.id, Kind: p.kind, At: now, Completed: done})
	attempt, id := p.attempt, p.id
	c.outbox = append(c.outbox, func() { c.gw.NotifyComplete(attempt, id) })
}

// carryFinished is the state of a finished subtask taken over from an earlier
// checkpoint (Flink: FullyFinishedOperatorState): this checkpoint wrote
// nothing for it.
func carryFinished(a SubtaskAck) SubtaskAck {
	a.Finished = true
	a.IncrementalBytes = 0
	a.Unaligned, a.TimedOut = false, false
	a.PersistedInFlight, a.PersistedRecords, a.ProcessedInFlight = 0, 0, 0
	a.InFlightIDs = nil
	if a.Offsets != nil {
		offsets := make(Offsets, len(a.Offsets))
		for topic, parts := range a.Offsets {
			offsets[topic] = maps.Clone(parts)
		}
		a.Offsets = offsets
	}
	return a
}

// failLocked aborts p, tells the tasks and applies the failure counter
// (Flink: abortPendingCheckpoint + CheckpointFailureManager).
func (c *Coordinator) failLocked(p *pending, reason FailureReason, err error, task TaskID) {
	now := c.clk.Now()
	c.removeLocked(p)
	p.rec.stats.Status = StatusFailed
	p.rec.stats.EndTime = now
	p.rec.stats.Failure = fmt.Sprintf("%s: %v", reason, err)
	c.failedCount++

	c.emitLocked(Event{Type: EventFailed, ID: p.id, Kind: p.kind, At: now, Reason: reason, Err: err, Task: task})
	attempt, id := p.attempt, p.id
	c.outbox = append(c.outbox, func() { c.gw.NotifyAborted(attempt, id) })

	if !c.countsLocked(p, reason) {
		return
	}
	c.consecutive++
	if c.consecutive <= c.cfg.TolerableFailures {
		return
	}
	failErr := fmt.Errorf("%w: %d consecutive checkpoints failed, %d tolerated (execution.checkpointing.tolerable-failed-checkpoints); last: %s: %v",
		ErrThresholdExceeded, c.consecutive, c.cfg.TolerableFailures, reason, err)
	c.consecutive = 0 // Flink clears the counter once it fails the job
	if c.failJobCalled && c.failedAttempt == attempt {
		return // this attempt is already being failed
	}
	c.failJobCalled, c.failedAttempt = true, attempt
	c.outbox = append(c.outbox, func() { c.gw.FailJob(attempt, failErr) })
}

// countsLocked reports whether the failure of p goes against the tolerable
// failure counter, following Flink's CheckpointFailureManager: only expiry,
// decline and storage failures count; a checkpoint older than the last
// completed one does not count; for a savepoint only a subtask's decline
// counts, since a failover would not help a failed manual action.
func (c *Coordinator) countsLocked(p *pending, reason FailureReason) bool {
	if !reason.counts() || p.id <= c.lastSucceeded {
		return false
	}
	return p.kind != KindSavepoint || reason == ReasonDeclined
}

// schedulePeriodicLocked (re)starts the periodic trigger: the first tick
// after delay, then one every Interval (Flink: scheduleTriggerWithDelay).
func (c *Coordinator) schedulePeriodicLocked(delay time.Duration) {
	c.cancelPeriodicLocked()
	gen := c.periodicGen
	c.nextTick = c.clk.Now().Add(delay)
	c.periodic = c.clk.AfterFunc(delay, func() { c.tick(gen) })
}

func (c *Coordinator) cancelPeriodicLocked() {
	c.periodicGen++
	if c.periodic != nil {
		c.periodic.Stop()
		c.periodic = nil
	}
}

// tick is the periodic trigger firing (Flink: ScheduledTrigger).
func (c *Coordinator) tick(gen int64) {
	c.mu.Lock()
	if c.running && gen == c.periodicGen {
		now := c.clk.Now()
		next := c.nextTick.Add(c.cfg.Interval)
		if next.Before(now) {
			next = now.Add(c.cfg.Interval) // fell behind: do not fire a burst
		}
		c.nextTick = next
		c.periodic = c.clk.AfterFunc(next.Sub(now), func() { c.tick(gen) })
		c.due = true
		c.tryPeriodicLocked()
	}
	c.mu.Unlock()
	c.flush()
}

// tryPeriodicLocked triggers a due periodic checkpoint if MaxConcurrent and
// MinPause allow it (Flink: CheckpointRequestDecider). While too many are
// pending the request waits; when the min pause has not passed since the last
// completion, the request is dropped and the periodic trigger restarts at the
// end of the pause.
func (c *Coordinator) tryPeriodicLocked() {
	if !c.due || !c.running {
		return
	}
	if len(c.pending) >= c.cfg.MaxConcurrent {
		return
	}
	c.due = false
	if c.cfg.MinPause > 0 && c.hasLastEnd {
		if wait := c.lastEnd.Add(c.cfg.MinPause).Sub(c.clk.Now()); wait > 0 {
			c.schedulePeriodicLocked(wait)
			return
		}
	}
	c.triggerLocked(KindCheckpoint)
}

func (c *Coordinator) emitLocked(e Event) {
	if c.onEvent != nil {
		c.outbox = append(c.outbox, func() { c.onEvent(e) })
	}
}

// flush makes the Gateway and onEvent calls queued in the outbox, without the
// lock held. If another goroutine is already flushing, it makes them instead,
// so that the calls keep the order in which they were decided.
func (c *Coordinator) flush() {
	for {
		c.mu.Lock()
		if c.flushing || len(c.outbox) == 0 {
			c.mu.Unlock()
			return
		}
		batch := c.outbox
		c.outbox = nil
		c.flushing = true
		c.mu.Unlock()
		func() {
			defer func() {
				c.mu.Lock()
				c.flushing = false
				c.idle.Broadcast()
				c.mu.Unlock()
			}()
			for _, f := range batch {
				f()
			}
		}()
	}
}
