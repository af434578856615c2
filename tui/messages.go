package tui

import "github.com/faultline-dev/faultline/tui/common"

// This file holds the results of the commands, which only the root model
// handles; they are exported so that tests and other drivers can send them.
// The messages the components handle or send are in tui/common; samples
// and event batches, which drivers send too, keep their names here.

// SnapshotMsg carries one sample of the job, taken by the tick command.
type SnapshotMsg = common.SnapshotMsg

// EventsMsg carries a batch of lifecycle events, oldest first.
type EventsMsg = common.EventsMsg

// FaultsMsg carries the fault catalogue, fetched when the fault menu opens,
// and the subtask selected when it was asked for.
type FaultsMsg struct {
	Task   string
	Faults []FaultChoice
}

// FaultInjectedMsg reports Controller.Inject's result.
type FaultInjectedMsg struct {
	Fault string
	Task  string // "" for a job-level fault
	Err   error
}

// CheckpointTriggeredMsg reports Controller.TriggerCheckpoint's result.
type CheckpointTriggeredMsg struct {
	ID  int64
	Err error
}

// SavepointTriggeredMsg reports Controller.TriggerSavepoint's result.
type SavepointTriggeredMsg struct {
	ID  int64
	Err error
}

// JobEndRequestedMsg reports Lifecycle.StopWithSavepoint's or Cancel's
// answer; What says which ("stop with a savepoint", "cancel").
type JobEndRequestedMsg struct {
	What string
	Err  error
}

// RescaledMsg reports Rescaler.Rescale's answer; What says what was asked.
type RescaledMsg struct {
	What string
	Err  error
}

// ModeSetMsg reports Controller.SetMode's result.
type ModeSetMsg struct {
	Mode string
	Err  error
	done intentDone
}

// RateSetMsg reports Controller.SetRate's result.
type RateSetMsg struct {
	Rate float64
	Err  error
	done intentDone
}

// TempoSetMsg reports that Controller.SetTempo returned; Stepped is set
// when a single step followed (the "." key while not frozen).
type TempoSetMsg struct {
	Tempo   Tempo
	Stepped bool
	done    intentDone
}

// SteppedMsg reports that Controller.Step returned.
type SteppedMsg struct{}

// RestartsResetMsg reports that Controller.ResetRestarts returned.
type RestartsResetMsg struct{}

// ResubmittedMsg reports Controller.Resubmit's answer.
type ResubmittedMsg struct{ Err error }

// TourKeyMsg reports Controller.TourKey's result: Handled is false when no
// tour ran, and the key then meant what it means outside a tour (n, b
// and r: nothing in the main mode).
type TourKeyMsg struct {
	Key     string
	Handled bool
}

// SourcesPausedMsg reports that Controller.SetSourcesPaused returned.
type SourcesPausedMsg struct {
	Paused bool
	done   intentDone
}

// intentDone ties a command's result to the request it answers: gen is the
// request's generation, seq the number of samples taken when the command
// returned (a later sample reflects it).
type intentDone struct {
	gen int
	seq int64
}
