package barrier

import (
	"slices"
	"time"
)

// maxTracked bounds how many checkpoints the tracker follows at once; the
// oldest is forgotten beyond it (Flink: CheckpointBarrierTracker's
// MAX_CHECKPOINTS_TO_TRACK).
const maxTracked = 50

// tracker is the at-least-once barrier handler (Flink:
// CheckpointBarrierTracker). It never blocks a channel: it counts, per
// checkpoint, the channels that delivered its barrier, and triggers the
// checkpoint when the last live channel has. Records that overtake a barrier
// on a fast channel are in the snapshot's past and are processed again after a
// restore: that is where at-least-once duplicates come from.
//
// Several checkpoints can be in progress at once. Choices, checked against
// Flink's CheckpointBarrierTracker:
//
//   - When checkpoint n triggers, the pending checkpoints older than n are
//     dropped silently, not reported as aborted: Flink polls them off its queue
//     as "now subsumed" without notifying anyone, and the coordinator subsumes
//     an older pending checkpoint when a newer one completes. So Result.Aborted
//     stays 0 on a trigger.
//   - Only the first barrier or cancellation marker of an id newer than any
//     seen starts tracking it; a barrier of an older id that is not tracked
//     (triggered, dropped, aborted and finished, or never seen) is ignored.
//   - A cancellation marker for n first aborts, oldest first, every tracked
//     checkpoint older than n (Result.OlderAborted, each reported once per
//     id) and forgets them, then marks n aborted (Result.Aborted, once per id),
//     as Flink does. Later barriers of the forgotten ones are ignored, and
//     barriers of n are counted but never trigger: a checkpoint older than a
//     cancelled one never triggers after it. When n itself is not reported
//     (aborted already, or neither tracked nor newer than every id seen), the
//     newest of the older ones is in Aborted instead.
//   - A coordinator abort of n marks only n aborted (reported once): Flink's
//     task does not hand it to its barrier tracker, but remembers n so as not
//     to snapshot it, and leaves older pending checkpoints be: they can still
//     trigger, and the coordinator can still complete them.
//   - A priority barrier is counted as any barrier: nothing is ever blocked,
//     so nothing is in flight either. TimeOut does nothing, and Recording and
//     Unaligned are always false.
//   - End of input counts the ended channel as aligned for every tracked
//     checkpoint (Flink with checkpoints after tasks finished). If that
//     completes several, the newest not aborted triggers and the older ones
//     are dropped as on any trigger; one trigger per Result.
type tracker struct {
	now func() time.Time

	ended []bool
	last  []int64

	// pending holds the tracked checkpoints in ascending id order (Flink:
	// CheckpointBarrierCount). After every event none of them is complete.
	pending []*barrierCount
	// latest is the highest id seen by barrier, cancellation marker or abort
	// (Flink: latestPendingCheckpointID).
	latest int64
}

// barrierCount is one checkpoint the tracker follows: which channels delivered
// its barrier, and whether it was aborted (Flink: CheckpointBarrierCount).
type barrierCount struct {
	id      int64
	seen    []bool
	first   time.Time
	aborted bool
}

// newTracker returns the at-least-once handler over inputs channels.
func newTracker(inputs int, now func() time.Time) Handler {
	return &tracker{
		now:   now,
		ended: make([]bool, inputs),
		last:  make([]int64, inputs),
	}
}

func (t *tracker) Mode() Mode { return AtLeastOnce }

func (t *tracker) OnBarrier(ch int, id int64) Result {
	checkChannel("OnBarrier", ch, len(t.ended))
	return t.barrier(ch, id)
}

// OnPriorityBarrier counts a priority barrier as any other: nothing is
// blocked, so nothing is in flight either.
func (t *tracker) OnPriorityBarrier(ch int, id int64) Result {
	checkChannel("OnPriorityBarrier", ch, len(t.ended))
	return t.barrier(ch, id)
}

func (t *tracker) barrier(ch int, id int64) Result {
	if t.ended[ch] {
		return Result{}
	}
	t.last[ch] = max(t.last[ch], id)
	now := t.now()
	c := t.lookup(id, now)
	if c == nil {
		return Result{}
	}
	c.seen[ch] = true
	return t.sweep(now)
}

// OnCancel aborts, oldest first, every tracked checkpoint older than id that
// is not aborted yet, forgetting them, then id itself, unless it is aborted
// already or is neither tracked nor newer than every id seen (Flink:
// CheckpointBarrierTracker.processCancellationBarrier).
func (t *tracker) OnCancel(ch int, id int64) Result {
	checkChannel("OnCancel", ch, len(t.ended))
	if t.ended[ch] {
		return Result{}
	}
	var aborted []int64
	older := 0
	for _, c := range t.pending {
		if c.id >= id {
			break
		}
		if !c.aborted {
			aborted = append(aborted, c.id)
		}
		older++
	}
	t.pending = slices.Delete(t.pending, 0, older)

	now := t.now()
	if c := t.lookup(id, now); c != nil {
		// A cancellation marker takes the place of the barrier on its
		// channel, so that the entry is forgotten once every channel has
		// spoken.
		c.seen[ch] = true
		if !c.aborted {
			c.aborted = true
			aborted = append(aborted, id)
		}
		t.sweep(now) // forgets c once complete; an aborted entry never triggers
	}

	var res Result
	if n := len(aborted); n > 0 {
		res.Aborted, res.AbortReason = aborted[n-1], Canceled
		if n > 1 {
			res.OlderAborted = aborted[:n-1]
		}
	}
	return res
}

func (t *tracker) Abort(id int64) Result {
	now := t.now()
	c := t.lookup(id, now)
	if c == nil || c.aborted {
		return Result{}
	}
	c.aborted = true
	t.sweep(now) // an aborted entry never triggers
	return Result{Aborted: id, AbortReason: AbortedByCoordinator}
}

func (t *tracker) OnEndOfInput(ch int) Result {
	checkChannel("OnEndOfInput", ch, len(t.ended))
	if t.ended[ch] {
		return Result{}
	}
	t.ended[ch] = true
	return t.sweep(t.now())
}

// lookup returns the tracked checkpoint id, starting to track it at now when
// it is newer than any seen, or nil when id is to be ignored.
func (t *tracker) lookup(id int64, now time.Time) *barrierCount {
	for _, c := range t.pending {
		if c.id == id {
			return c
		}
	}
	if id <= t.latest {
		return nil
	}
	t.latest = id
	c := &barrierCount{id: id, seen: make([]bool, len(t.ended)), first: now}
	t.pending = append(t.pending, c)
	if len(t.pending) > maxTracked {
		t.pending = slices.Delete(t.pending, 0, 1)
	}
	return c
}

// complete reports whether every channel delivered c's barrier or ended.
func (t *tracker) complete(c *barrierCount) bool {
	for ch, seen := range c.seen {
		if !seen && !t.ended[ch] {
			return false
		}
	}
	return true
}

// sweep restores the invariant that no tracked checkpoint is complete: the
// newest complete one that is not aborted triggers at now and takes every
// older one with it; complete aborted ones are forgotten.
func (t *tracker) sweep(now time.Time) Result {
	var res Result
	for i := len(t.pending) - 1; i >= 0; i-- {
		c := t.pending[i]
		if c.aborted || !t.complete(c) {
			continue
		}
		res.Triggered = c.id
		res.FirstBarrier = c.first
		res.Alignment = now.Sub(c.first)
		t.pending = slices.Delete(t.pending, 0, i+1)
		break
	}
	t.pending = slices.DeleteFunc(t.pending, t.complete)
	return res
}

// TimeOut does nothing: the tracker never aligns, so nothing times out.
func (t *tracker) TimeOut(int64) Result { return Result{} }

func (t *tracker) Blocked(ch int) bool {
	checkChannel("Blocked", ch, len(t.ended))
	return false
}

func (t *tracker) Recording(ch int) bool {
	checkChannel("Recording", ch, len(t.ended))
	return false
}

func (t *tracker) Unaligned() bool { return false }

func (t *tracker) LastBarrier(ch int) int64 {
	checkChannel("LastBarrier", ch, len(t.ended))
	return t.last[ch]
}

// newest returns the newest tracked checkpoint that is not aborted, or nil.
func (t *tracker) newest() *barrierCount {
	for i := len(t.pending) - 1; i >= 0; i-- {
		if !t.pending[i].aborted {
			return t.pending[i]
		}
	}
	return nil
}

func (t *tracker) Pending() int64 {
	if c := t.newest(); c != nil {
		return c.id
	}
	return 0
}

func (t *tracker) AlignmentStart() time.Time {
	if c := t.newest(); c != nil {
		return c.first
	}
	return time.Time{}
}
