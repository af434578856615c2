package barrier

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestAlignerUnalignedInterleavings covers unaligned checkpoints in the
// exactly-once handler: started by a priority barrier, switched to by one or
// by TimeOut, completed by barriers or end of input, abandoned.
func TestAlignerUnalignedInterleavings(t *testing.T) {
	runInterleavings(t, ExactlyOnce, []interleaving{
		{
			// The priority barrier overtook the records queued on channel
			// 1 (the task persists those); what channels 0 and 2 deliver
			// until their barriers is in flight.
			name: "priority barrier overtakes: triggers at once, others recorded", inputs: 3,
			steps: []step{
				{at: 2 * ms, ev: prio, ch: 1, id: 1, want: want{triggered: 1, unaligned: true, first: 2 * ms}, blocked: "...", recording: "R.R", pending: 1, start: 2 * ms},
				{at: 5 * ms, ev: bar, ch: 0, id: 1, blocked: "...", recording: "..R", pending: 1, start: 2 * ms},
				{at: 9 * ms, ev: bar, ch: 2, id: 1, want: want{inFlightDone: 1, first: 2 * ms, align: 7 * ms}, blocked: "..."},
				{at: 10 * ms, ev: bar, ch: 1, id: 1, blocked: "..."},
				{at: 11 * ms, ev: bar, ch: 0, id: 2, blocked: "B..", pending: 2, start: 11 * ms},
			},
		},
		{
			name: "priority barriers on every channel finish the recording", inputs: 3,
			steps: []step{
				{at: 0, ev: prio, ch: 0, id: 1, want: want{triggered: 1, unaligned: true}, blocked: "...", recording: ".RR", pending: 1},
				{at: 1 * ms, ev: prio, ch: 2, id: 1, blocked: "...", recording: ".R.", pending: 1},
				{at: 1 * ms, ev: prio, ch: 2, id: 1, blocked: "...", recording: ".R.", pending: 1},
				{at: 4 * ms, ev: prio, ch: 1, id: 1, want: want{inFlightDone: 1, align: 4 * ms}, blocked: "..."},
			},
		},
		{
			name: "single input: triggered and in-flight data complete at once", inputs: 1,
			steps: []step{
				{at: 3 * ms, ev: prio, ch: 0, id: 1, want: want{triggered: 1, unaligned: true, inFlightDone: 1, first: 3 * ms}, blocked: "."},
				{at: 7 * ms, ev: prio, ch: 0, id: 2, want: want{triggered: 2, unaligned: true, inFlightDone: 2, first: 7 * ms}, blocked: "."},
				{at: 8 * ms, ev: prio, ch: 0, id: 2, blocked: "."},
				{at: 9 * ms, ev: bar, ch: 0, id: 3, want: want{triggered: 3, first: 9 * ms}, blocked: "."},
			},
		},
		{
			name: "single live input after the others ended", inputs: 3,
			steps: []step{
				{at: 0, ev: eoi, ch: 0, blocked: "..."},
				{at: 1 * ms, ev: eoi, ch: 2, blocked: "..."},
				{at: 2 * ms, ev: prio, ch: 1, id: 1, want: want{triggered: 1, unaligned: true, inFlightDone: 1, first: 2 * ms}, blocked: "..."},
			},
		},
		{
			name: "channels that ended before the checkpoint are not recorded", inputs: 3,
			steps: []step{
				{at: 0, ev: eoi, ch: 1, blocked: "..."},
				{at: 1 * ms, ev: prio, ch: 0, id: 1, want: want{triggered: 1, unaligned: true, first: 1 * ms}, blocked: "...", recording: "..R", pending: 1, start: 1 * ms},
				{at: 3 * ms, ev: prio, ch: 2, id: 1, want: want{inFlightDone: 1, first: 1 * ms, align: 2 * ms}, blocked: "..."},
			},
		},
		{
			name: "a newer priority barrier subsumes the recording checkpoint", inputs: 2,
			steps: []step{
				{at: 0, ev: prio, ch: 0, id: 1, want: want{triggered: 1, unaligned: true}, blocked: "..", recording: ".R", pending: 1},
				{at: 3 * ms, ev: prio, ch: 0, id: 2, want: want{aborted: 1, reason: Subsumed, triggered: 2, unaligned: true, first: 3 * ms}, blocked: "..", recording: ".R", pending: 2, start: 3 * ms},
				{at: 4 * ms, ev: bar, ch: 1, id: 1, blocked: "..", recording: ".R", pending: 2, start: 3 * ms},
				{at: 6 * ms, ev: prio, ch: 1, id: 2, want: want{inFlightDone: 2, first: 3 * ms, align: 3 * ms}, blocked: ".."},
			},
		},
		{
			name: "a newer in-band barrier subsumes the recording checkpoint and aligns", inputs: 2,
			steps: []step{
				{at: 0, ev: prio, ch: 0, id: 1, want: want{triggered: 1, unaligned: true}, blocked: "..", recording: ".R", pending: 1},
				{at: 2 * ms, ev: bar, ch: 0, id: 2, want: want{aborted: 1, reason: Subsumed}, blocked: "B.", pending: 2, start: 2 * ms},
				{at: 3 * ms, ev: bar, ch: 1, id: 1, blocked: "B.", pending: 2, start: 2 * ms},
				{at: 5 * ms, ev: bar, ch: 1, id: 2, want: want{triggered: 2, first: 2 * ms, align: 3 * ms}, blocked: ".."},
			},
		},
		{
			name: "a newer priority barrier subsumes the recording checkpoint on a single live input", inputs: 2,
			steps: []step{
				{at: 0, ev: prio, ch: 0, id: 1, want: want{triggered: 1, unaligned: true}, blocked: "..", recording: ".R", pending: 1},
				{at: 1 * ms, ev: eoi, ch: 0, blocked: "..", recording: ".R", pending: 1},
				{at: 2 * ms, ev: prio, ch: 1, id: 2, want: want{aborted: 1, reason: Subsumed, triggered: 2, unaligned: true, inFlightDone: 2, first: 2 * ms}, blocked: ".."},
			},
		},
		{
			name: "cancellation marker during an unaligned checkpoint aborts it", inputs: 3,
			steps: []step{
				{at: 0, ev: prio, ch: 0, id: 1, want: want{triggered: 1, unaligned: true}, blocked: "...", recording: ".RR", pending: 1},
				{at: 1 * ms, ev: bar, ch: 1, id: 1, blocked: "...", recording: "..R", pending: 1},
				{at: 2 * ms, ev: cancel, ch: 2, id: 1, want: want{aborted: 1, reason: Canceled}, blocked: "..."},
				// No second abort, and its late barriers are stale.
				{at: 3 * ms, ev: cancel, ch: 1, id: 1, blocked: "..."},
				{at: 3 * ms, ev: prio, ch: 2, id: 1, blocked: "..."},
				{at: 4 * ms, ev: prio, ch: 2, id: 2, want: want{triggered: 2, unaligned: true, first: 4 * ms}, blocked: "...", recording: "RR.", pending: 2, start: 4 * ms},
			},
		},
		{
			name: "coordinator abort during an unaligned checkpoint aborts it", inputs: 2,
			steps: []step{
				{at: 0, ev: prio, ch: 1, id: 1, want: want{triggered: 1, unaligned: true}, blocked: "..", recording: "R.", pending: 1},
				{at: 2 * ms, ev: abort, id: 1, want: want{aborted: 1, reason: AbortedByCoordinator}, blocked: ".."},
				{at: 3 * ms, ev: prio, ch: 0, id: 1, blocked: ".."},
				{at: 4 * ms, ev: abort, id: 1, blocked: ".."},
			},
		},
		{
			name: "abort of an unaligned checkpoint whose in-flight data is complete is ignored", inputs: 2,
			steps: []step{
				{at: 0, ev: prio, ch: 1, id: 1, want: want{triggered: 1, unaligned: true}, blocked: "..", recording: "R.", pending: 1},
				{at: 1 * ms, ev: bar, ch: 0, id: 1, want: want{inFlightDone: 1, align: 1 * ms}, blocked: ".."},
				{at: 2 * ms, ev: abort, id: 1, blocked: ".."},
				{at: 2 * ms, ev: cancel, ch: 0, id: 1, blocked: ".."},
			},
		},
		{
			// The task forwards cancellation markers for 1, then 2: it
			// stops recording 1 and gives up its snapshot.
			name: "cancellation marker for a newer checkpoint drops the recording one", inputs: 2,
			steps: []step{
				{at: 0, ev: prio, ch: 0, id: 1, want: want{triggered: 1, unaligned: true}, blocked: "..", recording: ".R", pending: 1},
				{at: 1 * ms, ev: cancel, ch: 1, id: 2, want: want{olderAborted: []int64{1}, aborted: 2, reason: Canceled}, blocked: ".."},
				{at: 2 * ms, ev: prio, ch: 1, id: 1, blocked: ".."},
				{at: 2 * ms, ev: bar, ch: 0, id: 2, blocked: ".."},
				{at: 3 * ms, ev: bar, ch: 0, id: 3, blocked: "B.", pending: 3, start: 3 * ms},
			},
		},
		{
			name: "coordinator abort of a newer checkpoint drops the recording one", inputs: 3,
			steps: []step{
				{at: 0, ev: prio, ch: 2, id: 1, want: want{triggered: 1, unaligned: true}, blocked: "...", recording: "RR.", pending: 1},
				{at: 1 * ms, ev: abort, id: 3, want: want{olderAborted: []int64{1}, aborted: 3, reason: AbortedByCoordinator}, blocked: "..."},
				{at: 2 * ms, ev: prio, ch: 0, id: 3, blocked: "..."},
				{at: 3 * ms, ev: prio, ch: 0, id: 4, want: want{triggered: 4, unaligned: true, first: 3 * ms}, blocked: "...", recording: ".RR", pending: 4, start: 3 * ms},
			},
		},
		{
			name: "end of input on the last recorded channel finishes the in-flight data", inputs: 3,
			steps: []step{
				{at: 0, ev: prio, ch: 2, id: 1, want: want{triggered: 1, unaligned: true}, blocked: "...", recording: "RR.", pending: 1},
				{at: 1 * ms, ev: bar, ch: 0, id: 1, blocked: "...", recording: ".R.", pending: 1},
				{at: 4 * ms, ev: eoi, ch: 1, want: want{inFlightDone: 1, align: 4 * ms}, blocked: "..."},
				{at: 5 * ms, ev: eoi, ch: 1, blocked: "..."},
				{at: 6 * ms, ev: prio, ch: 0, id: 2, want: want{triggered: 2, unaligned: true, first: 6 * ms}, blocked: "...", recording: "..R", pending: 2, start: 6 * ms},
			},
		},
		{
			name: "end of input on a channel past the barrier changes nothing", inputs: 2,
			steps: []step{
				{at: 0, ev: prio, ch: 0, id: 1, want: want{triggered: 1, unaligned: true}, blocked: "..", recording: ".R", pending: 1},
				{at: 1 * ms, ev: eoi, ch: 0, blocked: "..", recording: ".R", pending: 1},
				{at: 2 * ms, ev: cancel, ch: 0, id: 1, blocked: "..", recording: ".R", pending: 1},
				{at: 3 * ms, ev: eoi, ch: 1, want: want{inFlightDone: 1, align: 3 * ms}, blocked: ".."},
			},
		},
		{
			name: "timeout switches an aligned checkpoint to unaligned", inputs: 4,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B...", pending: 1},
				{at: 3 * ms, ev: bar, ch: 2, id: 1, blocked: "B.B.", pending: 1},
				{at: 5 * ms, ev: timeout, id: 2, blocked: "B.B.", pending: 1},
				{at: 5 * ms, ev: timeout, id: 0, blocked: "B.B.", pending: 1},
				// Channels 0 and 2 delivered the barrier: released, nothing of
				// theirs in flight. Channels 1 and 3 are recorded.
				{at: 10 * ms, ev: timeout, id: 1, want: want{triggered: 1, unaligned: true, timedOut: true, align: 10 * ms}, blocked: "....", recording: ".R.R", pending: 1},
				{at: 11 * ms, ev: timeout, id: 1, blocked: "....", recording: ".R.R", pending: 1},
				{at: 12 * ms, ev: bar, ch: 1, id: 1, blocked: "....", recording: "...R", pending: 1},
				{at: 15 * ms, ev: prio, ch: 3, id: 1, want: want{inFlightDone: 1, align: 15 * ms}, blocked: "...."},
				{at: 16 * ms, ev: timeout, id: 1, blocked: "...."},
			},
		},
		{
			// Every live channel but one is blocked; the ended one is neither
			// released nor recorded.
			name: "timeout with ended channels records only the live unblocked ones", inputs: 3,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B..", pending: 1},
				{at: 1 * ms, ev: eoi, ch: 1, blocked: "B..", pending: 1},
				{at: 4 * ms, ev: timeout, id: 1, want: want{triggered: 1, unaligned: true, timedOut: true, align: 4 * ms}, blocked: "...", recording: "..R", pending: 1},
				{at: 6 * ms, ev: eoi, ch: 2, want: want{inFlightDone: 1, align: 6 * ms}, blocked: "..."},
			},
		},
		{
			name: "timeout when nothing aligns does nothing", inputs: 2,
			steps: []step{
				{at: 0, ev: timeout, id: 1, blocked: ".."},
				{at: 1 * ms, ev: bar, ch: 0, id: 1, blocked: "B.", pending: 1, start: 1 * ms},
				{at: 2 * ms, ev: bar, ch: 1, id: 1, want: want{triggered: 1, first: 1 * ms, align: 1 * ms}, blocked: ".."},
				{at: 3 * ms, ev: timeout, id: 1, blocked: ".."},
				{at: 4 * ms, ev: abort, id: 2, want: want{aborted: 2, reason: AbortedByCoordinator}, blocked: ".."},
				{at: 5 * ms, ev: timeout, id: 2, blocked: ".."},
			},
		},
		{
			// An upstream subtask timed out and sent its barrier ahead.
			name: "priority barrier while aligning switches to unaligned", inputs: 3,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B..", pending: 1},
				{at: 4 * ms, ev: prio, ch: 1, id: 1, want: want{triggered: 1, unaligned: true, align: 4 * ms}, blocked: "...", recording: "..R", pending: 1},
				{at: 7 * ms, ev: bar, ch: 2, id: 1, want: want{inFlightDone: 1, align: 7 * ms}, blocked: "..."},
			},
		},
		{
			name: "priority barrier as the last barrier of an aligning checkpoint", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B.", pending: 1},
				{at: 2 * ms, ev: prio, ch: 1, id: 1, want: want{triggered: 1, unaligned: true, inFlightDone: 1, align: 2 * ms}, blocked: ".."},
			},
		},
		{
			name: "priority barrier of a newer checkpoint subsumes the aligning one", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B.", pending: 1},
				{at: 2 * ms, ev: prio, ch: 1, id: 2, want: want{aborted: 1, reason: Subsumed, triggered: 2, unaligned: true, first: 2 * ms}, blocked: "..", recording: "R.", pending: 2, start: 2 * ms},
				{at: 3 * ms, ev: bar, ch: 0, id: 2, want: want{inFlightDone: 2, first: 2 * ms, align: 1 * ms}, blocked: ".."},
			},
		},
		{
			name: "old barriers of either kind are ignored", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 2, blocked: "B.", pending: 2},
				{at: 1 * ms, ev: prio, ch: 1, id: 1, blocked: "B.", pending: 2},
				{at: 2 * ms, ev: bar, ch: 1, id: 2, want: want{triggered: 2, align: 2 * ms}, blocked: ".."},
				{at: 3 * ms, ev: prio, ch: 0, id: 2, blocked: ".."},
				{at: 4 * ms, ev: prio, ch: 0, id: 3, want: want{triggered: 3, unaligned: true, first: 4 * ms}, blocked: "..", recording: ".R", pending: 3, start: 4 * ms},
				{at: 5 * ms, ev: prio, ch: 1, id: 2, blocked: "..", recording: ".R", pending: 3, start: 4 * ms},
				{at: 5 * ms, ev: bar, ch: 1, id: 1, blocked: "..", recording: ".R", pending: 3, start: 4 * ms},
				{at: 6 * ms, ev: bar, ch: 1, id: 3, want: want{inFlightDone: 3, first: 4 * ms, align: 2 * ms}, blocked: ".."},
				{at: 7 * ms, ev: prio, ch: 1, id: 3, blocked: ".."},
			},
		},
	})
}

// unalignedStats sums what simulateUnaligned saw over its runs.
type unalignedStats struct {
	alignedDone, unalignedDone, timedOut, subsumed int
}

// simulateUnaligned runs a task loop over inputs channels carrying records
// and barriers 1..checkpoints, each checkpoint aligned or unaligned at random.
// The task reads only unblocked channels; it may take the first barrier
// queued on a channel out early, as a priority barrier, when its checkpoint
// is unaligned or timed out, the records queued before it then being in
// flight; and it fires the timeout of an aligning checkpoint at random.
//
// For every checkpoint c that completes, the records in its snapshot (read
// before c triggered) and in its in-flight data (taken over by a priority
// barrier, or read from a channel while Recording) must be exactly the records
// before barrier c on their channels. Every checkpoint completes or is
// subsumed, once.
func simulateUnaligned(t *testing.T, inputs, checkpoints int, seed uint64, st *unalignedStats) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	unaligned := make([]bool, checkpoints+1) // by checkpoint id
	for c := 1; c <= checkpoints; c++ {
		unaligned[c] = rng.IntN(2) == 0
	}
	queues := make([][]element, inputs)
	before := make([]int, checkpoints+2) // before[c]: records before barrier c
	for ch := range queues {
		for cp := range int64(checkpoints + 1) {
			n := rng.IntN(4)
			for range n {
				queues[ch] = append(queues[ch], element{epoch: cp})
			}
			for c := cp + 1; c <= int64(checkpoints)+1; c++ {
				before[c] += n
			}
			if cp < int64(checkpoints) {
				queues[ch] = append(queues[ch], element{barrier: true, epoch: cp + 1})
			}
		}
	}

	clock := &fakeClock{t: t0}
	h := New(ExactlyOnce, inputs, clock.now)
	ended := make([]bool, inputs)
	timedOut := make([]bool, checkpoints+1)
	processed := make([]int, checkpoints+1) // processed[e]: records of epoch e read so far
	inState := make([]int, checkpoints+1)   // records in c's snapshot
	inFlight := make([]int, checkpoints+1)  // records in c's in-flight data
	outcome := make([]string, checkpoints+1)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, %d inputs: %s", seed, inputs, fmt.Sprintf(format, args...))
	}
	complete := func(c int64) {
		if outcome[c] != "" {
			fail("checkpoint %d completed after it %s", c, outcome[c])
		}
		outcome[c] = "completed"
		if got := inState[c] + inFlight[c]; got != before[c] {
			fail("checkpoint %d holds %d records in its snapshot and %d in flight, want %d in all",
				c, inState[c], inFlight[c], before[c])
		}
	}
	act := func(res Result) {
		if res.Aborted != 0 {
			if res.AbortReason != Subsumed || len(res.OlderAborted) != 0 || outcome[res.Aborted] != "" {
				fail("unexpected abort %s", fmtResult(res))
			}
			outcome[res.Aborted] = "was subsumed"
			st.subsumed++
		}
		if c := res.Triggered; c != 0 {
			// The snapshot holds what was read so far, and must not hold a
			// record that came after barrier c.
			for e, n := range processed {
				if int64(e) >= c && n != 0 {
					fail("checkpoint %d triggered after %d records of epoch %d", c, n, e)
				}
				inState[c] += n
			}
			if res.TimedOut {
				timedOut[c] = true
				st.timedOut++
			}
			if !res.Unaligned {
				st.alignedDone++
				complete(c)
			}
		}
		if c := res.InFlightDone; c != 0 {
			st.unalignedDone++
			complete(c)
		}
	}

	for {
		var ready, early []int
		for ch := range inputs {
			if ended[ch] || h.Blocked(ch) {
				continue
			}
			ready = append(ready, ch)
			for i, e := range queues[ch] {
				if e.barrier {
					if i > 0 && (unaligned[e.epoch] || timedOut[e.epoch]) {
						early = append(early, ch)
					}
					break
				}
			}
		}
		if len(ready) == 0 {
			break
		}
		clock.t = clock.t.Add(time.Duration(rng.IntN(3)) * ms)
		if p := h.Pending(); p != 0 && !h.Unaligned() && rng.IntN(8) == 0 {
			act(h.TimeOut(p))
			continue
		}
		if len(early) > 0 && rng.IntN(3) == 0 {
			// Take the first barrier out ahead of the records queued before
			// it: they are in flight for its checkpoint if that goes on.
			ch := early[rng.IntN(len(early))]
			i := slices.IndexFunc(queues[ch], func(e element) bool { return e.barrier })
			c := queues[ch][i].epoch
			queues[ch] = slices.Delete(queues[ch], i, i+1)
			res := h.OnPriorityBarrier(ch, c)
			if res.Triggered == c || res.InFlightDone == c || (h.Pending() == c && h.Unaligned()) {
				inFlight[c] += i
			}
			act(res)
			continue
		}
		ch := ready[rng.IntN(len(ready))]
		if len(queues[ch]) == 0 {
			ended[ch] = true
			act(h.OnEndOfInput(ch))
			continue
		}
		e := queues[ch][0]
		queues[ch] = queues[ch][1:]
		switch {
		case !e.barrier:
			if h.Recording(ch) {
				c := h.Pending()
				if e.epoch >= c {
					fail("record of epoch %d recorded for checkpoint %d", e.epoch, c)
				}
				inFlight[c]++
			}
			processed[e.epoch]++
		case unaligned[e.epoch]:
			act(h.OnPriorityBarrier(ch, e.epoch))
		default:
			act(h.OnBarrier(ch, e.epoch))
		}
	}
	if h.Pending() != 0 || h.Unaligned() {
		fail("checkpoint %d still pending after every input ended", h.Pending())
	}
	for c := 1; c <= checkpoints; c++ {
		if outcome[c] == "" {
			fail("checkpoint %d neither completed nor was subsumed", c)
		}
	}
}

// TestSimulatedUnalignedTaskLoop mixes aligned, unaligned and timed-out
// checkpoints at random: each snapshot with its in-flight data holds exactly
// the records before its barriers.
func TestSimulatedUnalignedTaskLoop(t *testing.T) {
	var st unalignedStats
	for seed := range uint64(500) {
		simulateUnaligned(t, 1+int(seed%4), 6, seed, &st)
	}
	t.Logf("%+v", st)
	if st.alignedDone == 0 || st.unalignedDone == 0 || st.timedOut == 0 || st.subsumed == 0 {
		t.Errorf("500 runs did not cover every case: %+v", st)
	}
}
