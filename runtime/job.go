package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"faultline/backend"
	"faultline/checkpoint"
	"faultline/internal/clock"
	"faultline/restart"
	"faultline/runtime/barrier"
	"faultline/runtime/spec"
	"faultline/runtime/view"
)

// JobStatus is the job's life-cycle state (Flink: JobStatus).
type JobStatus string

// Job statuses, named as Flink names them.
const (
	JobCreated    JobStatus = "CREATED"
	JobRunning    JobStatus = "RUNNING"
	JobRestarting JobStatus = "RESTARTING"
	JobFailing    JobStatus = "FAILING"
	JobFailed     JobStatus = "FAILED"
	JobFinished   JobStatus = "FINISHED"
	JobCanceled   JobStatus = "CANCELED"
)

// Config is everything a job run needs.
type Config struct {
	Job        *spec.Job
	Env        *Env
	Mode       barrier.Mode
	Checkpoint checkpoint.Config
	Store      checkpoint.Store
	Restart    restart.BackoffStrategy
	// Failover chooses what restarts after a failure (default full).
	Failover restart.FailoverStrategy
	Faults   []Fault
	Clock    clock.Clock
	Observer *Observer
	// ChannelCapacity is each channel's capacity in batches; BatchSize the
	// most elements in one batch.
	ChannelCapacity int
	BatchSize       int
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
	// AllowFreshStart lets a job whose checkpoints are all damaged start
	// from the beginning instead of failing.
	AllowFreshStart bool
	// OnBadRecord is what decoding operators do with a record they cannot
	// parse: BadRecordFail (the default), BadRecordSkip or
	// BadRecordDeadLetter (to Env.DeadLetters).
	OnBadRecord string
	// BrokerDown makes the embedded broker refuse connections for a while
	// (the broker-down fault); nil without an embedded broker.
	BrokerDown func(d time.Duration) error
	// Crash kills the process (the crash fault); default: SIGKILL to self.
	Crash func()
	// Logf receives diagnostics that do not belong on the user's screen.
	Logf func(format string, args ...any)
	// AfterTeardown, when set, is called after an attempt's goroutines have
	// all ended (tests check that none is left).
	AfterTeardown func(attempt int64, live int64)
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
	clk   clock.Clock

	metrics map[string]*TaskMetrics
	faults  []*faultEntry
	paused  atomic.Bool
	in      atomic.Int64 // records read by sources, over all attempts

	storageFails atomic.Int64 // checkpoint writes still to fail (storage-fail)
	live         atomic.Int64 // goroutines of attempts still running

	mu  sync.Mutex
	cur *attempt

	epoch atomic.Int64 // bumped by every deployment and failover

	// handler decides what a failure restarts, and when (it holds the
	// backoff and failover strategies and the pipelined regions).
	handler  *restart.Handler
	bad      *badRecords
	restarts restartState
	losses   lossLog

	faultsMu sync.Mutex
	injected []FailureInfo // faults that failed no task: job-level ones, slow

	commits       commitProgress
	lastCommitted struct {
		sync.Mutex
		c *checkpoint.Completed
	}
	// replayUntil is set by pickRestore when it fell back past a newer
	// completed checkpoint whose state cannot be read: that one's source
	// offsets (see OperatorContext.Replay); nil otherwise.
	replayUntil checkpoint.Offsets
	jobStatus   atomic.Value // JobStatus
	mode        atomic.Int32 // barrier.Mode of the checkpoints triggered now
	tempo       tempo

	coordFail  chan attemptErr
	faultCh    chan *faultEntry
	savepoints chan int64 // completed savepoints, for stop-with-savepoint
}

type attemptErr struct {
	attempt int64
	err     error
}

type faultEntry struct {
	Fault
	fired     atomic.Bool
	delivered atomic.Bool // a timed fault was posted to its task
	adhoc     bool        // injected while running (Inject), not from --inject
}

// FailureInfo is one failure of the run, as the report lists it.
type FailureInfo struct {
	At    time.Duration
	Task  string
	Fault string
	Error string
}

// Result is how a run ended.
type Result struct {
	Status    JobStatus
	Restarts  int
	Failures  []FailureInfo
	Failovers []FailoverInfo
	Failover  string // the failover strategy
	// BadSkipped and BadDeadLettered count the records that could not be
	// parsed and were skipped or written to the dead-letter topic.
	BadSkipped, BadDeadLettered int64
	// StateTTL is what the join's state TTL did.
	StateTTL StateTTLStatus
	// ReplaySkipped counts the records the sinks did not write again after
	// a restore past a damaged checkpoint: the output held them already.
	ReplaySkipped int64
	// LostByFailover counts the records individual failover lost (it does
	// not replay input).
	LostByFailover int64
	RestoredFrom   []int64
	GaveUp         string
	Elapsed        time.Duration
	RecordsIn      int64
	Latest         *checkpoint.Completed // newest completed checkpoint at the end
	Resumed        int64                 // the checkpoint or savepoint the run started from (0: none)
	ExitSavepoint  int64                 // the savepoint taken when the run was stopped (0: none)
	Checkpoints    checkpoint.Stats
}

// New prepares a job; Run starts it.
func New(cfg Config) (*Job, error) {
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
	switch cfg.StateBackend {
	case "", "heap":
		cfg.StateBackend = "heap"
	case "badger":
		if cfg.WorkDir == "" {
			return nil, errors.New("the badger state backend needs a work directory")
		}
	default:
		return nil, fmt.Errorf("state backend %q: want heap or badger", cfg.StateBackend)
	}
	switch cfg.Failover {
	case "":
		cfg.Failover = restart.FailoverFull
	case restart.FailoverFull, restart.FailoverRegion, restart.FailoverIndividual, restart.FailoverNone:
	default:
		return nil, fmt.Errorf("failover strategy %q: want full, region, individual or none", cfg.Failover)
	}
	var err error
	if cfg.OnBadRecord, err = ParseOnBadRecord(cfg.OnBadRecord); err != nil {
		return nil, err
	}
	if cfg.OnBadRecord == BadRecordDeadLetter && cfg.Env.DeadLetters == nil {
		return nil, errors.New("--on-bad-record dead-letter needs a dead-letter topic")
	}
	if cfg.Incremental && cfg.StateBackend != "badger" {
		return nil, errors.New("incremental checkpoints need the badger state backend (as in Flink, where only RocksDB has them)")
	}
	cfg.Checkpoint.Job = cfg.Job.Name
	cfg.Checkpoint.Mode = cfg.Mode.String()
	j := &Job{
		cfg: cfg, spec: cfg.Job, obs: cfg.Observer, clk: cfg.Clock,
		metrics:    map[string]*TaskMetrics{},
		coordFail:  make(chan attemptErr, 1),
		faultCh:    make(chan *faultEntry, len(cfg.Faults)+64),
		savepoints: make(chan int64, 16),
		handler:    restart.NewHandler(cfg.Restart, cfg.Failover, pipelinedRegions(cfg.Job)),
		bad:        newBadRecords(cfg.OnBadRecord, cfg.Env.DeadLetters, cfg.Observer),
	}
	j.bad.progress = &j.commits
	j.mode.Store(int32(cfg.Mode))
	j.tempo.init()
	j.restarts.v = RestartView{
		Strategy: cfg.Restart.Name(), Description: cfg.Restart.Describe(),
		Status: cfg.Restart.Status(), Failover: cfg.Failover,
	}
	for _, op := range j.spec.Operators {
		for i := 0; i < op.Parallelism; i++ {
			j.metrics[checkpoint.TaskID{Operator: op.Name, Index: i}.String()] = &TaskMetrics{}
		}
		switch op.Type {
		case spec.TypeSource:
			if _, err := cfg.Env.source(op.Topic); err != nil {
				return nil, fmt.Errorf("operator %s: %w", op.Name, err)
			}
		case spec.TypeSink:
			if _, err := cfg.Env.output(op.Topic); err != nil {
				return nil, fmt.Errorf("operator %s: %w", op.Name, err)
			}
		}
	}
	for _, f := range cfg.Faults {
		if err := CheckFaultTask(f, j.spec); err != nil {
			return nil, err
		}
		j.faults = append(j.faults, &faultEntry{Fault: f})
	}
	// Checkpoint writes go through a store that the storage-fail fault can
	// make fail; the rest of the store is the configured one.
	j.store = faultyStore{Store: cfg.Store, fails: &j.storageFails}
	j.coord = checkpoint.NewCoordinator(cfg.Checkpoint, j.store, cfg.Clock, j, j.onCheckpointEvent)
	return j, nil
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
	j.mu.Lock()
	a := j.cur
	j.mu.Unlock()
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

// Pause stops (true) or resumes (false) the sources.
func (j *Job) Pause(p bool) {
	if j.paused.Swap(p) != p {
		j.obs.Emit(view.SourcesPaused{Paused: p})
	}
}

// Paused reports whether the sources are paused.
func (j *Job) Paused() bool { return j.paused.Load() }

// Status is the job's current status.
func (j *Job) Status() JobStatus {
	if s, ok := j.jobStatus.Load().(JobStatus); ok {
		return s
	}
	return JobCreated
}

// CommittedCheckpoint is the newest checkpoint whose output every sink
// subtask has committed, with the source offsets it covers (by the topic
// each source reads). ok is false before the first.
func (j *Job) CommittedCheckpoint() (id int64, offsets checkpoint.Offsets, ok bool) {
	j.commits.mu.Lock()
	id = -1
	for _, op := range j.spec.Operators {
		if op.Type != spec.TypeSink {
			continue
		}
		for i := 0; i < op.Parallelism; i++ {
			done := j.commits.done[checkpoint.TaskID{Operator: op.Name, Index: i}.String()] // 0: none yet
			if id < 0 || done < id {
				id = done
			}
		}
	}
	j.commits.mu.Unlock()
	if id <= 0 {
		return 0, nil, false
	}
	j.lastCommitted.Lock()
	defer j.lastCommitted.Unlock()
	if c := j.lastCommitted.c; c != nil && c.ID == id {
		return id, c.SourceOffsets(), true
	}
	all, err := j.cfg.Store.All(context.Background())
	if err != nil {
		return 0, nil, false
	}
	for _, c := range all {
		if c.ID == id {
			j.lastCommitted.c = c
			return id, c.SourceOffsets(), true
		}
	}
	return 0, nil, false
}

// completedOffsets returns the source offsets of completed checkpoint id.
func (j *Job) completedOffsets(id int64) (checkpoint.Offsets, bool) {
	j.lastCommitted.Lock()
	if c := j.lastCommitted.c; c != nil && c.ID == id {
		j.lastCommitted.Unlock()
		return c.SourceOffsets(), true
	}
	j.lastCommitted.Unlock()
	all, err := j.cfg.Store.All(context.Background())
	if err != nil {
		return nil, false
	}
	for _, c := range all {
		if c.ID == id {
			return c.SourceOffsets(), true
		}
	}
	return nil, false
}

// Epoch counts the deployments and failovers of the job so far.
func (j *Job) Epoch() int64 { return j.epoch.Load() }

// Mode is the checkpointing mode of the checkpoints triggered now.
func (j *Job) Mode() barrier.Mode { return barrier.Mode(j.mode.Load()) }

// SetMode switches the checkpointing mode for the checkpoints triggered
// from now on (exactly-once aligns barriers, at-least-once does not); each
// subtask changes its barrier handler when the first barrier of such a
// checkpoint reaches it.
func (j *Job) SetMode(m barrier.Mode) {
	if barrier.Mode(j.mode.Swap(int32(m))) != m {
		j.coord.SetMode(m.String())
		j.obs.Emit(view.ModeChanged{Mode: m.String()})
	}
}

// ErrNoSuchTask means a fault names a subtask the job does not have.
var ErrNoSuchTask = errors.New("no such subtask")

// Inject makes fault f happen now, in the running job (the keyboard's
// entry point to the fault catalogue; --inject's timed faults take the same
// path). It returns an error when f names no subtask of the job, or when
// too many faults are waiting.
func (j *Job) Inject(f Fault) error {
	f.After, f.AfterRecords = 0, 0
	if f.Spec == "" {
		f.Spec = "fault=" + string(f.Kind)
		if f.Task != "" {
			f.Spec = "task=" + f.Task + "," + f.Spec
		}
	}
	if err := CheckFaultTask(f, j.spec); err != nil {
		return fmt.Errorf("%w: %v", ErrNoSuchTask, err)
	}
	e := &faultEntry{Fault: f, adhoc: true}
	select {
	case j.faultCh <- e:
		return nil
	default:
		return errors.New("too many faults waiting to be injected; try again")
	}
}

func (j *Job) logf(format string, args ...any) { j.cfg.Logf(format, args...) }

func (j *Job) recordsIn(t *task, n int64) {
	if t.src != nil {
		j.in.Add(n)
	}
}

func (j *Job) onCheckpointEvent(e checkpoint.Event) {
	switch e.Type {
	case checkpoint.EventTriggered:
		j.obs.Emit(view.CheckpointTriggered{ID: e.ID, Kind: e.Kind.String()})
	case checkpoint.EventCompleted:
		full, inc := e.Completed.Size()
		j.obs.Emit(view.CheckpointCompleted{
			ID: e.ID, Kind: e.Kind.String(), DurationMs: e.Completed.Duration().Milliseconds(),
			SizeBytes: full, IncrementalBytes: inc,
		})
		if e.Kind == checkpoint.KindSavepoint {
			sp := view.SavepointCompleted{ID: e.ID, SizeBytes: full}
			if d, ok := j.cfg.Store.(interface{ Dir() string }); ok {
				sp.Path = d.Dir()
			}
			j.obs.Emit(sp)
			select {
			case j.savepoints <- e.ID:
			default:
			}
		}
	case checkpoint.EventFailed:
		f := view.CheckpointFailed{ID: e.ID, Reason: e.Reason.String()}
		if e.Err != nil {
			f.Error = e.Err.Error()
		}
		if e.Task.Operator != "" {
			f.Task = e.Task.String()
		}
		j.obs.Emit(f)
	}
}

// current returns the running attempt when its epoch is n.
func (j *Job) current(n int64) *attempt {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.cur != nil && j.cur.epoch.Load() == n {
		return j.cur
	}
	return nil
}

// TriggerSources implements checkpoint.Gateway.
func (j *Job) TriggerSources(n, id int64, kind checkpoint.Kind, at time.Time) {
	if a := j.current(n); a != nil {
		for _, t := range a.sourceList() {
			t.mb.post(mail{kind: mailTrigger, id: id, triggerNs: at.UnixNano(), savepoint: kind == checkpoint.KindSavepoint, mode: j.Mode()})
		}
	}
}

// NotifyComplete implements checkpoint.Gateway.
func (j *Job) NotifyComplete(n, id int64) {
	if a := j.current(n); a != nil {
		for _, t := range a.taskList() {
			t.mb.post(mail{kind: mailComplete, id: id})
		}
	}
}

// NotifyAborted implements checkpoint.Gateway.
func (j *Job) NotifyAborted(n, id int64) {
	if a := j.current(n); a != nil {
		for _, t := range a.taskList() {
			t.mb.post(mail{kind: mailAborted, id: id})
		}
	}
}

// FailJob implements checkpoint.Gateway.
func (j *Job) FailJob(n int64, err error) {
	select {
	case j.coordFail <- attemptErr{attempt: n, err: err}:
	default:
	}
}

// attempt is one deployment of the whole job graph (Flink: an execution
// attempt of every vertex). Its context ends all its goroutines; wg waits
// for them. A region or individual failover replaces some of its tasks
// without ending the attempt; epoch counts those changes (Flink: the
// global modification version) and is what the coordinator knows the
// attempt by, so that nothing of a replaced task counts for a checkpoint
// triggered after it.
type attempt struct {
	n      int64
	epoch  atomic.Int64
	job    *Job
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine of every task instance
	events chan taskEvent

	// mu guards the task lists, which a failover changes while the
	// coordinator's callbacks and the UI read them. Only the job master
	// writes them.
	mu      sync.RWMutex
	tasks   []*task
	sources []*task
	byName  map[string]*task

	sv *supervision // the master's record of it; only the master touches it
}

func (a *attempt) report(ctx context.Context, ev taskEvent) {
	select {
	case a.events <- ev:
	case <-ctx.Done():
	}
}

// taskList and sourceList are copies of the current task instances.
func (a *attempt) taskList() []*task {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return slices.Clone(a.tasks)
}

func (a *attempt) sourceList() []*task {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return slices.Clone(a.sources)
}

// lookup returns the current instance of subtask name, or nil.
func (a *attempt) lookup(name string) *task {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.byName[name]
}

// isCurrent reports whether t is the current instance of its subtask (and
// not one a failover replaced).
func (a *attempt) isCurrent(t *task) bool { return a.lookup(t.name) == t }

// closeBackend closes a subtask instance's state backend when it holds
// resources (the Badger databases); only after every goroutine of the
// instance, its snapshot writers included, has ended.
func (a *attempt) closeBackend(t *task) {
	if c, ok := t.keyed.(interface{ Close() error }); ok {
		if err := c.Close(); err != nil {
			a.job.logf("%s: close state backend: %v", t.name, err)
		}
	}
}

// closeBackends closes the state backends of the current instances.
func (a *attempt) closeBackends() {
	for _, t := range a.taskList() {
		a.closeBackend(t)
	}
}

// stop cancels every goroutine of the attempt and waits for all of them.
func (a *attempt) stop() {
	for _, t := range a.taskList() {
		t.abandon()
	}
	a.cancel()
	a.wg.Wait()
}

func (j *Job) status(s JobStatus, reason string) {
	j.jobStatus.Store(s)
	j.obs.Emit(view.JobStatus{Status: string(s), Reason: reason})
}

// RunOptions say where a run starts.
type RunOptions struct {
	// Resume starts from the newest valid retained checkpoint of this job
	// in the store, when there is one.
	Resume bool
	// FromSavepoint starts from that savepoint (Flink: run -s), also at
	// other parallelisms than it was taken with.
	FromSavepoint int64
	// AllowNonRestoredState lets a savepoint hold state of operators the
	// job no longer has (Flink: --allowNonRestoredState).
	AllowNonRestoredState bool
	// SavepointOnExit takes a savepoint when the run is stopped (ctx ends)
	// before cancelling the job (Flink: stop with savepoint).
	SavepointOnExit bool
	// SavepointTimeout bounds that savepoint (default 30s).
	SavepointTimeout time.Duration
}

// ErrNoSavepoint means --from-savepoint named no savepoint in the store.
var ErrNoSavepoint = errors.New("no such savepoint")

// savepointRestore loads savepoint id for a restore, checking that every
// operator it holds state for is in the job.
func (j *Job) savepointRestore(ctx context.Context, opts RunOptions) (*checkpoint.Completed, map[string][]*backend.SubtaskState, error) {
	all, err := j.store.All(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list savepoints: %w", err)
	}
	var sp *checkpoint.Completed
	var ids []string
	for _, c := range all {
		if c.Kind == checkpoint.KindSavepoint {
			ids = append(ids, strconv.FormatInt(c.ID, 10))
			if c.ID == opts.FromSavepoint {
				sp = c
			}
		}
	}
	if sp == nil {
		have := "none"
		if len(ids) > 0 {
			have = strings.Join(ids, ", ")
		}
		return nil, nil, fmt.Errorf("%w %d in the state dir (savepoints: %s)", ErrNoSavepoint, opts.FromSavepoint, have)
	}
	states, err := j.readRestore(ctx, sp)
	if err != nil {
		return nil, nil, fmt.Errorf("savepoint %d cannot be read: %w", sp.ID, err)
	}
	var unknown []string
	for op := range states {
		if j.spec.Op(op) == nil {
			unknown = append(unknown, op)
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 && !opts.AllowNonRestoredState {
		return nil, nil, fmt.Errorf("savepoint %d has state of operators the job does not have (%s); drop it with --allow-non-restored-state", sp.ID, strings.Join(unknown, ", "))
	}
	for _, op := range unknown {
		delete(states, op)
	}
	return sp, states, nil
}

// ErrNoValidCheckpoint means the store holds checkpoints of the job but
// none can be restored, and a fresh start was not allowed.
var ErrNoValidCheckpoint = errors.New("no valid checkpoint to restore")

// pickRestore finds the newest checkpoint (or savepoint) of this job whose state can be
// read and decoded, newest first, reporting every damaged one it passes
// over (Flink falls back the same way when a checkpoint cannot be read).
// It returns nil when the store has no checkpoint of the job, and
// ErrNoValidCheckpoint when it has some but none is valid, unless
// AllowFreshStart.
func (j *Job) pickRestore(ctx context.Context, report bool) (*checkpoint.Completed, map[string][]*backend.SubtaskState, error) {
	all, err := j.store.All(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list checkpoints: %w", err)
	}
	var damaged []string
	var firstErr error
	invalid := func(id int64, err error) {
		damaged = append(damaged, strconv.FormatInt(id, 10))
		if firstErr == nil {
			firstErr = err
		}
		j.logf("cannot restore checkpoint %d: %v", id, err)
		if report {
			j.obs.Emit(view.CheckpointInvalid{ID: id, Error: err.Error()})
		}
	}
	// Records the store cannot read at all (damaged metadata, or a
	// checkpoint it completed whose record is gone) are passed over first:
	// they are newer than anything listed, or between listed ones.
	var unreadable []int64
	health, _ := j.store.Store.(storeHealth)
	if health != nil {
		ids, err := health.Damaged(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("list damaged checkpoints: %w", err)
		}
		unreadable = ids
	}
	for i := len(all) - 1; i >= 0; i-- {
		c := all[i]
		// Savepoints count too: their completion committed the sink's
		// output as a checkpoint's does.
		if c.Job != j.spec.Name {
			continue
		}
		for k := len(unreadable) - 1; k >= 0 && unreadable[k] > c.ID; k-- {
			invalid(unreadable[k], health.Verify(ctx, unreadable[k]))
			unreadable = unreadable[:k]
		}
		states, err := j.readRestore(ctx, c)
		if err == nil {
			j.replayUntil = j.replayPast(all[i+1:], c)
			return c, states, nil
		}
		invalid(c.ID, err)
	}
	for k := len(unreadable) - 1; k >= 0; k-- {
		invalid(unreadable[k], health.Verify(ctx, unreadable[k]))
	}
	if len(damaged) > 0 && !j.cfg.AllowFreshStart {
		what := "checkpoint " + damaged[0] + " is"
		if len(damaged) > 1 {
			what = "checkpoints " + strings.Join(damaged, ", ") + " are"
		}
		return nil, nil, fmt.Errorf("%w of job %s: %s damaged (the newest: %v); start again from nothing with --fresh, or read the input again from its beginning, beside the output already written, with --allow-fresh-start",
			ErrNoValidCheckpoint, j.spec.Name, what, firstErr)
	}
	return nil, nil, nil
}

// storeHealth is what a checkpoint store can say of the records it cannot
// read (the Badger store): their ids, and why.
type storeHealth interface {
	Damaged(ctx context.Context) ([]int64, error)
	Verify(ctx context.Context, id int64) error
}

// replayPast says how far a restore from c goes back past output that
// newer checkpoints committed (see OperatorContext.Replay): nil when c is
// the newest checkpoint the store completed; the newest newer one's source
// offsets when newer ones are listed (damaged); and empty offsets, "not
// known", when the newest ones are gone (lost, or deleted with
// `faultline checkpoints delete`). newer are the checkpoints listed after c.
func (j *Job) replayPast(newer []*checkpoint.Completed, c *checkpoint.Completed) checkpoint.Offsets {
	if c.ID >= j.store.MaxID() {
		return nil
	}
	var last *checkpoint.Completed
	for _, n := range newer {
		if n.Job == j.spec.Name {
			last = n
		}
	}
	if last == nil || last.ID < j.store.MaxID() {
		return checkpoint.Offsets{}
	}
	return last.SourceOffsets()
}

// markRestored records and announces a restore from c (nil: none, a fresh
// start) of the subtasks in scope (nil: the whole job).
func (j *Job) markRestored(res *Result, c *checkpoint.Completed, why string, scope ...string) {
	f := view.Restored{Reason: why, Tasks: scope}
	switch {
	case scope != nil:
	case c != nil:
		j.takeBackLosses(c.ID)
	default:
		j.takeBackLosses(0)
	}
	if c == nil {
		f.Reason = why + ": no checkpoint of job " + j.spec.Name + " to restore, starting from the beginning"
		j.obs.Emit(f)
		return
	}
	j.coord.MarkRestored(c.ID)
	res.RestoredFrom = append(res.RestoredFrom, c.ID)
	offsets := c.SourceOffsets()
	if scope != nil {
		offsets = checkpoint.Offsets{}
		for _, name := range scope {
			for id, ack := range c.Tasks {
				if id.String() != name {
					continue
				}
				for topic, parts := range ack.Offsets {
					if offsets[topic] == nil {
						offsets[topic] = map[int32]int64{}
					}
					maps.Copy(offsets[topic], parts)
				}
			}
		}
	}
	f.Checkpoint = c.ID
	shown := offsetsJSON(offsets)
	f.Offsets = &shown
	j.obs.Emit(f)
}

// Run runs the job until it finishes, fails for good, or ctx ends
// (CANCELED).
func (j *Job) Run(ctx context.Context, opts RunOptions) (*Result, error) {
	start := j.clk.Now()
	res := &Result{}
	j.status(JobCreated, "")
	var restore *checkpoint.Completed
	var states map[string][]*backend.SubtaskState
	reason := "job submitted"
	if opts.FromSavepoint > 0 {
		var err error
		if restore, states, err = j.savepointRestore(ctx, opts); err != nil {
			j.status(JobFailed, err.Error())
			return nil, err
		}
		j.markRestored(res, restore, "from savepoint")
		res.Resumed = restore.ID
		reason = fmt.Sprintf("started from savepoint %d", restore.ID)
	} else if opts.Resume {
		var err error
		if restore, states, err = j.pickRestore(ctx, true); err != nil {
			j.status(JobFailed, err.Error())
			return nil, err
		}
		j.markRestored(res, restore, "resumed")
		if restore != nil {
			res.Resumed = restore.ID
			reason = fmt.Sprintf("resumed from checkpoint %d", restore.ID)
		}
	}
	var timers []clock.Timer
	for _, f := range j.faults {
		if f.AfterRecords == 0 {
			f := f
			timers = append(timers, j.clk.AfterFunc(f.After, func() { j.faultCh <- f }))
		}
	}
	defer func() {
		for _, t := range timers {
			t.Stop()
		}
	}()
	var queued []*faultEntry
	for n := int64(1); ; n++ {
		a, err := j.deploy(ctx, n, restore, states)
		if err != nil {
			if ctx.Err() != nil {
				j.status(JobCanceled, "canceled while restarting")
				res.Status = JobCanceled
				break
			}
			j.status(JobFailed, err.Error())
			return nil, err
		}
		j.status(JobRunning, reason)
		for _, f := range queued {
			j.deliver(a, f)
		}
		queued = nil
		j.coord.Start(a.epoch.Load(), a.taskIDs())
		out := j.supervise(ctx, a, res)
		if out.kind == outCanceled && opts.SavepointOnExit {
			res.ExitSavepoint = j.stopWithSavepoint(a, opts.SavepointTimeout)
		}
		switch out.kind {
		case outError:
			j.coord.Stop(checkpoint.ReasonJobFailover, out.err)
			j.teardown(a, nil)
			j.status(JobFailed, out.err.Error())
			return nil, out.err
		case outFinished:
			j.coord.Stop(checkpoint.ReasonJobFailover, errors.New("job finished"))
			j.teardown(a, nil)
			if err := j.finalCommit(a); err != nil {
				j.status(JobFailed, err.Error())
				return nil, err
			}
			j.status(JobFinished, "every task finished")
			res.Status = JobFinished
		case outCanceled:
			j.coord.Stop(checkpoint.ReasonJobFailover, errors.New("job canceled"))
			j.teardown(a, nil)
			j.status(JobCanceled, "canceled by the user")
			res.Status = JobCanceled
		case outFailed:
			d := out.d
			if d.GiveUp != "" {
				j.status(JobFailing, out.err.Error())
				j.teardown(a, out.fault)
				res.GaveUp = d.GiveUp
				j.status(JobFailed, res.GaveUp)
				res.Status = JobFailed
				break
			}
			j.status(JobRestarting, out.err.Error())
			queued = append(queued, j.teardown(a, out.fault)...)
			all := j.handler.AllTasks()
			j.emitFailover(out.task, all)
			j.emitRestartScheduled(d.Delay, res.Restarts, all)
			if !j.sleep(ctx, d.Delay) || ctx.Err() != nil {
				j.status(JobCanceled, "canceled while restarting")
				res.Status = JobCanceled
				break
			}
			var err error
			if restore, states, err = j.pickRestore(context.Background(), true); err != nil {
				j.status(JobFailed, err.Error())
				return nil, err
			}
			j.restarts.update(func(v *RestartView) { v.NextRestartAt = time.Time{} })
			reason = fmt.Sprintf("restarted after failure of %s", restart.OrJob(out.task))
			j.markRestored(res, restore, reason)
			continue
		}
		break
	}
	if res.Status == JobFinished {
		latest, err := j.store.Latest(context.Background())
		if err != nil {
			return nil, err
		}
		res.Latest = latest
	} else {
		// Leave the outputs as a restart from the newest valid checkpoint
		// would, and check the output against that checkpoint.
		latest, states, err := j.pickRestore(context.Background(), false)
		if err != nil && !errors.Is(err, ErrNoValidCheckpoint) {
			return nil, err
		}
		res.Latest = latest
		if err := j.settleOutputs(states); err != nil {
			how := string(res.Status)
			if res.GaveUp != "" {
				how += " (" + res.GaveUp + ")"
			}
			return nil, fmt.Errorf("the job ended %s, and its outputs could not be left as its last checkpoint had them; the next run settles them: %w", how, err)
		}
	}
	res.Elapsed = j.clk.Now().Sub(start)
	res.RecordsIn = j.in.Load()
	j.flushLosses()
	res.LostByFailover = j.RestartView().LostRecords
	res.Failover = string(j.handler.Failover())
	j.faultsMu.Lock()
	res.Failures = append(res.Failures, j.injected...)
	j.faultsMu.Unlock()
	sort.SliceStable(res.Failures, func(a, b int) bool { return res.Failures[a].At < res.Failures[b].At })
	res.BadSkipped, res.BadDeadLettered = j.bad.Counts()
	res.StateTTL = j.StateTTL()
	res.ReplaySkipped = j.bad.replaySkipped.Load()
	res.Checkpoints = j.coord.Stats()
	return res, nil
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
	s := StateTTLStatus{NotJoined: j.bad.ttl.notJoined.Load(), Expired: j.bad.ttl.expired.Load()}
	for _, op := range j.spec.Operators {
		if op.Type == spec.TypeJoin {
			s.TTL = max(s.TTL, op.StateTTL)
		}
	}
	return s
}

// offsetsJSON is o as events show it: partitions as strings.
func offsetsJSON(o checkpoint.Offsets) view.Offsets {
	out := view.Offsets{}
	for topic, parts := range o {
		m := map[string]int64{}
		for p, off := range parts {
			m[strconv.Itoa(int(p))] = off
		}
		out[topic] = m
	}
	return out
}

func (j *Job) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	done := make(chan struct{})
	t := j.clk.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return true
	case <-ctx.Done():
		t.Stop()
		return false
	}
}

// teardown cancels attempt a and waits for all its goroutines. first is the
// injected fault whose failure caused it, if any. It returns the timed
// faults that fired in the attempt without taking effect, to be delivered
// to the next one.
func (j *Job) teardown(a *attempt, first *faultEntry) (again []*faultEntry) {
	for _, t := range a.taskList() {
		if s := t.m.Status(); s == TaskRunning || s == TaskDeploying {
			t.setStatus(TaskCanceling, "the attempt is torn down")
		}
	}
	a.stop()
	a.closeBackends()
	j.mu.Lock()
	j.cur = nil
	j.mu.Unlock()
	// Failures the supervisor did not take (it stopped at the first) were
	// not acted on: an injected fault among them fires again later.
	pending := a.sv.deferred
	a.sv.deferred = nil
	for {
		select {
		case ev := <-a.events:
			pending = append(pending, ev)
			continue
		default:
		}
		break
	}
	for _, ev := range pending {
		if ev.kind == evFailed && ev.fault != nil && ev.fault != first {
			ev.fault.fired.Store(false)
		}
	}
	again = append(again, a.sv.queued...)
	a.sv.queued = nil
	for _, f := range j.faults {
		if f.AfterRecords == 0 && f.delivered.Load() && !f.fired.Load() {
			f.delivered.Store(false)
			again = append(again, f)
		}
	}
	if j.cfg.AfterTeardown != nil {
		j.cfg.AfterTeardown(a.n, j.live.Load())
	}
	return again
}

type outcomeKind int

const (
	outFinished outcomeKind = iota
	outCanceled
	outFailed
	outError // the job cannot go on: a restart found nothing to restore
)

type outcome struct {
	kind  outcomeKind
	task  string
	err   error
	fault *faultEntry
	d     restart.Decision // outFailed: what the failure handler decided
}

// supervise runs the attempt until its end: all tasks finished, a failure
// that fails or restarts the whole job, the coordinator giving up, or
// cancellation. Failures that the failover strategy handles by restarting
// part of the job are handled here, and the attempt goes on.
func (j *Job) supervise(ctx context.Context, a *attempt, res *Result) outcome {
	sv := a.sv
	for {
		if len(sv.deferred) > 0 {
			ev := sv.deferred[0]
			sv.deferred = sv.deferred[1:]
			if !a.isCurrent(ev.task) {
				if ev.fault != nil {
					ev.fault.fired.Store(false)
				}
				continue
			}
			out := outcome{kind: outFailed, task: ev.task.name, err: ev.err, fault: ev.fault}
			out.d = j.decide(out, res)
			if out.d.GiveUp != "" || out.d.Tasks == nil {
				return out
			}
			ok, err := j.restartPart(ctx, a, out.d, res, sv, ev.task.name)
			switch {
			case err != nil:
				return outcome{kind: outError, err: err}
			case !ok:
				return outcome{kind: outCanceled}
			}
			continue
		}
		select {
		case ev := <-a.events:
			j.track(a, ev, sv)
			if len(sv.finished) == len(a.taskList()) {
				return outcome{kind: outFinished}
			}
		case f := <-j.faultCh:
			j.deliver(a, f)
		case e := <-j.coordFail:
			if e.attempt == a.epoch.Load() {
				out := outcome{kind: outFailed, err: e.err}
				out.d = j.decide(out, res)
				return out
			}
		case <-ctx.Done():
			return outcome{kind: outCanceled}
		}
	}
}

// noteFault records an injected fault that fails no task, for the
// report's failures.
func (j *Job) noteFault(task string, kind FaultKind) {
	j.faultsMu.Lock()
	j.injected = append(j.injected, FailureInfo{At: j.obs.Since(), Task: task, Fault: string(kind)})
	j.faultsMu.Unlock()
}

// jobFault makes a fault that acts on the whole job happen.
func (j *Job) jobFault(f *faultEntry) {
	switch f.Kind {
	case FaultSavepoint:
		if _, err := j.coord.Trigger(checkpoint.KindSavepoint); err != nil {
			j.obs.Emit(view.SavepointFailed{Error: err.Error()})
		}
	case FaultStorageFail:
		j.storageFails.Add(int64(f.Count))
	case FaultCorruptCheckpoint:
		c, err := j.corruptNewest()
		f := view.CheckpointCorrupted{Fault: string(FaultCorruptCheckpoint)}
		if err != nil {
			f.Error = err.Error()
		} else {
			f.ID = &c
		}
		j.obs.Emit(f)
	case FaultCrash:
		j.logf("injected crash: the process dies now")
		j.cfg.Crash()
	case FaultPoison:
		e := view.PoisonWritten{Topic: f.Topic, Partition: f.Partition}
		if j.cfg.Env.Poison == nil {
			e.Error = "this input cannot take a poison record"
		} else if off, err := j.cfg.Env.Poison(f.Topic, f.Partition); err != nil {
			e.Error = err.Error()
		} else {
			e.Offset = &off
		}
		j.obs.Emit(e)
	case FaultBrokerDown:
		e := view.BrokerDown{ForMs: f.For.Milliseconds()}
		if j.cfg.BrokerDown == nil {
			e.Error = "no embedded broker to take down (with --brokers, stop your own)"
		} else if err := j.cfg.BrokerDown(f.For); err != nil {
			e.Error = err.Error()
		}
		j.obs.Emit(e)
	}
}

// corruptNewest damages one state blob of the newest retained checkpoint
// of the job and returns its id.
func (j *Job) corruptNewest() (int64, error) {
	c, err := j.store.Latest(context.Background())
	if err != nil {
		return 0, err
	}
	if c == nil {
		return 0, errors.New("no checkpoint to damage yet")
	}
	corrupter, ok := j.cfg.Store.(interface {
		Corrupt(key string) error
	})
	if !ok {
		return 0, fmt.Errorf("this checkpoint store cannot be damaged on purpose")
	}
	for _, id := range c.SortedTasks() {
		if a := c.Tasks[id]; !a.Finished && a.Handle.Size > 0 {
			return c.ID, corrupter.Corrupt(a.Handle.Key)
		}
	}
	return 0, fmt.Errorf("checkpoint %d has no state to damage", c.ID)
}

// operatorStates gathers the operator state of an operator's subtasks in
// a checkpoint: name → the value each subtask had (Flink: union list
// state), as every new subtask is handed it.
func operatorStates(ss []*backend.SubtaskState) map[string][][]byte {
	m := map[string][][]byte{}
	for _, s := range ss {
		for name, v := range s.Operator {
			m[name] = append(m[name], v)
		}
	}
	return m
}

// faultyStore fails checkpoint writes while the job's storage-fail
// counter is above zero (the storage-fail fault).
type faultyStore struct {
	checkpoint.Store
	fails *atomic.Int64
}

func (s faultyStore) PutState(ctx context.Context, id int64, task checkpoint.TaskID, data []byte) (checkpoint.Handle, error) {
	return s.PutStateParts(ctx, id, task, [][]byte{data})
}

// PutStateParts writes a blob in parts where the store takes them, and
// joined otherwise.
func (s faultyStore) PutStateParts(ctx context.Context, id int64, task checkpoint.TaskID, parts [][]byte) (checkpoint.Handle, error) {
	if s.fails.Add(-1) >= 0 {
		return checkpoint.Handle{}, fmt.Errorf("injected storage failure writing checkpoint %d", id)
	}
	s.fails.Add(1)
	if ps, ok := s.Store.(checkpoint.PartsStorage); ok {
		return ps.PutStateParts(ctx, id, task, parts)
	}
	if len(parts) == 1 {
		return s.Store.PutState(ctx, id, task, parts[0])
	}
	return s.Store.PutState(ctx, id, task, bytes.Join(parts, nil))
}

// stopWithSavepoint takes a savepoint of the running attempt before it is
// cancelled, and returns its id (0 when it failed).
func (j *Job) stopWithSavepoint(a *attempt, timeout time.Duration) int64 {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	for len(j.savepoints) > 0 {
		<-j.savepoints
	}
	id, err := j.coord.Trigger(checkpoint.KindSavepoint)
	if err != nil {
		j.obs.Emit(view.SavepointFailed{Error: err.Error()})
		return 0
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case done := <-j.savepoints:
			if done == id {
				return id
			}
		case ev := <-a.events:
			if ev.kind == evFailed {
				j.obs.Emit(view.SavepointFailed{ID: &id, Error: ev.err.Error()})
				return 0
			}
		case <-deadline.C:
			j.obs.Emit(view.SavepointFailed{ID: &id, Error: fmt.Sprintf("not complete after %s", timeout)})
			return 0
		}
	}
}

// deliver hands a timed fault to its task; a task that already finished is
// past harm.
func (j *Job) deliver(a *attempt, f *faultEntry) {
	if f.adhoc && !slices.Contains(j.faults, f) {
		// Known from now on, so that a failover re-arms it like the others.
		j.faults = append(j.faults, f)
	}
	if f.Kind.JobLevel() {
		f.fired.Store(true)
		j.obs.Emit(view.FaultInjected{Fault: string(f.Kind), Spec: f.Spec})
		j.noteFault("", f.Kind)
		j.jobFault(f)
		return
	}
	j.obs.Emit(view.FaultInjected{Task: f.Task, Fault: string(f.Kind), Spec: f.Spec})
	if t := a.lookup(f.Task); t != nil {
		f.delivered.Store(true)
		t.mb.post(mail{kind: mailFault, entry: f})
	}
}

func (a *attempt) taskIDs() []checkpoint.TaskID {
	ts := a.taskList()
	ids := make([]checkpoint.TaskID, len(ts))
	for i, t := range ts {
		ids[i] = t.id
	}
	return ids
}

// readRestore loads the state of every subtask in checkpoint c, by operator.
func (j *Job) readRestore(ctx context.Context, c *checkpoint.Completed) (map[string][]*backend.SubtaskState, error) {
	out := map[string][]*backend.SubtaskState{}
	for _, id := range c.SortedTasks() {
		ack := c.Tasks[id]
		var s *backend.SubtaskState
		var keyed [][]byte
		for _, h := range ack.Blobs() {
			data, err := j.store.GetState(ctx, h)
			if err != nil {
				return nil, fmt.Errorf("checkpoint %d: state of %s: %w", c.ID, id, err)
			}
			if s, err = backend.DecodeSubtaskState(data); err != nil {
				return nil, fmt.Errorf("checkpoint %d: state of %s: %w", c.ID, id, err)
			}
			keyed = append(keyed, s.Keyed)
		}
		if len(keyed) > 1 {
			// An incremental snapshot: its full base and deltas, composed.
			composed, err := backend.ComposeKeyed(keyed)
			if err != nil {
				return nil, fmt.Errorf("checkpoint %d: state of %s: compose %d incremental snapshots: %w", c.ID, id, len(keyed), err)
			}
			s.Keyed = composed
		}
		out[id.Operator] = append(out[id.Operator], s)
	}
	return out, nil
}

// deploy builds and starts every subtask of attempt n.
func (j *Job) deploy(ctx context.Context, n int64, restore *checkpoint.Completed, states map[string][]*backend.SubtaskState) (*attempt, error) {
	// The attempt ends when the master cancels it (teardown), not with the
	// run's context: stopping with a savepoint needs it running a moment longer.
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a := &attempt{n: n, job: j, ctx: actx, cancel: cancel, byName: map[string]*task{},
		sv: &supervision{finished: map[string]bool{}, atEnd: map[string]bool{}}}
	a.epoch.Store(j.epoch.Add(1))
	var built []*task
	fail := func(err error) (*attempt, error) {
		for _, t := range built {
			a.closeBackend(t)
		}
		cancel()
		return nil, err
	}
	for _, op := range j.spec.Operators {
		for i := 0; i < op.Parallelism; i++ {
			t, err := j.newTask(a, op, i, restore, states)
			if err != nil {
				return fail(err)
			}
			built = append(built, t)
		}
	}
	j.wire(built)
	a.events = make(chan taskEvent, 4*len(built))
	a.mu.Lock()
	for _, t := range built {
		a.tasks = append(a.tasks, t)
		a.byName[t.name] = t
		if t.src != nil {
			a.sources = append(a.sources, t)
		}
	}
	a.mu.Unlock()
	j.mu.Lock()
	j.cur = a
	j.mu.Unlock()
	for _, t := range built {
		j.start(t)
	}
	return a, nil
}

// newTask builds instance of subtask op/i for attempt a, with its state
// from restore (nil: none), its keyed backend and its faults. It is not
// wired nor started.
func (j *Job) newTask(a *attempt, op *spec.Operator, i int, restore *checkpoint.Completed, states map[string][]*backend.SubtaskState) (*task, error) {
	maxP := j.spec.MaxParallelism
	epoch := a.epoch.Load()
	id := checkpoint.TaskID{Operator: op.Name, Index: i}
	t := &task{
		id: id, name: id.String(), a: a, op: op, gate: newGate(), deploys: epoch,
		m: j.metrics[id.String()], lastTrig: map[int64]barrierInfo{}, faultAt: 1<<63 - 1,
	}
	t.ctx, t.cancel = context.WithCancel(a.ctx)
	t.mb = newMailbox(t.gate)
	_, t.stepSeen, _ = j.tempo.get()
	if op.Type == spec.TypeSource {
		src, err := j.cfg.Env.source(op.Topic)
		if err != nil {
			t.cancel()
			return nil, err
		}
		t.src = src
	} else {
		oper, err := newOperator(op, j.cfg.Env, j.bad)
		if err != nil {
			t.cancel()
			return nil, err
		}
		t.oper = oper
		t.one, _ = oper.(OneInput)
		t.two, _ = oper.(TwoInput)
	}
	for _, in := range op.Inputs {
		if in.Edge != spec.Hash {
			continue
		}
		kgs := backend.RangeFor(maxP, op.Parallelism, i)
		if j.cfg.StateBackend == "badger" {
			dir := filepath.Join(j.cfg.WorkDir, fmt.Sprintf("attempt-%d", epoch), fmt.Sprintf("%s-%d", op.Name, i))
			b, err := backend.NewBadger(dir, maxP, kgs)
			if err != nil {
				t.cancel()
				return nil, fmt.Errorf("%s: state backend: %w", t.name, err)
			}
			t.keyed = b
		} else {
			t.keyed = backend.NewHeap(maxP, kgs)
		}
		t.prefetch, _ = t.keyed.(backend.Prefetcher)
		t.grouped, _ = t.keyed.(backend.GroupedKeys)
		break
	}
	if ss := states[op.Name]; ss != nil {
		r := &restoredState{from: restore.ID, operator: operatorStates(ss), replay: j.replayUntil}
		for _, s := range ss {
			if len(s.Keyed) > 0 {
				r.keyed = append(r.keyed, s.Keyed)
			}
		}
		t.restored = r
	}
	for _, f := range j.faults {
		if f.Task == t.name && !f.fired.Load() {
			t.faults = append(t.faults, f)
			if f.AfterRecords > 0 {
				t.faultAt = min(t.faultAt, f.AfterRecords)
			}
		}
	}
	return t, nil
}

// wire connects the subtasks in set with new channels, one per pair of
// connected subtasks, and gives each its barrier handler. set must be
// closed under the job's edges (the whole job, or pipelined regions): every
// subtask connected to one in set is in set.
func (j *Job) wire(set []*task) {
	byOp := map[string][]*task{}
	for _, t := range set {
		byOp[t.op.Name] = append(byOp[t.op.Name], t)
	}
	index := func(ts []*task, i int) *task {
		for _, t := range ts {
			if t.id.Index == i {
				return t
			}
		}
		return nil
	}
	for _, op := range j.spec.Operators {
		for k, in := range op.Inputs {
			ups, downs := byOp[in.From], byOp[op.Name]
			for _, up := range ups {
				var chans []*Channel
				if in.Edge == spec.Forward {
					down := index(downs, up.id.Index)
					ch := newChannel(j.cfg.ChannelCapacity, down.gate, &up.m.BackPressuredNanos)
					down.inputs = append(down.inputs, &inputChannel{from: up.name, ch: ch, logical: k})
					chans = []*Channel{ch}
				} else {
					// Every downstream subtask is in set, in index order.
					for i := 0; i < op.Parallelism; i++ {
						down := index(downs, i)
						ch := newChannel(j.cfg.ChannelCapacity, down.gate, &up.m.BackPressuredNanos)
						down.inputs = append(down.inputs, &inputChannel{from: up.name, ch: ch, logical: k})
						chans = append(chans, ch)
					}
				}
				up.outputs = append(up.outputs, newOutput(in, j.spec.MaxParallelism, chans, j.cfg.BatchSize, up.id.Index))
			}
		}
	}
	for _, t := range set {
		if t.src == nil {
			t.handler = j.newHandler(len(t.inputs))
		}
	}
}

// newHandler is a barrier handler in the job's current mode that ignores
// every checkpoint issued so far: a subtask deployed now takes part only in
// the checkpoints triggered after it, and barriers of older ones still in
// its input channels must not make it align.
func (j *Job) newHandler(inputs int) barrier.Handler {
	h := barrier.New(j.Mode(), inputs, time.Now)
	if last := j.coord.NextID() - 1; last > 0 {
		h.Abort(last)
	}
	return h
}

// start runs subtask instance t in its own goroutine.
func (j *Job) start(t *task) {
	a := t.a
	t.m.Deploys.Add(1)
	a.wg.Add(1)
	t.done.Add(1)
	j.live.Add(1)
	go func() {
		defer func() {
			j.live.Add(-1)
			t.done.Done()
			a.wg.Done()
		}()
		t.run(t.ctx)
	}()
}

// settleOutputs leaves the outputs as a restart from a checkpoint with
// these states would: the transactions it pre-committed are committed and
// every later one is aborted. A run that stops without finishing calls it, so that what is
// committed is exactly what its last completed checkpoint covers.
func (j *Job) settleOutputs(states map[string][]*backend.SubtaskState) error {
	for _, op := range j.spec.Operators {
		if op.Type != spec.TypeSink {
			continue
		}
		out, err := j.cfg.Env.output(op.Topic)
		if err != nil {
			return err
		}
		ops := operatorStates(states[op.Name])
		all := make([]int, op.Parallelism)
		for i := range all {
			all[i] = i
		}
		redo := func(name string) [][]byte { return ops[name] }
		if _, err := recoverSink(out, j.cfg.Env.TxnPrefix, op.Name, ops[sinkStateName], redo, func(int) bool { return true }, all); err != nil {
			return err
		}
	}
	return nil
}

// finalCommit commits what the sinks prepared at the end of their input,
// once every task of the job has finished (Flink: the final commit of a
// bounded job).
func (j *Job) finalCommit(a *attempt) error {
	for _, t := range a.taskList() {
		s, ok := t.oper.(*sinkOp)
		if !ok {
			continue
		}
		for _, c := range s.FinalCommittables() {
			if err := s.out.Commit(c); err != nil {
				return fmt.Errorf("%s: final commit: %w", t.name, err)
			}
		}
	}
	return nil
}
