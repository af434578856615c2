package view

// JobControls is what the terminal UI and a guided tour both ask of a
// running job: a sample of it for one frame, and the commands that carry
// no fault (each surface adds its own way of injecting one). Every method
// returns promptly: none waits for a checkpoint or a restart.
type JobControls interface {
	// Snapshot samples the job for one frame.
	Snapshot() Snapshot
	// TriggerCheckpoint and TriggerSavepoint start one now and return its id.
	TriggerCheckpoint() (int64, error)
	TriggerSavepoint() (int64, error)
	// SetMode switches the checkpointing mode (a Mode's name) for the
	// checkpoints triggered from now on: "exactly-once" (aligned barriers,
	// unaligned once an alignment outlasts JobInfo.AlignedTimeout when it
	// is set), "exactly-once unaligned" (Flink's unaligned checkpoints) or
	// "at-least-once". It returns an error for a mode the job cannot take.
	SetMode(mode string) error
	// SetTempo sets how fast the whole dataflow moves. TempoNormal is full
	// speed; the slow-motion tempos add a delay before every batch each
	// task handles, so that queues fill and a barrier can be followed hop
	// by hop; TempoFrozen stops every task before its next batch (the world
	// stands still; Step moves it).
	SetTempo(t Tempo)
	// Step, while frozen, lets the world run slowly to the next moment a
	// person can see (a checkpoint's barriers leave a stage of the job or
	// reach an operator that aligns, a checkpoint completes), then freezes
	// again.
	Step()
	// ResetRestarts makes the restart strategy forget its failures, as a
	// newly submitted job's starts (a restarts_reset event follows).
	ResetRestarts()
	// SetRate sets the input generator's records/s (ignored, with an
	// error, when there is no generator).
	SetRate(recordsPerSecond float64) error
}
