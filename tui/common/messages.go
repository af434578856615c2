package common

import "github.com/faultline-dev/faultline/runtime/view"

// This file holds the messages the components handle and send: samples
// and event batches come from the root model's commands, and the requests
// the components send go to the root model, which owns the overlays, the
// flash and every call into the job.

// SnapshotMsg carries one sample of the job, taken by the tick command.
type SnapshotMsg struct {
	Snapshot view.Snapshot
	// Seq numbers the samples in the order the tick command took them
	// (0: sent from outside, e.g. by a test, and always applied).
	Seq int64
	// Run is which run of a Session the sample is of (0: the first, and
	// one sent from outside); a sample of an earlier run is dropped.
	Run int
}

// EventsMsg carries a batch of lifecycle events, oldest first. Closed
// reports that the event channel was closed after them: the job has stopped
// emitting and no more batches will come.
type EventsMsg struct {
	Events []view.Stamped
	Closed bool
	Run    int // as SnapshotMsg.Run
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
