package view

// Mode is a checkpointing mode by the name the UI, the report, the events
// and tour files give it (Flink: CheckpointingMode, with
// execution.checkpointing.unaligned for exactly-once). The engine, the UI
// and the tours take these names from here, not from literals of their own.
type Mode string

const (
	// ModeExactlyOnce aligns the barriers.
	ModeExactlyOnce Mode = "exactly-once"
	// ModeExactlyOnceUnaligned lets the barriers overtake the records in
	// flight, which the checkpoint stores.
	ModeExactlyOnceUnaligned Mode = "exactly-once unaligned"
	// ModeAtLeastOnce does not align: a restore reads again what an
	// operator processed past a barrier.
	ModeAtLeastOnce Mode = "at-least-once"
)

// Modes are the checkpointing modes in the order the mode key goes
// through them.
var Modes = []Mode{ModeExactlyOnce, ModeExactlyOnceUnaligned, ModeAtLeastOnce}
