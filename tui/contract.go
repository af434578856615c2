// Package tui is faultline's terminal UI (Bubble Tea v1): the job graph with
// its queue strips and alignment, the checkpoint history and detail, the
// restart strategy, the event log and the live verification line, driven
// from the keyboard.
//
// This file is the contract between the UI and the running job. The UI never
// touches the job directly: it asks a Controller for a Snapshot on every tick
// (a cheap copy of atomic counters and small structs), reads lifecycle
// events in batches from a bounded channel, and sends commands through the
// Controller from tea.Cmds. Job goroutines never call into the UI.
package tui

import (
	"time"

	"faultline/checkpoint"
	"faultline/restart"
	"faultline/runtime"
)

// Controller is the running job as the UI sees it. Every method returns
// promptly (none waits for a checkpoint or a restart); the UI calls them
// only from tea.Cmds, never from Update or View.
type Controller interface {
	// Snapshot samples the job for one frame.
	Snapshot() Snapshot
	// Inject makes fault happen now: in task (e.g. "join/1") for task
	// faults, job-wide when task is "" and the fault is job-level.
	Inject(fault runtime.FaultKind, task string) error
	// TriggerCheckpoint and TriggerSavepoint start one now and return its id.
	TriggerCheckpoint() (int64, error)
	TriggerSavepoint() (int64, error)
	// SetMode switches the checkpointing mode for the checkpoints
	// triggered from now on: "exactly-once" or "at-least-once".
	SetMode(mode string) error
	// SetSourcesPaused stops (true) or resumes the sources: no new
	// records enter the job; barriers, checkpoints and everything
	// downstream go on.
	SetSourcesPaused(paused bool)
	// SetTempo sets how fast the whole dataflow moves. TempoNormal is full
	// speed; the slow-motion tempos add a delay before every batch each
	// task handles, so that queues fill and a barrier can be followed hop by
	// hop; TempoFrozen stops every task before its next batch (the world
	// stands still; Step moves it).
	SetTempo(t Tempo)
	// Step, while frozen, lets every task handle one batch, then freezes
	// again.
	Step()
	// SetRate sets the input generator's records/s (ignored, with an
	// error, when there is no generator).
	SetRate(recordsPerSecond float64) error
	// Faults lists the fault catalogue for the fault menu, in menu order.
	Faults() []FaultChoice
}

// Tempo is the speed of the whole dataflow (runtime.Tempo): TempoNormal is
// full speed; the slow-motion tempos add a delay before every batch each
// task handles; TempoFrozen stops every task before its next batch.
type Tempo = runtime.Tempo

// Tempos, slowest last.
const (
	TempoNormal = runtime.TempoNormal
	TempoSlow   = runtime.TempoSlow   // a short delay before every batch (50 ms)
	TempoSlower = runtime.TempoSlower // a long delay before every batch (250 ms)
	TempoFrozen = runtime.TempoFrozen // nothing moves until Step
)

// FaultChoice is one entry of the fault menu.
type FaultChoice struct {
	Kind        runtime.FaultKind
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
	// Started is when the run started: event times (view.Stamped.At) are
	// offsets from it.
	Started time.Time

	Job       JobInfo
	Operators []Operator      // in job spec order, which is topological
	Tasks     map[string]Task // by name, "operator/index"
	// Checkpoints are the coordinator's statistics: counts, and History
	// newest first (pending ones included, with their acknowledgements).
	Checkpoints checkpoint.Stats
	Restart     Restart
	Verify      Verify
	Input       Input
}

// JobInfo is the header line's content.
type JobInfo struct {
	Name   string // "orders"
	Title  string // "orders ⋈ payments"
	Status string // runtime.JobStatus: CREATED, RUNNING, RESTARTING, FAILING, FAILED, FINISHED, CANCELED
	// Mode is the checkpointing mode of the checkpoints being triggered
	// now: "exactly-once" (aligned) or "at-least-once".
	Mode         string
	Interval     time.Duration // 0: periodic checkpoints off
	Broker       string        // "127.0.0.1:9092"
	Embedded     bool          // the embedded broker, not --brokers
	StateBackend string        // "heap" or "badger"
	Incremental  bool
	StateDir     string
	// Attempt counts deployments of the job (1 before any restart).
	Attempt int64
	// FreezeLimit is how long the world can stay frozen before the job
	// fails over (0: never), and FreezeLimitWhy what then expires: the
	// nearer of a pending checkpoint's timeout and the sink's transaction
	// timeout.
	FreezeLimit    time.Duration
	FreezeLimitWhy string
	// StateTTL is the join's state TTL (0: sides wait for ever).
	StateTTL time.Duration
}

// Operator is one vertex of the job graph.
type Operator struct {
	Name        string
	Type        string // source, parse, join, aggregate, enrich, sink
	Parallelism int
	Inputs      []Edge
	Topic       string // sources: topic read; sinks: topic written
}

// Edge is one input of an operator.
type Edge struct {
	From string // upstream operator
	Kind string // forward, hash, rebalance, broadcast
	Key  string // hash: the key field, e.g. "order_id"
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

// Task is one subtask's state for drawing.
type Task struct {
	Name     string // "join/1"
	Operator string
	Index    int
	Status   string // runtime.TaskStatus: CREATED, DEPLOYING, RUNNING, FINISHED, CANCELING, CANCELED, FAILED

	RecordsIn, RecordsOut int64   // totals over the run
	RateIn                float64 // records/s handled over the last sample period
	// Busy is the fraction of the last sample period spent working (not
	// waiting for input); BackPressureRatio the fraction blocked on output.
	Busy              float64
	BackPressureRatio float64
	BackPressure      BackPressure

	// Inputs are the subtask's input channels, one per upstream subtask,
	// in order: the first input's channels, then the second's. Each holds
	// its queue (elements sent and not yet handled) with the barriers at
	// their positions, whether alignment blocks it, and how many elements
	// it holds back. Empty for sources.
	Inputs []runtime.InputView
	// Alignment is the checkpoint this subtask is aligning, if any, and
	// since when (alignment time so far = Now - Since).
	Alignment runtime.AlignmentView
	// Offsets are, for sources, the next offset to read per partition.
	Offsets map[int32]int64
	// Restarts counts how many times this subtask was redeployed.
	Restarts int
}

// Restart is the restart strategy's and the failover strategy's state.
type Restart struct {
	Strategy    string // "fixed-delay", "failure-rate", "exponential-delay", "none"
	Description string // the strategy with its parameters, e.g. "fixed-delay (attempts 3, delay 1s)"
	Status      restart.Status
	// NextRestartAt is when the scheduled restart happens (zero when none
	// is scheduled): the countdown is NextRestartAt - Snapshot.Now.
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
}

// Verify is the live verification line: what a read_committed consumer of
// the output topic sees, checked against the input.
type Verify struct {
	Available  bool // false until the first check, or when it cannot run
	Committed  int  // records in the committed output
	Duplicates int  // order ids seen more than once
	Lost       int  // paid orders covered by the last completed checkpoint, not in the output
	// AsOf is the checkpoint the check covered (0: none yet).
	AsOf int64
	Err  string // why the check cannot run, when it cannot
	// NotJoined counts the paid orders whose order and payment are more
	// than the join's state TTL apart in event time: not joined, and not
	// expected.
	NotJoined int
}

// Input is the input side: the generator and the tempo.
type Input struct {
	Generator     bool    // a generator writes the input (embedded broker or --generate)
	Rate          float64 // records/s it writes
	SourcesPaused bool
	Tempo         Tempo
	// FrozenSince is when the world froze (zero unless frozen).
	FrozenSince time.Time
}
