// Package barrier decides, for one subtask, what checkpoint barriers arriving
// on its input channels mean: when to block a channel, when to snapshot, when
// to record in-flight records, when a checkpoint is aborted (Flink:
// SingleCheckpointBarrierHandler for exactly-once, aligned or unaligned,
// CheckpointBarrierTracker for at-least-once).
//
// In exactly-once mode a checkpoint is aligned when its first barrier comes
// in band (OnBarrier): channels are blocked until every one delivered it. It
// is unaligned when its first barrier is a priority barrier
// (OnPriorityBarrier), or when a priority barrier or the aligned-checkpoint
// timeout (TimeOut) catches it aligning: it triggers at once, nothing is
// blocked, and the records of the channels that have not delivered its
// barrier yet are in flight (Recording) until Result.InFlightDone.
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

// Result tells the task what an event means. The task acts on its fields in
// this order: OlderAborted, Aborted, Triggered, InFlightDone (e.g. barrier n+1
// subsumed n and, with only one live input, completed n+1 at once). At most
// one trigger comes out of a single event; InFlightDone, when set with
// Triggered, is the same checkpoint.
type Result struct {
	// Aborted is the checkpoint abandoned by this event (0: none). The task
	// forwards a cancellation marker for it on every output and, unless
	// AbortReason is AbortedByCoordinator, declines it to the coordinator.
	Aborted     int64
	AbortReason Reason
	// Triggered is the checkpoint whose barriers have now arrived on every
	// live input (0: none), or that is taken unaligned now (see Unaligned).
	// The task snapshots its state, forwards barrier Triggered on every
	// output, then goes on, first with what the blocked channels held back.
	Triggered int64
	// FirstBarrier is when the first barrier of Triggered, or else of
	// InFlightDone, arrived at this subtask; Alignment is the time from then
	// until this event (for an unaligned trigger, how long it aligned before
	// it went unaligned; with InFlightDone, until its last barrier).
	FirstBarrier time.Time
	Alignment    time.Duration
	// OlderAborted are checkpoints abandoned by this event before Aborted,
	// oldest first, for AbortReason too (the tracker, when a cancellation
	// marker for a newer one arrives: Flink aborts every older pending
	// checkpoint first; the exactly-once handler, for an unaligned
	// checkpoint still recording when a cancellation marker or coordinator
	// abort for a newer one arrives). The task treats each as it treats
	// Aborted, in this order, before it: for an unaligned one, it stops
	// recording it and gives up its snapshot.
	OlderAborted []int64

	// Unaligned says Triggered is taken unaligned (exactly-once handler
	// only): before every live channel delivered its barrier. The task
	// snapshots its state, sends the barrier ahead of every record queued
	// in its outputs, and from then on records, as the checkpoint's
	// in-flight data, the records of every channel where Recording is true,
	// until that channel delivers the barrier or ends.
	Unaligned bool
	// TimedOut says the unaligned Triggered was an aligned checkpoint that
	// this subtask switched to unaligned because its alignment outlived
	// the aligned-checkpoint timeout (TimeOut).
	TimedOut bool
	// InFlightDone is the unaligned checkpoint whose in-flight data is now
	// complete: every live channel delivered its barrier or ended since
	// the trigger (0: none). It may come with Triggered in the same Result
	// (a single live channel). The task then writes the snapshot with its
	// channel state and acknowledges it.
	InFlightDone int64
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
	// An unaligned checkpoint already triggered but whose in-flight data
	// is not complete is aborted too (the task stops recording it).
	Abort(id int64) Result
	// OnPriorityBarrier handles barrier id of an unaligned checkpoint that
	// channel ch delivered ahead of the records queued before it (Flink: a
	// priority event), or an aligned barrier the task found queued in ch
	// and took out early because the checkpoint timed out (see TimeOut).
	// The task itself persists the records ch held before the barrier.
	// The at-least-once tracker treats it as OnBarrier.
	OnPriorityBarrier(ch int, id int64) Result
	// TimeOut switches the pending aligned checkpoint id to unaligned
	// (Flink: execution.checkpointing.aligned-checkpoint-timeout): it
	// triggers at once with Unaligned and TimedOut set, every blocked
	// channel is released (it already delivered the barrier: nothing of it
	// is in flight), and the channels that have not delivered it are
	// recorded. It does nothing unless id is pending and aligned.
	TimeOut(id int64) Result
	// Recording reports whether the records channel ch delivers now are in
	// flight for an unaligned checkpoint: triggered, and ch has neither
	// delivered its barrier nor ended (always false for the tracker).
	Recording(ch int) bool
	// Unaligned reports whether the pending checkpoint is unaligned
	// (triggered, in-flight data still being recorded).
	Unaligned() bool
	// Blocked reports whether channel ch must not be read now (always false
	// in at-least-once mode).
	Blocked(ch int) bool
	// LastBarrier is the highest barrier id channel ch has delivered.
	LastBarrier(ch int) int64
	// Pending is the checkpoint whose alignment is in progress, or the
	// unaligned checkpoint whose in-flight data is being recorded (0:
	// none); for the tracker, the newest checkpoint with some but not all
	// barriers.
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
