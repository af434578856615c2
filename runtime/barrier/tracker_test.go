package barrier

import "testing"

func TestTrackerInterleavings(t *testing.T) {
	runInterleavings(t, AtLeastOnce, []interleaving{
		{
			name: "two inputs trigger on the last barrier, nothing blocks", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "..", pending: 1},
				{at: 5 * ms, ev: bar, ch: 1, id: 1, want: want{triggered: 1, align: 5 * ms}, blocked: ".."},
			},
		},
		{
			name: "three inputs, order 2 1 0", inputs: 3,
			steps: []step{
				{at: 1 * ms, ev: bar, ch: 2, id: 1, blocked: "...", pending: 1, start: 1 * ms},
				{at: 2 * ms, ev: bar, ch: 1, id: 1, blocked: "...", pending: 1, start: 1 * ms},
				{at: 2 * ms, ev: bar, ch: 1, id: 1, blocked: "...", pending: 1, start: 1 * ms},
				{at: 8 * ms, ev: bar, ch: 0, id: 1, want: want{triggered: 1, first: 1 * ms, align: 7 * ms}, blocked: "..."},
			},
		},
		{
			name: "single input triggers at once", inputs: 1,
			steps: []step{
				{at: 2 * ms, ev: bar, ch: 0, id: 1, want: want{triggered: 1, first: 2 * ms}, blocked: "."},
				{at: 4 * ms, ev: bar, ch: 0, id: 2, want: want{triggered: 2, first: 4 * ms}, blocked: "."},
			},
		},
		{
			name: "concurrent checkpoints trigger in turn", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "..", pending: 1},
				{at: 2 * ms, ev: bar, ch: 0, id: 2, blocked: "..", pending: 2, start: 2 * ms},
				{at: 4 * ms, ev: bar, ch: 1, id: 1, want: want{triggered: 1, align: 4 * ms}, blocked: "..", pending: 2, start: 2 * ms},
				{at: 7 * ms, ev: bar, ch: 1, id: 2, want: want{triggered: 2, first: 2 * ms, align: 5 * ms}, blocked: ".."},
			},
		},
		{
			name: "a newer trigger drops older pending checkpoints silently", inputs: 3,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "...", pending: 1},
				{at: 1 * ms, ev: bar, ch: 0, id: 2, blocked: "...", pending: 2, start: 1 * ms},
				{at: 2 * ms, ev: bar, ch: 1, id: 2, blocked: "...", pending: 2, start: 1 * ms},
				{at: 3 * ms, ev: bar, ch: 2, id: 2, want: want{triggered: 2, first: 1 * ms, align: 2 * ms}, blocked: "..."},
				{at: 4 * ms, ev: bar, ch: 1, id: 1, blocked: "..."},
				{at: 4 * ms, ev: bar, ch: 2, id: 1, blocked: "..."},
			},
		},
		{
			name: "barriers at or below the last triggered id are ignored", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 2, blocked: "..", pending: 2},
				{at: 1 * ms, ev: bar, ch: 1, id: 2, want: want{triggered: 2, align: 1 * ms}, blocked: ".."},
				{at: 2 * ms, ev: bar, ch: 0, id: 2, blocked: ".."},
				{at: 2 * ms, ev: bar, ch: 0, id: 1, blocked: ".."},
				{at: 3 * ms, ev: cancel, ch: 1, id: 2, blocked: ".."},
				{at: 3 * ms, ev: abort, id: 1, blocked: ".."},
				{at: 4 * ms, ev: bar, ch: 1, id: 3, blocked: "..", pending: 3, start: 4 * ms},
			},
		},
		{
			name: "an older barrier that was never tracked is ignored", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 3, blocked: "..", pending: 3},
				{at: 1 * ms, ev: bar, ch: 1, id: 2, blocked: "..", pending: 3},
				{at: 2 * ms, ev: bar, ch: 0, id: 2, blocked: "..", pending: 3},
				{at: 3 * ms, ev: bar, ch: 1, id: 3, want: want{triggered: 3, align: 3 * ms}, blocked: ".."},
			},
		},
		{
			name: "cancellation marker aborts once, later barriers never trigger", inputs: 3,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "...", pending: 1},
				{at: 1 * ms, ev: cancel, ch: 1, id: 1, want: want{aborted: 1, reason: Canceled}, blocked: "..."},
				{at: 2 * ms, ev: cancel, ch: 1, id: 1, blocked: "..."},
				{at: 3 * ms, ev: bar, ch: 2, id: 1, blocked: "..."},
				{at: 4 * ms, ev: bar, ch: 2, id: 2, blocked: "...", pending: 2, start: 4 * ms},
			},
		},
		{
			name: "cancellation marker for a checkpoint not seen yet", inputs: 2,
			steps: []step{
				{at: 0, ev: cancel, ch: 0, id: 3, want: want{aborted: 3, reason: Canceled}, blocked: ".."},
				{at: 1 * ms, ev: bar, ch: 1, id: 3, blocked: ".."},
				{at: 2 * ms, ev: cancel, ch: 1, id: 3, blocked: ".."},
				{at: 3 * ms, ev: bar, ch: 1, id: 4, blocked: "..", pending: 4, start: 3 * ms},
			},
		},
		{
			name: "cancellation marker for a newer checkpoint aborts older ones first", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "..", pending: 1},
				{at: 1 * ms, ev: cancel, ch: 0, id: 2, want: want{olderAborted: []int64{1}, aborted: 2, reason: Canceled}, blocked: ".."},
				// 1 is forgotten: its last barrier no longer triggers it.
				{at: 3 * ms, ev: bar, ch: 1, id: 1, blocked: ".."},
				{at: 4 * ms, ev: cancel, ch: 1, id: 2, blocked: ".."},
				{at: 5 * ms, ev: bar, ch: 1, id: 2, blocked: ".."},
				{at: 6 * ms, ev: bar, ch: 1, id: 3, blocked: "..", pending: 3, start: 6 * ms},
			},
		},
		{
			name: "cancellation marker aborts every older pending checkpoint, oldest first", inputs: 3,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "...", pending: 1},
				{at: 1 * ms, ev: bar, ch: 0, id: 2, blocked: "...", pending: 2, start: 1 * ms},
				{at: 2 * ms, ev: bar, ch: 1, id: 2, blocked: "...", pending: 2, start: 1 * ms},
				{at: 3 * ms, ev: bar, ch: 0, id: 3, blocked: "...", pending: 3, start: 3 * ms},
				{at: 4 * ms, ev: bar, ch: 0, id: 4, blocked: "...", pending: 4, start: 4 * ms},
				{at: 5 * ms, ev: cancel, ch: 1, id: 4, want: want{olderAborted: []int64{1, 2, 3}, aborted: 4, reason: Canceled}, blocked: "..."},
				// The older ones complete, but were forgotten: nothing
				// triggers after the cancellation of 4.
				{at: 6 * ms, ev: bar, ch: 2, id: 2, blocked: "..."},
				{at: 6 * ms, ev: bar, ch: 1, id: 1, blocked: "..."},
				{at: 6 * ms, ev: bar, ch: 2, id: 1, blocked: "..."},
				{at: 7 * ms, ev: bar, ch: 1, id: 3, blocked: "..."},
				{at: 7 * ms, ev: bar, ch: 2, id: 3, blocked: "..."},
				{at: 8 * ms, ev: bar, ch: 2, id: 4, blocked: "..."},
				{at: 9 * ms, ev: bar, ch: 0, id: 5, blocked: "...", pending: 5, start: 9 * ms},
			},
		},
		{
			name: "cancellation marker skips older checkpoints already aborted", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "..", pending: 1},
				{at: 1 * ms, ev: bar, ch: 0, id: 2, blocked: "..", pending: 2, start: 1 * ms},
				{at: 2 * ms, ev: abort, id: 1, want: want{aborted: 1, reason: AbortedByCoordinator}, blocked: "..", pending: 2, start: 1 * ms},
				{at: 3 * ms, ev: bar, ch: 0, id: 3, blocked: "..", pending: 3, start: 3 * ms},
				{at: 4 * ms, ev: cancel, ch: 1, id: 3, want: want{olderAborted: []int64{2}, aborted: 3, reason: Canceled}, blocked: ".."},
			},
		},
		{
			// Flink aborts the older ones even when the cancelled id itself
			// is no longer tracked; the newest of them is then in Aborted.
			name: "cancellation marker for an untracked id still aborts older ones", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "..", pending: 1},
				{at: 1 * ms, ev: bar, ch: 0, id: 2, blocked: "..", pending: 2, start: 1 * ms},
				{at: 2 * ms, ev: bar, ch: 0, id: 4, blocked: "..", pending: 4, start: 2 * ms},
				{at: 3 * ms, ev: cancel, ch: 1, id: 3, want: want{olderAborted: []int64{1}, aborted: 2, reason: Canceled}, blocked: "..", pending: 4, start: 2 * ms},
				{at: 4 * ms, ev: bar, ch: 1, id: 2, blocked: "..", pending: 4, start: 2 * ms},
				{at: 5 * ms, ev: bar, ch: 1, id: 4, want: want{triggered: 4, first: 2 * ms, align: 3 * ms}, blocked: ".."},
			},
		},
		{
			name: "cancellation marker for the oldest pending keeps the newer ones", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 1, id: 1, blocked: "..", pending: 1},
				{at: 1 * ms, ev: bar, ch: 1, id: 2, blocked: "..", pending: 2, start: 1 * ms},
				{at: 2 * ms, ev: cancel, ch: 0, id: 1, want: want{aborted: 1, reason: Canceled}, blocked: "..", pending: 2, start: 1 * ms},
				{at: 3 * ms, ev: bar, ch: 0, id: 2, want: want{triggered: 2, first: 1 * ms, align: 2 * ms}, blocked: ".."},
			},
		},
		{
			// Flink's task leaves the older checkpoints alone
			// on a coordinator abort: only a cancellation marker takes them.
			name: "coordinator abort of a newer checkpoint keeps older ones", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "..", pending: 1},
				{at: 1 * ms, ev: bar, ch: 0, id: 2, blocked: "..", pending: 2, start: 1 * ms},
				{at: 2 * ms, ev: abort, id: 2, want: want{aborted: 2, reason: AbortedByCoordinator}, blocked: "..", pending: 1},
				{at: 3 * ms, ev: bar, ch: 1, id: 1, want: want{triggered: 1, align: 3 * ms}, blocked: ".."},
				{at: 4 * ms, ev: bar, ch: 1, id: 2, blocked: ".."},
			},
		},
		{
			name: "priority barriers count as barriers, timeouts do nothing", inputs: 2,
			steps: []step{
				{at: 0, ev: prio, ch: 0, id: 1, blocked: "..", pending: 1},
				{at: 1 * ms, ev: timeout, id: 1, blocked: "..", pending: 1},
				{at: 2 * ms, ev: bar, ch: 1, id: 1, want: want{triggered: 1, align: 2 * ms}, blocked: ".."},
				{at: 3 * ms, ev: bar, ch: 1, id: 2, blocked: "..", pending: 2, start: 3 * ms},
				{at: 4 * ms, ev: prio, ch: 0, id: 2, want: want{triggered: 2, first: 3 * ms, align: 1 * ms}, blocked: ".."},
				{at: 5 * ms, ev: prio, ch: 0, id: 3, blocked: "..", pending: 3, start: 5 * ms},
				{at: 6 * ms, ev: timeout, id: 3, blocked: "..", pending: 3, start: 5 * ms},
			},
		},
		{
			name: "coordinator abort while counting", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "..", pending: 1},
				{at: 1 * ms, ev: abort, id: 1, want: want{aborted: 1, reason: AbortedByCoordinator}, blocked: ".."},
				{at: 2 * ms, ev: abort, id: 1, blocked: ".."},
				{at: 3 * ms, ev: bar, ch: 1, id: 1, blocked: ".."},
				{at: 4 * ms, ev: bar, ch: 0, id: 2, blocked: "..", pending: 2, start: 4 * ms},
				{at: 5 * ms, ev: bar, ch: 1, id: 2, want: want{triggered: 2, first: 4 * ms, align: 1 * ms}, blocked: ".."},
			},
		},
		{
			name: "coordinator abort of a checkpoint not seen yet", inputs: 2,
			steps: []step{
				{at: 0, ev: abort, id: 5, want: want{aborted: 5, reason: AbortedByCoordinator}, blocked: ".."},
				{at: 1 * ms, ev: bar, ch: 0, id: 5, blocked: ".."},
				{at: 2 * ms, ev: bar, ch: 1, id: 5, blocked: ".."},
				{at: 2 * ms, ev: bar, ch: 1, id: 4, blocked: ".."},
				{at: 3 * ms, ev: abort, id: 4, blocked: ".."},
			},
		},
		{
			name: "end of input completes a pending checkpoint", inputs: 3,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "...", pending: 1},
				{at: 1 * ms, ev: bar, ch: 1, id: 1, blocked: "...", pending: 1},
				{at: 7 * ms, ev: eoi, ch: 2, want: want{triggered: 1, align: 7 * ms}, blocked: "..."},
				{at: 8 * ms, ev: eoi, ch: 2, blocked: "..."},
				{at: 9 * ms, ev: bar, ch: 0, id: 2, blocked: "...", pending: 2, start: 9 * ms},
				{at: 9 * ms, ev: bar, ch: 1, id: 2, want: want{triggered: 2, first: 9 * ms}, blocked: "..."},
			},
		},
		{
			name: "end of input completing several triggers the newest", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "..", pending: 1},
				{at: 1 * ms, ev: bar, ch: 0, id: 2, blocked: "..", pending: 2, start: 1 * ms},
				{at: 5 * ms, ev: eoi, ch: 1, want: want{triggered: 2, first: 1 * ms, align: 4 * ms}, blocked: ".."},
			},
		},
		{
			name: "end of input skips an aborted newer checkpoint", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "..", pending: 1},
				{at: 1 * ms, ev: bar, ch: 0, id: 2, blocked: "..", pending: 2, start: 1 * ms},
				{at: 2 * ms, ev: abort, id: 2, want: want{aborted: 2, reason: AbortedByCoordinator}, blocked: "..", pending: 1},
				{at: 5 * ms, ev: eoi, ch: 1, want: want{triggered: 1, align: 5 * ms}, blocked: ".."},
				{at: 6 * ms, ev: bar, ch: 0, id: 2, blocked: ".."},
			},
		},
		{
			name: "end of input before any barrier", inputs: 2,
			steps: []step{
				{at: 0, ev: eoi, ch: 0, blocked: ".."},
				{at: 3 * ms, ev: bar, ch: 1, id: 1, want: want{triggered: 1, first: 3 * ms}, blocked: ".."},
			},
		},
		{
			name: "all channels end", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "..", pending: 1},
				{at: 1 * ms, ev: eoi, ch: 0, blocked: "..", pending: 1},
				{at: 2 * ms, ev: eoi, ch: 1, want: want{triggered: 1, align: 2 * ms}, blocked: ".."},
				{at: 3 * ms, ev: bar, ch: 1, id: 2, blocked: ".."},
				{at: 3 * ms, ev: cancel, ch: 0, id: 2, blocked: ".."},
			},
		},
	})
}

// TestTrackerForgetsBeyondMaxTracked checks that the tracker follows at most
// maxTracked checkpoints, forgetting the oldest.
func TestTrackerForgetsBeyondMaxTracked(t *testing.T) {
	clock := &fakeClock{t: t0}
	h := newTracker(2, clock.now)
	for id := int64(1); id <= maxTracked+1; id++ {
		h.OnBarrier(0, id)
	}
	if got := h.OnBarrier(1, 1); !sameResult(got, Result{}) {
		t.Errorf("barrier of a forgotten checkpoint: got %s, want {}", fmtResult(got))
	}
	if got := h.OnBarrier(1, 2); got.Triggered != 2 {
		t.Errorf("barrier of the oldest remembered checkpoint: got %s, want triggered 2", fmtResult(got))
	}
}
