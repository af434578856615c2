package barrier

import (
	"fmt"
	"time"
)

// aligner is the exactly-once barrier handler (Flink:
// SingleCheckpointBarrierHandler with alternating aligned and unaligned
// checkpoints). It handles one checkpoint at a time, aligned or unaligned.
//
// Aligned (an in-band barrier, OnBarrier, is the first of its checkpoint): a
// channel that delivered barrier n is blocked until every live channel has
// delivered barrier n, then the checkpoint triggers and every channel is
// unblocked.
//
// Unaligned (a priority barrier, OnPriorityBarrier, is the first; or one
// arrives while n aligns; or TimeOut switches an aligning n): n triggers at
// once with Result.Unaligned and nothing is blocked. Every live channel that
// has not delivered barrier n is then recorded (Recording): its records, read
// and processed as usual, are also n's in-flight data, until the channel
// delivers barrier n, of either kind, or ends. When the last one does,
// Result.InFlightDone reports n complete. Until then n is Pending, and
// Unaligned is true; a barrier of a newer checkpoint, of either kind,
// subsumes it then as it subsumes an aligning one, and barriers of older
// ones are ignored.
//
// Choices, checked against Flink; some differ from it or go beyond it:
//
//   - End of input on a channel counts as alignment for the pending and every
//     later checkpoint (Flink with checkpoints after tasks finished), so it can
//     complete an alignment, or the in-flight data of an unaligned
//     checkpoint, instead of aborting it.
//   - A cancellation marker or a coordinator abort for an id newer than the
//     pending checkpoint abandons the pending one and reports the newer id in
//     Result.Aborted, as Flink's abortInternal(cancelledId) does: the
//     cancellation marker the task forwards for the newer id makes the
//     downstream handlers abandon the older one too, whereas forwarding only
//     the older id would leave downstream waiting for a barrier of the newer id
//     that never comes. An aligning older one goes silently: the coordinator
//     hears no decline for it; it expires or is subsumed there. An unaligned
//     older one still recording is reported too, in Result.OlderAborted: its
//     snapshot is taken and its barrier forwarded, so the task must stop
//     recording it and give it up. Flink stops the recording there too, but
//     notifies only the newer id.
//   - Abort of an aligned checkpoint this subtask already triggered is
//     ignored: its snapshot was taken, and the coordinator already knows it
//     gave up. An unaligned one is aborted as long as its in-flight data is
//     incomplete (as in Flink, where it is pending until its last barrier):
//     the task stops recording it and gives up its snapshot.
//   - A priority barrier of the aligning checkpoint switches it to unaligned
//     at once (Flink: an unaligned barrier in an aligned collecting state
//     acts as an alignment timeout). The channels that were blocked
//     delivered the barrier already: nothing of theirs is in flight.
//   - Alignment in a Result is the time from the first barrier until that
//     event: on an unaligned trigger, how long the checkpoint aligned before
//     it went unaligned (0 when a priority barrier started it); with
//     InFlightDone, until the last barrier or end of input (Flink reports
//     alignment duration for unaligned checkpoints too, up to the last
//     barrier).
type aligner struct {
	now func() time.Time

	ended     []bool  // ended[ch]: ch delivered end of input
	blocked   []bool  // blocked[ch]: ch delivered the aligning checkpoint's barrier
	recording []bool  // recording[ch]: ch's records are in flight for current
	last      []int64 // last[ch]: highest barrier id ch delivered

	// current is the highest checkpoint id this handler has heard of (by
	// barrier, cancellation marker or abort); done is the highest one that
	// completed (aligned: triggered; unaligned: in-flight data complete) or
	// was aborted (Flink: currentCheckpointId and
	// lastCancelledOrCompletedCheckpointId). A checkpoint is pending when
	// current > done: aligning, or recording when unaligned is set.
	current   int64
	done      int64
	unaligned bool      // current was triggered unaligned and is recording
	start     time.Time // first barrier of current, while pending
}

// newAligner returns the exactly-once handler over inputs channels.
func newAligner(inputs int, now func() time.Time) Handler {
	return &aligner{
		now:       now,
		ended:     make([]bool, inputs),
		blocked:   make([]bool, inputs),
		recording: make([]bool, inputs),
		last:      make([]int64, inputs),
	}
}

func (a *aligner) Mode() Mode { return ExactlyOnce }

func (a *aligner) pending() bool { return a.current > a.done }

func (a *aligner) aligning() bool { return a.pending() && !a.unaligned }

func (a *aligner) OnBarrier(ch int, id int64) Result {
	checkChannel("OnBarrier", ch, len(a.ended))
	return a.barrier(ch, id, false)
}

func (a *aligner) OnPriorityBarrier(ch int, id int64) Result {
	checkChannel("OnPriorityBarrier", ch, len(a.ended))
	return a.barrier(ch, id, true)
}

// barrier handles barrier id on ch, a priority barrier when prio.
func (a *aligner) barrier(ch int, id int64, prio bool) Result {
	if a.ended[ch] {
		return Result{}
	}
	a.last[ch] = max(a.last[ch], id)

	t := a.now()
	var res Result
	switch {
	case id > a.current:
		// The first barrier of a new checkpoint: whatever was pending is
		// subsumed (Flink: CHECKPOINT_DECLINED_SUBSUMED).
		if a.pending() {
			res.Aborted, res.AbortReason = a.current, Subsumed
			a.reset()
		}
		a.current = id
		a.start = t
	case id == a.current && a.unaligned:
		// Another barrier of the unaligned checkpoint: what ch delivers
		// from now on comes after it.
		a.recording[ch] = false
		a.maybeComplete(&res, t)
		return res
	case id == a.current && a.aligning():
		// Another barrier of the checkpoint being aligned.
	default:
		// An old barrier, or one of a checkpoint already completed,
		// cancelled or aborted.
		return res
	}
	if prio {
		a.triggerUnaligned(&res, ch, t)
		return res
	}
	a.blocked[ch] = true
	a.maybeTrigger(&res, t)
	return res
}

func (a *aligner) TimeOut(id int64) Result {
	var res Result
	if a.aligning() && id == a.current {
		a.triggerUnaligned(&res, -1, a.now())
		res.TimedOut = true
	}
	return res
}

// triggerUnaligned triggers current unaligned at time t, after channel ch
// (-1: none) delivered its barrier: every live channel that has not
// delivered it is recorded, and nothing is blocked.
func (a *aligner) triggerUnaligned(res *Result, ch int, t time.Time) {
	for c := range a.ended {
		a.recording[c] = c != ch && !a.ended[c] && !a.blocked[c]
	}
	clear(a.blocked)
	a.unaligned = true
	res.Triggered = a.current
	res.Unaligned = true
	res.FirstBarrier = a.start
	res.Alignment = t.Sub(a.start)
	a.maybeComplete(res, t)
}

// maybeComplete reports the unaligned checkpoint's in-flight data complete
// at time t once no channel is recorded any more.
func (a *aligner) maybeComplete(res *Result, t time.Time) {
	for _, r := range a.recording {
		if r {
			return
		}
	}
	res.InFlightDone = a.current
	res.FirstBarrier = a.start
	res.Alignment = t.Sub(a.start)
	a.done = a.current
	a.reset()
}

func (a *aligner) OnCancel(ch int, id int64) Result {
	checkChannel("OnCancel", ch, len(a.ended))
	if a.ended[ch] {
		return Result{}
	}
	return a.abort(id, Canceled)
}

func (a *aligner) Abort(id int64) Result {
	return a.abort(id, AbortedByCoordinator)
}

// abort gives up checkpoint id if it is the one pending or newer than any
// seen; later barriers of ids up to id are then ignored.
func (a *aligner) abort(id int64, why Reason) Result {
	if id < a.current || (id == a.current && !a.pending()) {
		return Result{}
	}
	var res Result
	if id > a.current && a.unaligned {
		res.OlderAborted = []int64{a.current}
	}
	res.Aborted, res.AbortReason = id, why
	a.current, a.done = id, id
	a.reset()
	return res
}

func (a *aligner) OnEndOfInput(ch int) Result {
	checkChannel("OnEndOfInput", ch, len(a.ended))
	var res Result
	if a.ended[ch] {
		return res
	}
	a.ended[ch] = true
	a.blocked[ch] = false
	a.recording[ch] = false
	switch {
	case a.unaligned:
		a.maybeComplete(&res, a.now())
	case a.aligning():
		a.maybeTrigger(&res, a.now())
	}
	return res
}

// maybeTrigger triggers the aligning checkpoint at time t once every channel
// has delivered its barrier or ended.
func (a *aligner) maybeTrigger(res *Result, t time.Time) {
	for ch := range a.ended {
		if !a.ended[ch] && !a.blocked[ch] {
			return
		}
	}
	res.Triggered = a.current
	res.FirstBarrier = a.start
	res.Alignment = t.Sub(a.start)
	a.done = a.current
	a.reset()
}

// reset leaves the pending checkpoint: nothing blocked, nothing recorded.
func (a *aligner) reset() {
	clear(a.blocked)
	clear(a.recording)
	a.unaligned = false
	a.start = time.Time{}
}

func (a *aligner) Blocked(ch int) bool {
	checkChannel("Blocked", ch, len(a.ended))
	return a.blocked[ch]
}

func (a *aligner) Recording(ch int) bool {
	checkChannel("Recording", ch, len(a.ended))
	return a.recording[ch]
}

func (a *aligner) Unaligned() bool { return a.unaligned }

func (a *aligner) LastBarrier(ch int) int64 {
	checkChannel("LastBarrier", ch, len(a.ended))
	return a.last[ch]
}

func (a *aligner) Pending() int64 {
	if a.pending() {
		return a.current
	}
	return 0
}

func (a *aligner) AlignmentStart() time.Time {
	return a.start
}

// checkChannel panics when ch is not one of the handler's input channels: the
// owning task numbered its inputs wrongly, which is a bug, not a runtime
// condition.
func checkChannel(op string, ch, inputs int) {
	if ch < 0 || ch >= inputs {
		panic(fmt.Sprintf("barrier: %s: channel %d out of range [0, %d)", op, ch, inputs))
	}
}
