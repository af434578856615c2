package checkpoint

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/internal/clock"
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
	// Wall is the clock whose times a person reads as clock times
	// (TriggerTime, EndTime, AckTime); nil: the coordinator's own clock.
	// The coordinator's clock (the job's, which stops while the world is
	// frozen) times everything else: intervals, pauses, timeouts and
	// durations.
	Wall clock.Clock
}

// stopper is a clock that can say how long it stood still (clock.Scaled):
// the coordinator reports that time beside each checkpoint's duration.
type stopper interface{ Stopped() time.Duration }

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
	// at is the trigger time on the coordinator's clock (the job's), on
	// which subtasks measure their start delay.
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
	triggerTime time.Time // on Config.Wall
	// triggerAt is the trigger time on the coordinator's clock, stoppedAt
	// how long that clock had stood still then.
	triggerAt time.Time
	stoppedAt time.Duration
	acks      map[TaskID]SubtaskAck
	waiting   map[TaskID]struct{}
	// finished are the subtasks that finished before or while this checkpoint
	// was pending without acknowledging it; their last state is carried over.
	finished []TaskID
	timer    clock.Timer
	rec      *record
	// completing: every subtask acknowledged, and the metadata is being
	// written (a persist effect); nothing aborts the checkpoint any more,
	// only its write can fail it.
	completing bool
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
// All methods are safe for concurrent use. What the coordinator decides
// under its lock, it carries out without it (effects.go): writes to the
// store, calls into the Gateway and onEvent, one at a time, in the order
// decided, a completed checkpoint's write before anything tells of it.
type Coordinator struct {
	cfg     Config
	store   Store
	clk     clock.Clock
	wall    clock.Clock
	gw      Gateway
	onEvent func(Event)

	// mu guards the groups below.
	mu sync.Mutex
	coordAttempt
	coordPeriodic
	coordFailures
	coordStats
	coordOutbox
}

// coordAttempt is the attempt the coordinator triggers checkpoints for,
// and the checkpoints under way.
type coordAttempt struct {
	mode     string // recorded in each checkpoint triggered (Config.Mode at first)
	running  bool
	attempt  int64
	tasks    []TaskID
	finished map[TaskID]bool
	nextID   int64
	pending  map[int64]*pending
}

// coordPeriodic is the periodic triggering (Flink: ScheduledTrigger +
// CheckpointRequestDecider).
type coordPeriodic struct {
	periodic    clock.Timer
	periodicGen int64     // bumped to invalidate a tick already under way
	nextTick    time.Time // when the periodic timer fires
	due         bool      // a periodic trigger waits for MaxConcurrent
	lastEnd     time.Time // completion time of the last completed checkpoint
	hasLastEnd  bool
}

// coordFailures is the failure counting (Flink: CheckpointFailureManager).
type coordFailures struct {
	consecutive   int
	lastSucceeded int64
	failedAttempt int64 // the attempt FailJob was called for
	failJobCalled bool
}

// coordStats is what the coordinator reports of the checkpoints so far.
type coordStats struct {
	completedCount, failedCount int
	failedBy                    map[string]int // failed checkpoints by FailureReason
	lastCompletedID             int64
	restored                    []int64
	restoredSavepoint           bool             // the newest of restored is a savepoint
	damaged                     map[int64]string // checkpoints a restore found damaged, and why
	history                     []*record        // oldest first
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
	wall := cfg.Wall
	if wall == nil {
		wall = clk
	}
	c := &Coordinator{cfg: cfg, store: store, clk: clk, wall: wall, gw: gw, onEvent: onEvent}
	c.coordAttempt = coordAttempt{mode: cfg.Mode, nextID: store.MaxID() + 1,
		pending: map[int64]*pending{}, finished: map[TaskID]bool{}}
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
// reason (Flink: stopCheckpointScheduler + abortPendingCheckpoints), but
// one that every subtask acknowledged, whose metadata is being written:
// Stop returns once the write has completed or failed it. A
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
	// Another goroutine may be carrying out the queued effects; wait until
	// it has, so that nothing of this attempt reaches the store, the
	// Gateway or onEvent after Stop returns. (Stop is never called from
	// inside those calls.)
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
		if p.completing {
			continue // acknowledged by all: its write completes or fails it
		}
		c.failLocked(p, reason, fmt.Errorf("checkpoint %d aborted: %w", p.id, err), TaskID{})
	}
}

// SetMode sets the mode recorded in the checkpoints triggered from now on
// (the job switched between exactly-once and at-least-once).
func (c *Coordinator) SetMode(mode string) {
	c.mu.Lock()
	c.mode = mode
	c.mu.Unlock()
}

// NextID is the id the next triggered checkpoint will get.
func (c *Coordinator) NextID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nextID
}

func (c *Coordinator) pendingInOrderLocked() []*pending {
	ps := slices.Collect(maps.Values(c.pending))
	slices.SortFunc(ps, func(a, b *pending) int { return cmp.Compare(a.id, b.id) })
	return ps
}

// stoppedFor is how long clk has stood still (0 for a clock that never
// stops).
func stoppedFor(clk clock.Clock) time.Duration {
	if s, ok := clk.(stopper); ok {
		return s.Stopped()
	}
	return 0
}

// timesLocked fills cs's job-clock figures for p as of now: the duration
// so far (or to its end) and the time the clock stood still meanwhile.
func (c *Coordinator) timesLocked(cs *CheckpointStats, p *pending) {
	cs.Duration = c.clk.Now().Sub(p.triggerAt)
	cs.Frozen = stoppedFor(c.clk) - p.stoppedAt
}
