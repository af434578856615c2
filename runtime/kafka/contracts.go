package kafka

import "faultline/runtime"

// What the engine finds by type assertion, held at compile time: renaming
// a method of one of these interfaces, or of the types below, is a build
// error, not an ability silently switched off (a sink without its redo
// log, a source that no longer commits its offsets).
var (
	_ runtime.TxnOutput        = (*Output)(nil)
	_ runtime.TimedWriter      = (*Output)(nil)
	_ runtime.FragileOutput    = (*Output)(nil)
	_ runtime.PositionReader   = (*Output)(nil)
	_ runtime.CommittedReader  = (*Output)(nil)
	_ runtime.CommittedChecker = (*Output)(nil)

	_ runtime.Source          = (*Source)(nil)
	_ runtime.SourceReader    = (*reader)(nil)
	_ runtime.WaitingReader   = (*reader)(nil)
	_ runtime.OffsetCommitter = (*reader)(nil)
	_ runtime.CommitReporter  = (*reader)(nil)

	_ runtime.DeadLetters = (*DeadLetters)(nil)
)
