package barrier

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestAlignerInterleavings(t *testing.T) {
	runInterleavings(t, ExactlyOnce, []interleaving{
		{
			name: "two inputs, channel 0 first", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B.", pending: 1, start: 0},
				{at: 5 * ms, ev: bar, ch: 1, id: 1, want: want{triggered: 1, first: 0, align: 5 * ms}, blocked: ".."},
			},
		},
		{
			name: "two inputs, channel 1 first", inputs: 2,
			steps: []step{
				{at: 1 * ms, ev: bar, ch: 1, id: 1, blocked: ".B", pending: 1, start: 1 * ms},
				{at: 3 * ms, ev: bar, ch: 0, id: 1, want: want{triggered: 1, first: 1 * ms, align: 2 * ms}, blocked: ".."},
			},
		},
		{
			name: "three inputs, order 2 0 1", inputs: 3,
			steps: []step{
				{at: 0, ev: bar, ch: 2, id: 1, blocked: "..B", pending: 1},
				{at: 1 * ms, ev: bar, ch: 0, id: 1, blocked: "B.B", pending: 1},
				{at: 4 * ms, ev: bar, ch: 1, id: 1, want: want{triggered: 1, align: 4 * ms}, blocked: "..."},
			},
		},
		{
			name: "three inputs, order 1 2 0, then 0 1 2", inputs: 3,
			steps: []step{
				{at: 0, ev: bar, ch: 1, id: 1, blocked: ".B.", pending: 1},
				{at: 0, ev: bar, ch: 2, id: 1, blocked: ".BB", pending: 1},
				{at: 2 * ms, ev: bar, ch: 0, id: 1, want: want{triggered: 1, align: 2 * ms}, blocked: "..."},
				{at: 10 * ms, ev: bar, ch: 0, id: 2, blocked: "B..", pending: 2, start: 10 * ms},
				{at: 11 * ms, ev: bar, ch: 1, id: 2, blocked: "BB.", pending: 2, start: 10 * ms},
				{at: 13 * ms, ev: bar, ch: 2, id: 2, want: want{triggered: 2, first: 10 * ms, align: 3 * ms}, blocked: "..."},
			},
		},
		{
			// Channel 0 keeps receiving records after barrier 1, but the
			// task does not read them while it is blocked; they are
			// processed after the snapshot, so they belong to checkpoint 2.
			name: "records on a blocked channel are held back until alignment ends", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B.", pending: 1},
				{at: 20 * ms, ev: bar, ch: 1, id: 1, want: want{triggered: 1, align: 20 * ms}, blocked: ".."},
			},
		},
		{
			name: "single input triggers at once", inputs: 1,
			steps: []step{
				{at: 3 * ms, ev: bar, ch: 0, id: 1, want: want{triggered: 1, first: 3 * ms}, blocked: "."},
				{at: 9 * ms, ev: bar, ch: 0, id: 2, want: want{triggered: 2, first: 9 * ms}, blocked: "."},
				{at: 9 * ms, ev: bar, ch: 0, id: 2, blocked: "."},
			},
		},
		{
			name: "alignment duration measured with the fake clock", inputs: 3,
			steps: []step{
				{at: 10 * ms, ev: bar, ch: 1, id: 7, blocked: ".B.", pending: 7, start: 10 * ms},
				{at: 25 * ms, ev: bar, ch: 0, id: 7, blocked: "BB.", pending: 7, start: 10 * ms},
				{at: 40 * ms, ev: bar, ch: 2, id: 7, want: want{triggered: 7, first: 10 * ms, align: 30 * ms}, blocked: "..."},
			},
		},
		{
			name: "coordinator abort while aligning", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B.", pending: 1},
				{at: 1 * ms, ev: abort, id: 1, want: want{aborted: 1, reason: AbortedByCoordinator}, blocked: ".."},
				{at: 2 * ms, ev: bar, ch: 1, id: 1, blocked: ".."},
				{at: 3 * ms, ev: abort, id: 1, blocked: ".."},
				{at: 4 * ms, ev: bar, ch: 1, id: 2, blocked: ".B", pending: 2, start: 4 * ms},
				{at: 5 * ms, ev: bar, ch: 0, id: 2, want: want{triggered: 2, first: 4 * ms, align: 1 * ms}, blocked: ".."},
			},
		},
		{
			name: "coordinator abort of a newer checkpoint abandons the pending one", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B.", pending: 1},
				{at: 1 * ms, ev: abort, id: 2, want: want{aborted: 2, reason: AbortedByCoordinator}, blocked: ".."},
				{at: 2 * ms, ev: bar, ch: 1, id: 1, blocked: ".."},
				{at: 2 * ms, ev: bar, ch: 1, id: 2, blocked: ".."},
				{at: 3 * ms, ev: bar, ch: 0, id: 3, blocked: "B.", pending: 3, start: 3 * ms},
			},
		},
		{
			name: "coordinator abort before any barrier makes its barriers stale", inputs: 2,
			steps: []step{
				{at: 0, ev: abort, id: 3, want: want{aborted: 3, reason: AbortedByCoordinator}, blocked: ".."},
				{at: 1 * ms, ev: bar, ch: 0, id: 3, blocked: ".."},
				{at: 1 * ms, ev: bar, ch: 1, id: 2, blocked: ".."},
				{at: 2 * ms, ev: bar, ch: 0, id: 4, blocked: "B.", pending: 4, start: 2 * ms},
			},
		},
		{
			name: "coordinator abort of an older or triggered checkpoint is ignored", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B.", pending: 1},
				{at: 1 * ms, ev: bar, ch: 1, id: 1, want: want{triggered: 1, align: 1 * ms}, blocked: ".."},
				{at: 2 * ms, ev: abort, id: 1, blocked: ".."},
				{at: 3 * ms, ev: bar, ch: 0, id: 2, blocked: "B.", pending: 2, start: 3 * ms},
				{at: 4 * ms, ev: abort, id: 1, blocked: "B.", pending: 2, start: 3 * ms},
				{at: 4 * ms, ev: abort, id: 0, blocked: "B.", pending: 2, start: 3 * ms},
			},
		},
		{
			name: "cancellation marker for the pending checkpoint", inputs: 3,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B..", pending: 1},
				{at: 1 * ms, ev: bar, ch: 2, id: 1, blocked: "B.B", pending: 1},
				{at: 2 * ms, ev: cancel, ch: 1, id: 1, want: want{aborted: 1, reason: Canceled}, blocked: "..."},
				// No second abort: the marker is forwarded once.
				{at: 3 * ms, ev: cancel, ch: 1, id: 1, blocked: "..."},
				{at: 4 * ms, ev: bar, ch: 1, id: 2, blocked: ".B.", pending: 2, start: 4 * ms},
			},
		},
		{
			name: "cancellation marker for a newer checkpoint", inputs: 3,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B..", pending: 1},
				{at: 1 * ms, ev: cancel, ch: 1, id: 2, want: want{aborted: 2, reason: Canceled}, blocked: "..."},
				{at: 2 * ms, ev: cancel, ch: 2, id: 2, blocked: "..."},
				{at: 3 * ms, ev: bar, ch: 0, id: 2, blocked: "..."},
				{at: 3 * ms, ev: bar, ch: 2, id: 1, blocked: "..."},
				{at: 5 * ms, ev: bar, ch: 2, id: 3, blocked: "..B", pending: 3, start: 5 * ms},
			},
		},
		{
			name: "cancellation marker before any barrier, once per id", inputs: 2,
			steps: []step{
				{at: 0, ev: cancel, ch: 0, id: 1, want: want{aborted: 1, reason: Canceled}, blocked: ".."},
				{at: 1 * ms, ev: cancel, ch: 1, id: 1, blocked: ".."},
				{at: 2 * ms, ev: bar, ch: 1, id: 1, blocked: ".."},
				{at: 3 * ms, ev: bar, ch: 0, id: 2, blocked: "B.", pending: 2, start: 3 * ms},
				{at: 4 * ms, ev: bar, ch: 1, id: 2, want: want{triggered: 2, first: 3 * ms, align: 1 * ms}, blocked: ".."},
			},
		},
		{
			name: "cancellation marker for an old checkpoint is ignored", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B.", pending: 1},
				{at: 0, ev: bar, ch: 1, id: 1, want: want{triggered: 1}, blocked: ".."},
				{at: 1 * ms, ev: cancel, ch: 0, id: 1, blocked: ".."},
				{at: 2 * ms, ev: bar, ch: 0, id: 2, blocked: "B.", pending: 2, start: 2 * ms},
				{at: 3 * ms, ev: cancel, ch: 1, id: 1, blocked: "B.", pending: 2, start: 2 * ms},
			},
		},
		{
			name: "barrier n+1 before n completes subsumes n", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B.", pending: 1},
				{at: 4 * ms, ev: bar, ch: 1, id: 2, want: want{aborted: 1, reason: Subsumed}, blocked: ".B", pending: 2, start: 4 * ms},
				{at: 9 * ms, ev: bar, ch: 0, id: 2, want: want{triggered: 2, first: 4 * ms, align: 5 * ms}, blocked: ".."},
				{at: 9 * ms, ev: bar, ch: 1, id: 1, blocked: ".."},
			},
		},
		{
			name: "barrier n+2 subsumes n on three inputs", inputs: 3,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B..", pending: 1},
				{at: 1 * ms, ev: bar, ch: 1, id: 1, blocked: "BB.", pending: 1},
				{at: 2 * ms, ev: bar, ch: 2, id: 3, want: want{aborted: 1, reason: Subsumed}, blocked: "..B", pending: 3, start: 2 * ms},
				{at: 3 * ms, ev: bar, ch: 0, id: 2, blocked: "..B", pending: 3, start: 2 * ms},
				{at: 4 * ms, ev: bar, ch: 0, id: 3, blocked: "B.B", pending: 3, start: 2 * ms},
				{at: 6 * ms, ev: bar, ch: 1, id: 3, want: want{triggered: 3, first: 2 * ms, align: 4 * ms}, blocked: "..."},
			},
		},
		{
			name: "end of input on the last unaligned channel completes alignment", inputs: 3,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B..", pending: 1},
				{at: 2 * ms, ev: bar, ch: 1, id: 1, blocked: "BB.", pending: 1},
				{at: 6 * ms, ev: eoi, ch: 2, want: want{triggered: 1, align: 6 * ms}, blocked: "..."},
				{at: 7 * ms, ev: bar, ch: 0, id: 2, blocked: "B..", pending: 2, start: 7 * ms},
				{at: 8 * ms, ev: bar, ch: 1, id: 2, want: want{triggered: 2, first: 7 * ms, align: 1 * ms}, blocked: "..."},
			},
		},
		{
			name: "end of input on another channel keeps aligning", inputs: 3,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B..", pending: 1},
				{at: 1 * ms, ev: eoi, ch: 1, blocked: "B..", pending: 1},
				{at: 2 * ms, ev: eoi, ch: 1, blocked: "B..", pending: 1},
				{at: 3 * ms, ev: bar, ch: 2, id: 1, want: want{triggered: 1, align: 3 * ms}, blocked: "..."},
			},
		},
		{
			// A task never reads a blocked channel, so this is defensive: an
			// ended channel is never reported blocked.
			name: "end of input on a blocked channel", inputs: 3,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, blocked: "B..", pending: 1},
				{at: 1 * ms, ev: eoi, ch: 0, blocked: "...", pending: 1},
				{at: 2 * ms, ev: bar, ch: 1, id: 1, blocked: ".B.", pending: 1},
				{at: 3 * ms, ev: bar, ch: 2, id: 1, want: want{triggered: 1, align: 3 * ms}, blocked: "..."},
			},
		},
		{
			name: "end of input before any barrier", inputs: 2,
			steps: []step{
				{at: 0, ev: eoi, ch: 1, blocked: ".."},
				{at: 3 * ms, ev: bar, ch: 0, id: 1, want: want{triggered: 1, first: 3 * ms}, blocked: ".."},
			},
		},
		{
			name: "all channels end", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 0, id: 1, want: want{}, blocked: "B.", pending: 1},
				{at: 1 * ms, ev: bar, ch: 1, id: 1, want: want{triggered: 1, align: 1 * ms}, blocked: ".."},
				{at: 2 * ms, ev: eoi, ch: 0, blocked: ".."},
				{at: 3 * ms, ev: eoi, ch: 1, blocked: ".."},
				{at: 4 * ms, ev: bar, ch: 1, id: 2, blocked: ".."},
				{at: 4 * ms, ev: cancel, ch: 1, id: 2, blocked: ".."},
			},
		},
		{
			name: "stale barriers after an abort are ignored", inputs: 2,
			steps: []step{
				{at: 0, ev: bar, ch: 1, id: 2, blocked: ".B", pending: 2},
				{at: 1 * ms, ev: abort, id: 2, want: want{aborted: 2, reason: AbortedByCoordinator}, blocked: ".."},
				{at: 2 * ms, ev: bar, ch: 0, id: 2, blocked: ".."},
				{at: 2 * ms, ev: bar, ch: 0, id: 1, blocked: ".."},
				{at: 3 * ms, ev: cancel, ch: 0, id: 2, blocked: ".."},
				{at: 4 * ms, ev: bar, ch: 0, id: 3, blocked: "B.", pending: 3, start: 4 * ms},
			},
		},
	})
}

// simulate runs a task loop over inputs channels, each carrying records and
// barriers 1..checkpoints, reading only unblocked channels in an order chosen
// by seed. It returns the checkpoints triggered in order, and how many
// records of a later epoch were processed before the snapshot of an earlier
// checkpoint (records that would be replayed after a restore: duplicates).
func simulate(t *testing.T, mode Mode, inputs, checkpoints int, seed uint64) (triggered []int64, overtaken int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	queues := make([][]element, inputs)
	for ch := range queues {
		for cp := range int64(checkpoints + 1) {
			for range rng.IntN(4) {
				queues[ch] = append(queues[ch], element{epoch: cp})
			}
			if cp < int64(checkpoints) {
				queues[ch] = append(queues[ch], element{barrier: true, epoch: cp + 1})
			}
		}
	}
	clock := &fakeClock{t: t0}
	h := New(mode, inputs, clock.now)
	ended := make([]bool, inputs)
	for {
		var ready []int
		for ch := range inputs {
			if !ended[ch] && !h.Blocked(ch) {
				ready = append(ready, ch)
			}
		}
		if len(ready) == 0 {
			break
		}
		ch := ready[rng.IntN(len(ready))]
		clock.t = clock.t.Add(time.Duration(rng.IntN(3)) * ms)
		var res Result
		if len(queues[ch]) == 0 {
			ended[ch] = true
			res = h.OnEndOfInput(ch)
		} else {
			e := queues[ch][0]
			queues[ch] = queues[ch][1:]
			if !e.barrier {
				// The snapshot of checkpoint c must not contain records that
				// came after barrier c on their channel.
				done := int64(len(triggered))
				if e.epoch > done {
					overtaken++
				}
				continue
			}
			res = h.OnBarrier(ch, e.epoch)
		}
		if res.Aborted != 0 {
			t.Fatalf("seed %d: unexpected abort %s", seed, fmtResult(res))
		}
		if res.Triggered != 0 {
			triggered = append(triggered, res.Triggered)
		}
	}
	return triggered, overtaken
}

// TestSimulatedTaskLoop feeds random interleavings through a task loop that
// honours Blocked: every checkpoint triggers once, in order; aligned mode
// never lets a record overtake a barrier into an earlier snapshot, while
// at-least-once mode does.
func TestSimulatedTaskLoop(t *testing.T) {
	for _, tc := range []struct {
		name          string
		mode          Mode
		wantOvertaken bool
	}{
		{"exactly-once never overtakes", ExactlyOnce, false},
		{"at-least-once overtakes", AtLeastOnce, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			total := 0
			for seed := range uint64(200) {
				inputs := 1 + int(seed%4)
				triggered, overtaken := simulate(t, tc.mode, inputs, 5, seed)
				if len(triggered) != 5 {
					t.Fatalf("seed %d, %d inputs: triggered %v, want 1..5", seed, inputs, triggered)
				}
				for i, id := range triggered {
					if id != int64(i+1) {
						t.Fatalf("seed %d, %d inputs: triggered %v, want 1..5 in order", seed, inputs, triggered)
					}
				}
				if !tc.wantOvertaken && overtaken != 0 {
					t.Fatalf("seed %d, %d inputs: %d records overtook a barrier", seed, inputs, overtaken)
				}
				total += overtaken
			}
			if tc.wantOvertaken && total == 0 {
				t.Errorf("no record overtook a barrier in 200 runs; at-least-once should let them")
			}
		})
	}
}
