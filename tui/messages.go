package tui

import (
	"faultline/runtime/view"
)

// This file holds every message the UI handles. Messages from the job
// (samples, events) and the results of commands are exported so that tests
// and other drivers can send them; so are the ones components send the
// root model, which the components will send from packages of their own.

// SnapshotMsg carries one sample of the job, taken by the tick command.
type SnapshotMsg struct {
	Snapshot Snapshot
	// Seq numbers the samples in the order the tick command took them
	// (0: sent from outside, e.g. by a test, and always applied).
	Seq int64
}

// EventsMsg carries a batch of lifecycle events, oldest first. Closed
// reports that the event channel was closed after them: the job has stopped
// emitting and no more batches will come.
type EventsMsg struct {
	Events []view.Stamped
	Closed bool
}

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

// OpenDetailMsg asks the root model to open the checkpoint detail view.
type OpenDetailMsg struct{ ID int64 }

// CloseOverlayMsg asks the root model to close the overlay on top.
type CloseOverlayMsg struct{}

// InjectMsg asks the root model to inject a confirmed fault.
type InjectMsg struct {
	Fault string
	Task  string // "" for a job-level fault
}

// FlashMsg asks the root model to show a line in the flash.
type FlashMsg struct {
	Text  string
	Level Level
}
