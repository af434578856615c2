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
	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
)

// Controller is the running job as the UI sees it. Every method returns
// promptly (none waits for a checkpoint or a restart); the UI calls them
// only from tea.Cmds, never from Update or View.
type Controller interface {
	view.JobControls
	// Inject makes fault happen now: in task (e.g. "join/1") for task
	// faults, job-wide when task is "" and the fault is job-level.
	Inject(fault string, task string) error
	// SetSourcesPaused stops (true) or resumes the sources: no new
	// records enter the job; barriers, checkpoints and everything
	// downstream go on.
	SetSourcesPaused(paused bool)
	// Resubmit starts a FAILED job again from its newest checkpoint, with
	// the restart strategy's count afresh: a new job, as flink run -s
	// starts one. It fails for a job that has not FAILED.
	Resubmit() error
	// Faults lists the fault catalogue for the fault menu, in menu order.
	Faults() []FaultChoice
	// TourKey hands a guided tour's key to the tour: "n" next, "b" back
	// to the previous step's narration, "r" restart the tour. It reports
	// false when no tour runs (the key then means what it means outside
	// a tour).
	TourKey(key string) bool
}

// Action is a command of the UI that a Controller may not be able to do.
type Action string

// The actions a Limited Controller may refuse.
const (
	ActionMode     Action = "mode"     // m: the checkpointing mode
	ActionPause    Action = "pause"    // p: pause the sources
	ActionTempo    Action = "tempo"    // z, space, .: slow motion, freeze, step
	ActionRate     Action = "rate"     // + -: the generator's rate
	ActionRestarts Action = "restarts" // R: reset the restart attempts, resubmit a FAILED job
)

// Limited is a Controller that cannot do everything the UI asks (a job
// attached through Flink's REST API, which has no tempo and no mode
// switch): Unavailable says why action cannot be done, "" when it can.
// The UI then says so instead of asking.
type Limited interface {
	Unavailable(action Action) string
}

// Lifecycle is a Controller that can end the job as Flink's REST API
// does: S stops it with a savepoint, C cancels it (each asked twice, so
// that one key pressed by mistake ends nothing). Both return once the
// request is taken.
type Lifecycle interface {
	StopWithSavepoint() error
	Cancel() error
}

// Rescaler is a Controller that can change an operator's parallelism as
// the job runs (Flink's adaptive scheduler, through its REST API's
// resource requirements): > and < ask for one subtask more or fewer of
// the selected subtask's operator. It returns once the request is taken;
// the job rescales when its scheduler decides.
type Rescaler interface {
	Rescale(operator string, delta int) error
}

// The view the UI draws is plain data of runtime/view (which imports
// nothing of the engine); these names keep the UI's code short.
type (
	Snapshot     = view.Snapshot
	JobInfo      = view.JobInfo
	Operator     = view.Operator
	Edge         = view.Edge
	BackPressure = view.BackPressure
	Task         = view.Task
	Restart      = view.Restart
	Verify       = view.Verify
	Input        = view.Input
	FaultChoice  = view.FaultChoice
	Tempo        = view.Tempo
	Tour         = view.Tour
	TourCheck    = view.TourCheck
	Highlight    = view.Highlight
)

// Back-pressure levels and tempos, as view names them.
const (
	BackPressureOK   = view.BackPressureOK
	BackPressureLow  = view.BackPressureLow
	BackPressureHigh = view.BackPressureHigh

	TempoNormal = view.TempoNormal
	TempoSlow   = view.TempoSlow   // a short delay before every batch (50 ms)
	TempoSlower = view.TempoSlower // a long delay before every batch (250 ms)
	TempoFrozen = view.TempoFrozen // nothing moves until Step
)

// Thousands writes n with thousands separators, as the UI does: 18204 →
// "18,204" (the headless report writes its figures alike).
func Thousands(n int64) string { return common.Thousands(n) }
