// Package barrier decides, for one subtask, what checkpoint barriers arriving
// on its input channels mean: when to block a channel, when to snapshot, when
// a checkpoint is aborted (Flink: SingleCheckpointBarrierHandler for aligned
// exactly-once, CheckpointBarrierTracker for at-least-once).
//
// A Handler is pure logic with no goroutines, channels or I/O: the task that
// owns it feeds it the events its inputs deliver, in order, and acts on the
// Result. It is not safe for concurrent use; the owning task goroutine is its
// only caller.
package barrier

import "time"

// Mode is the checkpointing mode.
type Mode int

const (
	// ExactlyOnce aligns barriers: a channel that delivered barrier n is
	// blocked until every live channel has delivered barrier n.
	ExactlyOnce Mode = iota
	// AtLeastOnce counts barriers and blocks nothing.
	AtLeastOnce
)

func (m Mode) String() string {
	if m == AtLeastOnce {
		return "at-least-once"
	}
	return "exactly-once"
}

// Reason says why a checkpoint was aborted at this subtask.
type Reason int

const (
	// NoReason is the zero value: nothing was aborted.
	NoReason Reason = iota
	// Subsumed: a barrier of a newer checkpoint arrived before this one
	// completed its alignment (Flink: CHECKPOINT_DECLINED_SUBSUMED).
	Subsumed
	// Canceled: a cancellation marker for it arrived from upstream (Flink:
	// CancelCheckpointMarker, CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER).
	Canceled
	// AbortedByCoordinator: the coordinator gave up on it (timeout, another
	// subtask declined).
	AbortedByCoordinator
)

func (r Reason) String() string {
	switch r {
	case Subsumed:
		return "subsumed by a newer checkpoint"
	case Canceled:
		return "cancellation barrier from upstream"
	case AbortedByCoordinator:
		return "aborted by the coordinator"
	}
	return ""
}

// Result tells the task what an event means. At most one abort and one
// trigger come out of a single event; when both are set the abort happened
// first (e.g. barrier n+1 subsumed n and, with only one live input, completed
// n+1 at once).
type Result struct {
	// Aborted is the checkpoint abandoned by this event (0: none). The task
	// forwards a cancellation marker for it on every output and, unless
	// AbortReason is AbortedByCoordinator, declines it to the coordinator.
	Aborted     int64
	AbortReason Reason
	// Triggered is the checkpoint whose barriers have now arrived on every
	// live input (0: none). The task snapshots its state, forwards barrier
	// Triggered on every output, then goes on, first with what the blocked
	// channels held back.
	Triggered int64
	// FirstBarrier is when the first barrier of Triggered arrived at this
	// subtask; Alignment is the time from then until this event.
	FirstBarrier time.Time
	Alignment    time.Duration
}

// Handler is the per-subtask barrier state machine. Channels are numbered
// 0..inputs-1.
type Handler interface {
	// OnBarrier handles barrier id delivered by channel ch.
	OnBarrier(ch int, id int64) Result
	// OnCancel handles a cancellation marker for id delivered by channel ch.
	OnCancel(ch int, id int64) Result
	// OnEndOfInput handles channel ch reaching its end; an ended channel
	// counts as aligned for every later checkpoint.
	OnEndOfInput(ch int) Result
	// Abort handles the coordinator's notice that checkpoint id was aborted.
	Abort(id int64) Result
	// Blocked reports whether channel ch must not be read now (always false
	// in at-least-once mode).
	Blocked(ch int) bool
	// LastBarrier is the highest barrier id channel ch has delivered.
	LastBarrier(ch int) int64
	// Pending is the checkpoint whose alignment is in progress (0: none);
	// for the tracker, the newest checkpoint with some but not all barriers.
	Pending() int64
	// AlignmentStart is when the pending checkpoint's first barrier arrived
	// (zero when none is pending).
	AlignmentStart() time.Time
	// Mode is the handler's mode.
	Mode() Mode
}

// New returns the handler for mode over the given number of input channels.
// now is the clock used for alignment figures.
func New(mode Mode, inputs int, now func() time.Time) Handler {
	if mode == AtLeastOnce {
		return newTracker(inputs, now)
	}
	return newAligner(inputs, now)
}
