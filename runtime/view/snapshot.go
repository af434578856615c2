package view

import "time"

// The terminal UI's read-only view of a running job: one Snapshot a frame,
// plain data copied from the engine by the command line's adapter.

// Tempo is how fast the whole dataflow moves: the UI's slow motion and
// single step, so that a trainer can stop the world while explaining a
// barrier. It has no Flink counterpart.
type Tempo int32

// Tempos, slowest last.
const (
	// TempoNormal is full speed.
	TempoNormal Tempo = iota
	// TempoSlow adds a short delay before every batch a task handles.
	TempoSlow
	// TempoSlower adds a long delay before every batch.
	TempoSlower
	// TempoFrozen stops every task before its next batch; a step lets each
	// handle one.
	TempoFrozen
)

func (t Tempo) String() string {
	switch t {
	case TempoSlow:
		return "slow"
	case TempoSlower:
		return "slower"
	case TempoFrozen:
		return "frozen"
	}
	return "normal"
}

// The job's clock runs at these shares of the wall clock's in slow motion
// (and while a step runs in a frozen world), and stands still while the
// world is frozen: a checkpoint's interval, its timeout, a restart delay
// and a slow fault stretch with the slowed world, and the durations shown
// leave out the time a person spent reading a frozen screen. They are not
// the share of records that still flow (a source reads one record per
// wait in slow motion): on that clock the next checkpoint would come
// minutes later.
const (
	SlowClockRate   = 0.5
	SlowerClockRate = 0.25
)

// ClockRate is the job clock's rate at tempo t, with a step running in a
// frozen world or not: 1 at full speed, 0 frozen.
func (t Tempo) ClockRate(stepping bool) float64 {
	switch t {
	case TempoSlow:
		return SlowClockRate
	case TempoSlower:
		return SlowerClockRate
	case TempoFrozen:
		if stepping {
			return SlowClockRate
		}
		return 0
	}
	return 1
}

// FaultChoice is one entry of the fault menu.
type FaultChoice struct {
	Kind        string // the fault catalogue's name: panic, error, slow, …
	Description string // one line, e.g. "the task panics"
	// JobLevel faults act on the whole job (crash, storage-fail,
	// corrupt-checkpoint, broker-down, savepoint); the others act on the
	// selected subtask.
	JobLevel bool
	// Available is false when the fault cannot happen in this run (e.g.
	// broker-down with an external Kafka); Why says why.
	Available bool
	Why       string
}

// Snapshot is everything one frame shows, sampled at Now.
type Snapshot struct {
	// Now is when the snapshot was taken; countdowns and "age" columns are
	// computed against it, never against time.Now in View.
	Now time.Time
	// JobNow is the job's clock at Now: it stops while the world is frozen
	// and runs slower in slow motion. Alignment.Since, SlowUntil and
	// NextRestartAt are times on it, and their countdowns are computed
	// against JobNow.
	JobNow time.Time
	// Started is when the run started: event times (Stamped.At) are
	// offsets from it.
	Started time.Time

	Job       JobInfo
	Operators []Operator      // in job spec order, which is topological
	Tasks     map[string]Task // by name, "operator/index"
	// Checkpoints are the coordinator's statistics: counts, and History
	// newest first (pending ones included, with their acknowledgements).
	Checkpoints Checkpoints
	Restart     Restart
	Verify      Verify
	Input       Input
	// Tour is the guided tour running on the job, nil when none.
	Tour *Tour
}

// CheckpointSettings are the checkpointing configuration a job's info
// shows besides its interval and mode (Flink: Checkpoints → Configuration):
// execution.checkpointing.timeout, .min-pause, .max-concurrent-checkpoints,
// .tolerable-failed-checkpoints, .unaligned.enabled and .num-retained;
// CheckpointStorage is where completed checkpoints live
// (state.checkpoint-storage): "filesystem" or "jobmanager".
type CheckpointSettings struct {
	CheckpointTimeout time.Duration
	MinPause          time.Duration
	MaxConcurrent     int
	TolerableFailures int
	Unaligned         bool
	Retained          int
	CheckpointStorage string
}

// JobInfo is the header line's content.
type JobInfo struct {
	Name   string // "orders"
	Title  string // "orders ⋈ payments"
	Status string // runtime.JobStatus: CREATED, RUNNING, RESTARTING, FAILING, FAILED, FINISHED, CANCELED
	// StatusSince is when the job entered Status (wall clock).
	StatusSince time.Time
	// Mode is the checkpointing mode of the checkpoints being triggered
	// now: "exactly-once" (aligned), "exactly-once unaligned" or
	// "at-least-once".
	Mode string
	// AlignedTimeout is the aligned-checkpoint timeout (0: never): an
	// aligned checkpoint whose alignment lasts longer switches to
	// unaligned.
	AlignedTimeout time.Duration
	Interval       time.Duration // 0: periodic checkpoints off
	Broker         string        // "127.0.0.1:9092"
	Embedded       bool          // the embedded broker, not --brokers
	StateBackend   string        // "heap" or "badger"
	Incremental    bool
	StateDir       string
	// CheckpointSettings are the rest of the checkpointing configuration.
	CheckpointSettings
	// Attempt counts deployments of the job (1 before any restart).
	Attempt int64
	// FreezeLimit is how long the world can stay frozen before the job
	// fails over (0: never), and FreezeLimitWhy what then expires: the
	// sink's open transaction, whose timeout runs on the broker's clock (a
	// checkpoint's timeout runs on the job's, which a freeze stops).
	FreezeLimit    time.Duration
	FreezeLimitWhy string
	// StateTTL is the join's state TTL (0: sides wait for ever).
	StateTTL time.Duration
	// Remote is the REST API an attached job is watched through ("" for
	// a run's own job): what the API does not expose (the input queues,
	// the barriers in flight) is not known.
	Remote string
}

// Operator is one vertex of the job graph.
type Operator struct {
	Name        string `json:"name"`
	Type        string `json:"type"` // source, parse, join, aggregate, enrich, sink
	Parallelism int    `json:"parallelism"`
	Inputs      []Edge `json:"inputs,omitempty"`
	Topic       string `json:"topic,omitempty"` // sources: topic read; sinks: topic written
}

// Edge is one input of an operator.
type Edge struct {
	From string `json:"from"`          // upstream operator
	Kind string `json:"kind"`          // forward, hash, rebalance, broadcast
	Key  string `json:"key,omitempty"` // hash: the field the records are keyed by
}

// BackPressure is Flink's back-pressure level of a subtask: how much of the
// last sample period it spent blocked sending to a full output channel.
type BackPressure string

// Flink's thresholds: OK up to 10 %, LOW up to 50 %, HIGH above.
const (
	BackPressureOK   BackPressure = "OK"
	BackPressureLow  BackPressure = "LOW"
	BackPressureHigh BackPressure = "HIGH"
)

// BackPressureOf is Flink's level of a back-pressured share of time: OK up
// to 10%, LOW up to 50%, HIGH above.
func BackPressureOf(ratio float64) BackPressure {
	switch {
	case ratio > 0.5:
		return BackPressureHigh
	case ratio > 0.1:
		return BackPressureLow
	}
	return BackPressureOK
}

// Task is one subtask's state for drawing.
type Task struct {
	Name     string // "join/1"
	Operator string
	Index    int
	Status   string // runtime.TaskStatus: CREATED, DEPLOYING, RUNNING, FINISHED, CANCELING, CANCELED, FAILED

	RecordsIn, RecordsOut int64   // totals over the run
	RateIn                float64 // records/s handled over the last sample period
	// Busy is the fraction of the last sample period spent working (not
	// waiting for input); BackPressureRatio the fraction blocked on output;
	// the rest was idle (Flink: busyTimeMsPerSecond,
	// backPressuredTimeMsPerSecond, idleTimeMsPerSecond, over 1000).
	Busy              float64
	BackPressureRatio float64
	BackPressure      BackPressure

	// Inputs are the subtask's input channels, one per upstream subtask,
	// in order: the first input's channels, then the second's. Each holds
	// its queue (elements sent and not yet handled) with the barriers at
	// their positions, whether alignment blocks it, and how many elements
	// it holds back. Empty for sources.
	Inputs []InputView
	// Alignment is the checkpoint this subtask is aligning, if any, and
	// since when on the job's clock (alignment time so far = JobNow -
	// Since).
	Alignment AlignmentView
	// Offsets are, for sources, the next offset to read per partition.
	Offsets map[int32]int64
	// Lag is, for a Kafka source, the most records any of its partitions
	// holds past the next one it reads (Flink: records-lag-max); -1 when
	// not known (other subtasks, before the first fetch).
	Lag int64
	// Restarts counts how many times this subtask was redeployed.
	Restarts int
	// Watermark is the subtask's current input watermark (event-time Unix
	// ms; 0: none, or an operator that keeps none).
	Watermark int64
	// SlowFactor is, while a slow fault holds the subtask, its factor (0:
	// not slowed); SlowUntil when it ends, on the job's clock.
	SlowFactor float64
	SlowUntil  time.Time
}

// Restart is the restart strategy's and the failover strategy's state.
type Restart struct {
	Strategy    string // "fixed-delay", "failure-rate", "exponential-delay", "none"
	Description string // the strategy with its parameters, e.g. "fixed-delay (attempts 3, delay 1s)"
	Status      RestartStatus
	// NextRestartAt is when the scheduled restart happens (zero when none
	// is scheduled), on the job's clock: the countdown is NextRestartAt -
	// Snapshot.JobNow.
	NextRestartAt time.Time
	// Failover is the failover strategy: "full", "region", "individual" or
	// "none".
	Failover string
	// LastRestarted are the subtasks the last failover restarted (empty
	// before the first), and LastFailed the subtask whose failure caused it
	// ("" for a job-wide failure) with its error.
	LastRestarted []string
	LastFailed    string
	LastError     string
	Restarts      int // restarts so far
	// GaveUp is why the job will not restart again ("" while it may).
	GaveUp string
	// LostRecords counts the records individual failover lost (it does not
	// replay input); 0 with the other strategies.
	LostRecords int64
	// Failures are the newest failures, newest first, at most
	// FailureHistory of them (Flink: the exception history).
	Failures []Failure
}

// FailureHistory is how many failures Restart keeps (Flink's
// web.exception-history-size default).
const FailureHistory = 16

// Failure is one failure of the job: when (wall clock), the subtask that
// failed ("" for a job-wide failure), its error, and the fault that caused
// it when one was injected.
type Failure struct {
	At    time.Time
	Task  string
	Error string
	Fault string
}

// Verify is the live verification line: what a read_committed consumer of
// the output topic sees, checked against the input.
type Verify struct {
	Available  bool // false until the first check, or when it cannot run
	Committed  int  // records in the committed output
	Duplicates int  // order ids seen more than once
	Lost       int  // paid orders covered by the last completed checkpoint, not in the output
	// DuplicatesAtLeastOnce are those of Duplicates with a copy committed
	// while the job ran at-least-once: expected there, not a fault.
	DuplicatesAtLeastOnce int
	// AsOf is the checkpoint the check covered (0: none yet).
	AsOf int64
	Err  string // why the check cannot run, when it cannot
	// Off says why the job is not verified at all (the job spec's
	// verify: false): not a fault.
	Off string
	// NotJoined counts the paid orders whose order and payment are more
	// than the join's state TTL apart in event time: not joined, and not
	// expected.
	NotJoined int
	// InFlight counts the paid orders checkpoint AsOf holds in flight (an
	// unaligned checkpoint): not in its output yet, and not lost.
	InFlight int
}

// Input is the input side: the generator and the tempo.
type Input struct {
	Generator     bool    // a generator writes the input (embedded broker or --generate)
	Rate          float64 // records/s it writes
	SourcesPaused bool
	Tempo         Tempo
	// FrozenSince is when the world froze (zero unless frozen).
	FrozenSince time.Time
	// Stepping: a Step runs (the frozen world moves to the next moment a
	// person can see).
	Stepping bool
}

// QueueView is what the UI draws of one input channel: the elements sent but
// not yet handled, with the barriers at their positions (0 is the next
// element the receiver will handle).
type QueueView struct {
	Queued   int64
	Barriers []BarrierPos
	// Overtaken counts the elements at the front of the queue that an
	// unaligned barrier overtook: they are in flight for its checkpoint,
	// persisted as channel state by the receiver, and processed after
	// its snapshot.
	Overtaken int64
}

// BarrierPos is a barrier's place in a queue: Pos elements are ahead of
// it. An unaligned barrier is at the front (Pos 0) with Overtook set to
// the number of elements it jumped over.
type BarrierPos struct {
	ID       int64
	Pos      int64
	Overtook int64
}

// InputView is what the UI shows of one input channel of a subtask: its
// queue with the barriers in it, and whether alignment blocks it.
type InputView struct {
	From     string // upstream subtask
	Input    int    // 0: the operator's first input, 1: its second
	Blocked  bool
	HeldBack int64 // elements waiting behind the barrier while blocked
	Queue    QueueView
	// Recording is set while the records this channel delivers are stored
	// as in-flight data of the subtask's unaligned checkpoint (its barrier
	// has not come on this channel yet); Persisted counts the records of
	// this channel stored so far for that checkpoint.
	Recording bool
	Persisted int64
}

// AlignmentView is a subtask's alignment in progress.
type AlignmentView struct {
	Checkpoint int64 // 0: not aligning
	Since      time.Time
	// Unaligned: the checkpoint was taken unaligned and its in-flight
	// records are being recorded; TimedOut: this subtask switched it
	// from aligned by the aligned-checkpoint timeout.
	Unaligned, TimedOut bool
}

// CheckpointStatus is the state of a checkpoint in the history (Flink:
// CheckpointStatsStatus).
type CheckpointStatus int

const (
	// StatusPending: triggered, waiting for acknowledgements.
	StatusPending CheckpointStatus = iota
	// StatusCompleted: acknowledged by every subtask and stored.
	StatusCompleted
	// StatusFailed: aborted; Checkpoint.Failure says why.
	StatusFailed
)

func (s CheckpointStatus) String() string {
	switch s {
	case StatusCompleted:
		return "completed"
	case StatusFailed:
		return "failed"
	}
	return "pending"
}

// InFlight is a checkpoint's in-flight data: PersistedInFlight is the
// size of the in-flight records stored as channel state (Flink: persisted
// in-flight data), ProcessedInFlight of those processed during alignments
// (processed in-flight data); Unaligned is set when a subtask took its
// snapshot unaligned, and TimedOut lists, sorted, the subtasks that
// switched it from aligned to unaligned by the aligned-checkpoint timeout.
type InFlight struct {
	PersistedInFlight, ProcessedInFlight int64
	Unaligned                            bool
	TimedOut                             []string
}

// Checkpoint is one checkpoint of the history (Flink: AbstractCheckpointStats).
type Checkpoint struct {
	ID        int64
	Savepoint bool // a savepoint, not a periodic checkpoint
	Status    CheckpointStatus
	// EndTime is zero while pending. Both are wall-clock times.
	TriggerTime, EndTime time.Time
	// Duration is the end-to-end time (so far, while pending) on the job's
	// clock, which leaves out the time the world stood frozen; Frozen is
	// that time.
	Duration, Frozen time.Duration
	// Acked of Total expected subtasks.
	Acked, Total int
	// AckedTasks are the acknowledgements received, by subtask name.
	AckedTasks map[string]SubtaskAck
	// WaitingFor lists, sorted, the subtasks that have not acknowledged.
	WaitingFor                  []string
	FullBytes, IncrementalBytes int64
	MaxAlignment                time.Duration
	// InFlight is its in-flight data and its unaligned subtasks.
	InFlight
	// Failure is the reason and error text when failed.
	Failure string
	// Restored is set when the job restored from this checkpoint.
	Restored bool
	// Damaged says why a restore could not use this completed checkpoint,
	// once one found it damaged.
	Damaged string
}

// SubtaskAck is a subtask's figures for one checkpoint, as Flink's
// checkpoint monitoring shows them.
type SubtaskAck struct {
	SyncDuration, AsyncDuration, Alignment, StartDelay time.Duration
	// Bytes is the full size of the subtask's state; IncrementalBytes what
	// this checkpoint wrote for it.
	Bytes, IncrementalBytes int64
	// AfterBarrier counts, in an at-least-once checkpoint, the records
	// processed past the barrier before the snapshot: they are read again
	// after a restore from it.
	AfterBarrier int64
	// Unaligned: the subtask took its snapshot unaligned; TimedOut: it
	// switched the checkpoint to unaligned by the aligned-checkpoint
	// timeout.
	Unaligned, TimedOut bool
	// PersistedInFlight is the size of the in-flight records it stored
	// with its snapshot, PersistedRecords their number; ProcessedInFlight
	// the size of those it processed during the alignment.
	PersistedInFlight, PersistedRecords, ProcessedInFlight int64
	// Finished: the subtask had finished before; its state was carried
	// over.
	Finished bool
	// AckTime is when the acknowledgement arrived (wall clock); EndToEnd
	// the time from the trigger to then on the job's clock.
	AckTime  time.Time
	EndToEnd time.Duration
}

// Checkpoints are the checkpoint statistics (Flink:
// CheckpointStatsSnapshot): counts, and the history newest first.
type Checkpoints struct {
	Completed, Failed, InProgress int
	LastCompleted                 int64
	ConsecutiveFailures           int
	// Restored lists the checkpoints the job restored from, in order;
	// RestoredSavepoint says the last of them is a savepoint.
	Restored          []int64
	RestoredSavepoint bool
	History           []Checkpoint
	// Reported is the summary of every completed checkpoint as the job
	// reports it (an attached job: Flink's REST API sums up more
	// checkpoints than its history holds); nil for a run's own job, whose
	// summary is taken from the history.
	Reported *ReportedSummary
}

// ReportedSummary is a job's own summary of its completed checkpoints
// (Flink: CheckpointingStatistics.Summary): per checkpoint its end-to-end
// duration, checkpointed (incremental) and full size, processed and
// persisted in-flight data.
type ReportedSummary struct {
	EndToEnd                                                  DurationStats
	CheckpointedSize, StateSize, ProcessedData, PersistedData SizeStats
}

// DurationStats and SizeStats are min, average, max and 99th percentile.
type (
	DurationStats struct{ Min, Avg, Max, P99 time.Duration }
	SizeStats     struct{ Min, Avg, Max, P99 int64 }
)

// RestartStatus is where the restart strategy stands.
type RestartStatus struct {
	Attempts     int // restarts granted so far (exponential-delay: since the last reset)
	MaxAttempts  int // 0 when unlimited or not attempt-based
	GaveUp       bool
	GaveUpReason string
	// FailuresInWindow of MaxFailuresInWindow, within Window (failure-rate
	// only).
	FailuresInWindow    int
	MaxFailuresInWindow int
	Window              time.Duration
	// NextDelay is the wait before the restart granted for the latest
	// failure.
	NextDelay time.Duration
}
