package runtime

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/clock"
	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/barrier"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/verify"
	"github.com/faultline-dev/faultline/runtime/view"
)

// JobStatus is the job's life-cycle state (Flink: JobStatus), as the view
// names it.
type JobStatus = view.JobState

// Job statuses, named as Flink names them (view.JobState).
const (
	JobCreated    = view.JobCreated
	JobRunning    = view.JobRunning
	JobRestarting = view.JobRestarting
	JobFailing    = view.JobFailing
	JobFailed     = view.JobFailed
	JobFinished   = view.JobFinished
	JobCanceled   = view.JobCanceled
)

// StateConfig is where and how subtasks keep keyed state.
type StateConfig struct {
	// StateBackend keeps keyed state: "heap" (the default; Flink:
	// HashMapStateBackend) or "badger" (Flink: EmbeddedRocksDBStateBackend),
	// whose databases live under WorkDir.
	StateBackend string
	WorkDir      string
	// Incremental makes the badger backend's checkpoints store only what
	// changed since the subtask's previous snapshot (Flink:
	// state.backend.incremental); savepoints are always full.
	Incremental bool
	// MaxChain is how many incremental snapshots may follow a full one
	// (default DefaultMaxChain).
	MaxChain int
}

// Hooks are what a job calls out to.
type Hooks struct {
	// BrokerDown makes the embedded broker refuse connections for a while
	// (the broker-down fault); nil without an embedded broker.
	BrokerDown func(d time.Duration) error
	// Crash kills the process (the crash fault); default: SIGKILL to self.
	// A Crash that returns (a guided tour's: the tour outlives its job)
	// must end Run's context: the run then ends as the process's death
	// would end it, with nothing settled, no savepoint and no check
	// (Result.Crashed), and the next run goes on from the state dir.
	Crash func()
	// Logf receives diagnostics that do not belong on the user's screen.
	Logf func(format string, args ...any)
	// AfterTeardown, when set, is called after an attempt's goroutines have
	// all ended (tests check that none is left).
	AfterTeardown func(attempt int64, live int64)
}

// ChannelConfig sizes the channels between subtasks (0: the defaults).
type ChannelConfig struct {
	// ChannelCapacity is each channel's capacity in batches; BatchSize the
	// most elements in one batch.
	ChannelCapacity int
	BatchSize       int
}

// Config is everything a job run needs.
type Config struct {
	Job *spec.Job
	Env *Env
	// Types is the job's own code: its operators besides source and sink.
	Types Types
	Mode  barrier.Mode
	// Unaligned makes exactly-once checkpoints unaligned (Flink:
	// execution.checkpointing.unaligned): their barriers overtake the
	// records queued in the channels, which are stored with the snapshot.
	// Savepoints are always aligned.
	Unaligned bool
	// AlignedTimeout switches an aligned checkpoint to unaligned once it
	// is older than this (Flink: execution.checkpointing.
	// aligned-checkpoint-timeout; 0: never).
	AlignedTimeout time.Duration
	// AtLeastOnce keeps the periods in which the job runs at-least-once,
	// so that the oracle counts their duplicates apart (nil: not kept).
	AtLeastOnce *verify.Periods
	Checkpoint  checkpoint.Config
	Store       checkpoint.Store
	Restart     restart.BackoffStrategy
	// Failover chooses what restarts after a failure (default full).
	Failover restart.FailoverStrategy
	Faults   []Fault
	Clock    clock.Clock
	Observer *Observer
	ChannelConfig
	// StateConfig is where and how subtasks keep keyed state.
	StateConfig
	// AllowFreshStart lets a job whose checkpoints are all damaged start
	// from the beginning instead of failing.
	AllowFreshStart bool
	// OnBadRecord is what decoding operators do with a record they cannot
	// parse: BadRecordFail (the default), BadRecordSkip or
	// BadRecordDeadLetter (to Env.DeadLetters).
	OnBadRecord string
	// Hooks are what the job calls out to: the faults that act outside
	// it, its diagnostics, and tests' checks.
	Hooks
	// LoadEvery is how often the run reports its subtasks' load
	// (task_load events); 0: every 5 s.
	LoadEvery time.Duration
}

// published are the job's figures read across goroutines.
type published struct {
	// epoch is the job master's (master.Master.Epoch), stored as each
	// deployment or partial restart takes it.
	epoch atomic.Int64
	// newestCheckpoint is the newest checkpoint that completed, for the
	// master.
	newestCheckpoint atomic.Int64
}

// Job runs one job graph and recovers it from failures (Flink: JobMaster
// with its scheduler). It owns the attempts: deploys every subtask, waits for
// the first failure, cancels and waits for every goroutine of the attempt,
// and redeploys from the latest completed checkpoint.
type Job struct {
	cfg   Config
	spec  *spec.Job
	obs   *Observer
	coord *checkpoint.Coordinator
	store faultyStore
	// timeControls are the job's clocks, its tempo, steps and pause.
	timeControls

	metrics map[string]*TaskMetrics
	// injector holds the run's faults: the configured ones, those
	// injected while it runs, and the way due ones reach the master.
	injector
	in   atomic.Int64 // records read by sources, over all attempts
	live atomic.Int64 // goroutines of attempts still running

	// cur is the running attempt (nil between attempts), under its lock.
	cur struct {
		sync.Mutex
		a *attempt
	}

	// published are figures the job master's goroutine and the
	// coordinator's publish for the others.
	published

	// handler decides what a failure restarts, and when (it holds the
	// backoff and failover strategies and the pipelined regions).
	handler *restart.Handler
	// align holds the sources that set watermark_alignment together.
	align  alignment
	bad    *badRecords
	ledger ledger

	// commitLog is what the sinks have committed.
	commitLog
	// rs picks and reads what the run restores.
	rs        restorer
	jobStatus atomic.Value // JobStatus
	statusAt  atomic.Int64 // when it was set: Unix ns, wall clock
	// modeState is the checkpointing mode of the checkpoints triggered now.
	modeState

	// inbox holds what reaches the job master from elsewhere, besides
	// the attempt's events and the due faults.
	inbox struct {
		coordFail  chan attemptErr
		savepoints chan int64 // completed savepoints, for stop-with-savepoint
		// stopSavepoint: the end of the run's context stops the job
		// with a savepoint (see SavepointWhenStopped).
		stopSavepoint atomic.Bool
		// resubmits carries Resubmit's request to a FAILED run that waits
		// for one (RunOptions.WaitToResubmit).
		resubmits chan struct{}
	}
}

type attemptErr struct {
	attempt int64
	err     error
}

type faultEntry struct {
	Fault
	id        int // the job master's name for it
	fired     atomic.Bool
	delivered atomic.Bool  // a timed fault was posted to its task
	queued    atomic.Bool  // an after-checkpoints fault was sent to the master
	completed atomic.Int64 // checkpoints an after-checkpoints fault has counted
	adhoc     bool         // injected while running (Inject), not from --inject
}

// FailureInfo is one failure of the run, as the report lists it.
type FailureInfo struct {
	At    time.Duration
	Task  string
	Fault string
	Error string
}

// Recovery is what a run's failures cost: the restarts, the failures and
// failovers, the checkpoints restored, and why the job gave up.
type Recovery struct {
	Restarts  int
	Failures  []FailureInfo
	Failovers []FailoverInfo
	Failover  string // the failover strategy
	// LostByFailover counts the records individual failover lost (it does
	// not replay input).
	LostByFailover int64
	RestoredFrom   []int64
	GaveUp         string
}

// Result is how a run ended.
type Result struct {
	Status JobStatus
	// Recovery is what the run's failures cost.
	Recovery
	// BadSkipped and BadDeadLettered count the records that could not be
	// parsed and were skipped or written to the dead-letter topic.
	BadSkipped, BadDeadLettered int64
	// StateTTL is what the join's state TTL did.
	StateTTL StateTTLStatus
	// ReplaySkipped counts the records the sinks did not write again after
	// a restore past a damaged checkpoint: the output held them already.
	ReplaySkipped int64
	Elapsed       time.Duration
	RecordsIn     int64
	// RecordsWritten counts the records the sinks wrote, those a restart
	// wrote again included.
	RecordsWritten int64
	Latest         *checkpoint.Completed // newest completed checkpoint at the end
	// Ahead are, in a run that did not finish, the order ids the committed
	// output holds past Latest: what newer checkpoints, found damaged
	// since, committed. A run restored from Latest skips them.
	Ahead         []string
	Resumed       int64 // the checkpoint or savepoint the run started from (0: none)
	ExitSavepoint int64 // the savepoint taken when the run was stopped (0: none)
	Checkpoints   checkpoint.Stats
	// Unaligned is set when a checkpoint of the run completed unaligned.
	Unaligned bool
	// Crashed is set when the crash fault ended the run and the process
	// lived on (see Config.Crash): nothing was settled after it.
	Crashed bool
}

// withDefaults fills in what cfg leaves unset and checks the choices
// that need no job to check.
func withDefaults(cfg Config) (Config, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Observer == nil {
		cfg.Observer = NewObserver(cfg.Clock, 4096)
	}
	if cfg.Store == nil {
		cfg.Store = checkpoint.NewMemoryStore(3)
	}
	if cfg.Restart == nil {
		cfg.Restart = restart.NewFixedDelay(10, time.Second)
	}
	if cfg.ChannelCapacity <= 0 {
		cfg.ChannelCapacity = 4
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 256
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.MaxChain <= 0 {
		cfg.MaxChain = DefaultMaxChain
	}
	if cfg.Crash == nil {
		cfg.Crash = func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) }
	}
	if err := cfg.StateConfig.Check(); err != nil {
		return cfg, err
	}
	switch cfg.StateBackend {
	case "":
		cfg.StateBackend = "heap"
	case "badger":
		if cfg.WorkDir == "" {
			return cfg, errors.New("the badger state backend needs a work directory")
		}
	}
	var err error
	if cfg.Failover == "" {
		cfg.Failover = restart.FailoverFull
	} else if cfg.Failover, err = restart.ParseFailoverStrategy(string(cfg.Failover)); err != nil {
		return cfg, err
	}
	if cfg.OnBadRecord, err = ParseOnBadRecord(cfg.OnBadRecord); err != nil {
		return cfg, err
	}
	if cfg.OnBadRecord == BadRecordDeadLetter && cfg.Env.DeadLetters == nil {
		return cfg, &ConfigError{Key: KeyOnBadRecord, Value: `"dead-letter"`, Want: "a dead-letter topic to write to"}
	}
	return cfg, nil
}

// New prepares a job; Run starts it.
func New(cfg Config) (*Job, error) {
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	cfg.Checkpoint.Job = cfg.Job.Name
	cfg.Checkpoint.Mode = ModeName(cfg.Mode, cfg.Unaligned)
	j := &Job{
		cfg: cfg, spec: cfg.Job, obs: cfg.Observer,
		timeControls: timeControls{clk: clock.NewScaled(cfg.Clock), wall: cfg.Clock, obs: cfg.Observer},
		injector: injector{jobSpec: cfg.Job, partitions: cfg.Env.partitions, events: cfg.Observer, logf: cfg.Logf,
			configured: len(cfg.Faults), faultCh: make(chan *faultEntry, len(cfg.Faults)+64)},
		metrics: map[string]*TaskMetrics{},
		handler: restart.NewHandler(cfg.Restart, cfg.Failover, pipelinedRegions(cfg.Job)),
		bad:     newBadRecords(cfg.OnBadRecord, cfg.Env.DeadLetters, cfg.Observer),
		align:   newAlignment(cfg.Job),
	}
	j.inbox.coordFail = make(chan attemptErr, 1)
	j.inbox.savepoints = make(chan int64, 16)
	j.inbox.resubmits = make(chan struct{}, 1)
	j.commitLog.init(cfg.Job, cfg.Store)
	j.bad.progress = &j.progress
	j.mode.Store(int32(cfg.Mode))
	j.unaligned.Store(cfg.Unaligned)
	j.steps = newStepWatch(cfg.Job)
	if cfg.Mode == barrier.AtLeastOnce {
		j.lenient(cfg.AtLeastOnce.Open)
	} else {
		j.exactlyOnceSince.Store(j.wall.Now().UnixNano())
	}
	j.tempo.init(j.clk)
	j.ledger.obs, j.ledger.wall = cfg.Observer, cfg.Clock
	j.ledger.restarts.v = RestartView{
		Strategy: cfg.Restart.Name(), Description: cfg.Restart.Describe(),
		Status: cfg.Restart.Status(), Failover: cfg.Failover,
	}
	if err := j.addTasksAndFaults(); err != nil {
		return nil, err
	}
	// Checkpoint writes go through a store that the storage-fail fault can
	// make fail; the rest of the store is the configured one.
	j.store = faultyStore{Store: cfg.Store, fails: &j.storageFails}
	cfg.Checkpoint.Wall = cfg.Clock
	j.coord = checkpoint.NewCoordinator(cfg.Checkpoint, j.store, j.clk, gateway{j}, gateway{j}.onCheckpointEvent)
	j.rs = restorer{store: j.store, job: cfg.Job, obs: cfg.Observer, coord: j.coord, env: cfg.Env,
		logf: cfg.Logf, allowFreshStart: cfg.AllowFreshStart}
	return j, nil
}

// addTasksAndFaults makes the metrics of every subtask, checks that the
// environment has each source's and sink's topic, and arms the configured
// faults.
func (j *Job) addTasksAndFaults() error {
	cfg := j.cfg
	for _, op := range j.spec.Operators {
		for i := 0; i < op.Parallelism; i++ {
			j.metrics[checkpoint.TaskID{Operator: op.Name, Index: i}.String()] = &TaskMetrics{}
		}
		switch op.Type {
		case spec.TypeSource:
			if _, err := cfg.Env.source(op.Topic); err != nil {
				return fmt.Errorf("operator %s: %w", op.Name, err)
			}
		case spec.TypeSink:
			if _, err := cfg.Env.output(op.Topic); err != nil {
				return fmt.Errorf("operator %s: %w", op.Name, err)
			}
		}
	}
	for _, f := range cfg.Faults {
		if err := CheckFault(&f, j.spec, cfg.Env.partitions); err != nil {
			return err
		}
		j.faults = append(j.faults, &faultEntry{Fault: f, id: int(j.nextFault.Add(1))})
		if f.AfterCheckpoints > 0 {
			j.ckptFaults = append(j.ckptFaults, j.faults[len(j.faults)-1])
		}
	}
	return nil
}

// Coordinator is the job's checkpoint coordinator.
func (j *Job) Coordinator() *checkpoint.Coordinator { return j.coord }

// Observer is the job's event stream.
func (j *Job) Observer() *Observer { return j.obs }

// Metrics returns the counters of every subtask by name ("join/1").
func (j *Job) Metrics() map[string]*TaskMetrics { return j.metrics }

// Inputs samples the input channels of subtask name ("join/1") in the
// running attempt: queues, barriers, blocking, and its alignment. ok is
// false while no attempt runs or the subtask does not exist.
func (j *Job) Inputs(name string) (inputs []InputView, align AlignmentView, ok bool) {
	j.cur.Lock()
	a := j.cur.a
	j.cur.Unlock()
	if a == nil {
		return nil, AlignmentView{}, false
	}
	t := a.lookup(name)
	if t == nil {
		return nil, AlignmentView{}, false
	}
	in, al := t.views()
	return in, al, true
}

// Status is the job's current status.
// StatusSince is when the job entered its status (wall clock; zero before
// its first).
func (j *Job) StatusSince() time.Time {
	if ns := j.statusAt.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// Status is the job's status.
func (j *Job) Status() JobStatus {
	if s, ok := j.jobStatus.Load().(JobStatus); ok {
		return s
	}
	return JobCreated
}

// Epoch counts the deployments and failovers of the job so far.
func (j *Job) Epoch() int64 { return j.epoch.Load() }

func (j *Job) status(s JobStatus, reason string) {
	j.statusAt.Store(j.wall.Now().UnixNano())
	j.jobStatus.Store(s)
	j.obs.Emit(view.JobStatus{Status: string(s), Reason: reason})
}

// StateTTLStatus is what the state TTL of the job's join did so far.
type StateTTLStatus struct {
	// TTL is the join's state TTL (0: sides wait for ever, or no join).
	TTL time.Duration
	// NotJoined counts the orders whose payment was more than TTL apart in
	// event time; Expired the waiting sides the cleanup dropped.
	NotJoined, Expired int64
}

// StateTTL says what the state TTL of the job's join did so far; safe to
// call at any time.
func (j *Job) StateTTL() StateTTLStatus {
	s := StateTTLStatus{NotJoined: j.bad.ttl.NotJoined.Load(), Expired: j.bad.ttl.Expired.Load()}
	for _, op := range j.spec.Operators {
		s.TTL = max(s.TTL, op.StateTTL) // the operators that keep records waiting
	}
	return s
}
