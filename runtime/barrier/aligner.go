package barrier

import (
	"fmt"
	"time"
)

// aligner is the exactly-once barrier handler (Flink:
// SingleCheckpointBarrierHandler in aligned mode). It aligns one checkpoint at
// a time: a channel that delivered barrier n is blocked until every live
// channel has delivered barrier n, then the checkpoint triggers and every
// channel is unblocked.
//
// Choices that differ from, or go beyond, Flink:
//
//   - End of input on a channel counts as alignment for the pending and every
//     later checkpoint (Flink with checkpoints after tasks finished), so it can
//     complete an alignment instead of aborting it.
//   - A cancellation marker or a coordinator abort for an id newer than the
//     pending checkpoint abandons the pending one and reports the newer id in
//     Result.Aborted, as Flink's abortInternal(cancelledId) does: the
//     cancellation marker the task forwards for the newer id makes the
//     downstream handlers abandon the older one too, whereas forwarding only
//     the older id would leave downstream waiting for a barrier of the newer id
//     that never comes. The coordinator hears no decline for the older one; it
//     expires or is subsumed there.
//   - Abort of a checkpoint this subtask already triggered is ignored: its
//     snapshot was taken, and the coordinator already knows it gave up.
type aligner struct {
	now func() time.Time

	ended   []bool  // ended[ch]: ch delivered end of input
	blocked []bool  // blocked[ch]: ch delivered the pending checkpoint's barrier
	last    []int64 // last[ch]: highest barrier id ch delivered

	// current is the highest checkpoint id this handler has heard of (by
	// barrier, cancellation marker or abort); done is the highest one that was
	// triggered or aborted (Flink: currentCheckpointId and
	// lastCancelledOrCompletedCheckpointId). A checkpoint is aligning when
	// current > done.
	current int64
	done    int64
	start   time.Time // first barrier of current, while aligning
}

// newAligner returns the exactly-once handler over inputs channels.
func newAligner(inputs int, now func() time.Time) Handler {
	return &aligner{
		now:     now,
		ended:   make([]bool, inputs),
		blocked: make([]bool, inputs),
		last:    make([]int64, inputs),
	}
}

func (a *aligner) Mode() Mode { return ExactlyOnce }

func (a *aligner) aligning() bool { return a.current > a.done }

func (a *aligner) OnBarrier(ch int, id int64) Result {
	checkChannel("OnBarrier", ch, len(a.ended))
	if a.ended[ch] {
		return Result{}
	}
	a.last[ch] = max(a.last[ch], id)

	t := a.now()
	var res Result
	switch {
	case id > a.current:
		// The first barrier of a new checkpoint: whatever was aligning is
		// subsumed (Flink: CHECKPOINT_DECLINED_SUBSUMED).
		if a.aligning() {
			res.Aborted, res.AbortReason = a.current, Subsumed
			a.unblockAll()
		}
		a.current = id
		a.start = t
	case id == a.current && a.aligning():
		// Another barrier of the checkpoint being aligned.
	default:
		// An old barrier, or one of a checkpoint already triggered, cancelled
		// or aborted.
		return res
	}
	a.blocked[ch] = true
	a.maybeTrigger(&res, t)
	return res
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

// abort gives up checkpoint id if it is the one aligning or newer than any
// seen; later barriers of ids up to id are then ignored.
func (a *aligner) abort(id int64, why Reason) Result {
	if id < a.current || (id == a.current && !a.aligning()) {
		return Result{}
	}
	a.current, a.done = id, id
	a.start = time.Time{}
	a.unblockAll()
	return Result{Aborted: id, AbortReason: why}
}

func (a *aligner) OnEndOfInput(ch int) Result {
	checkChannel("OnEndOfInput", ch, len(a.ended))
	var res Result
	if a.ended[ch] {
		return res
	}
	a.ended[ch] = true
	a.blocked[ch] = false
	if a.aligning() {
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
	a.start = time.Time{}
	a.unblockAll()
}

func (a *aligner) unblockAll() {
	clear(a.blocked)
}

func (a *aligner) Blocked(ch int) bool {
	checkChannel("Blocked", ch, len(a.ended))
	return a.blocked[ch]
}

func (a *aligner) LastBarrier(ch int) int64 {
	checkChannel("LastBarrier", ch, len(a.ended))
	return a.last[ch]
}

func (a *aligner) Pending() int64 {
	if a.aligning() {
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
