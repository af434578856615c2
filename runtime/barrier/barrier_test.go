package barrier

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// t0 is the fake clock's origin; steps give times as offsets from it.
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

const ms = time.Millisecond

// fakeClock is the injected now: tests move it, nothing sleeps.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// kind is what a channel (or the coordinator) delivers in one step.
type kind int

const (
	bar     kind = iota // barrier id on channel ch
	cancel              // cancellation marker for id on channel ch
	eoi                 // end of input on channel ch
	abort               // the coordinator aborts id
	prio                // priority (unaligned) barrier id on channel ch
	timeout             // the aligned-checkpoint timeout of id fires
)

func (k kind) String() string {
	return [...]string{"barrier", "cancel", "end-of-input", "abort", "priority barrier", "timeout"}[k]
}

// want is the expected Result, with times as offsets from t0.
type want struct {
	olderAborted []int64
	aborted      int64
	reason       Reason
	triggered    int64
	unaligned    bool
	timedOut     bool
	inFlightDone int64
	first        time.Duration // FirstBarrier - t0, when triggered or inFlightDone
	align        time.Duration
}

func (w want) result() Result {
	r := Result{
		OlderAborted: w.olderAborted,
		Aborted:      w.aborted, AbortReason: w.reason,
		Triggered: w.triggered, Unaligned: w.unaligned, TimedOut: w.timedOut,
		InFlightDone: w.inFlightDone,
		Alignment:    w.align,
	}
	if w.triggered != 0 || w.inFlightDone != 0 {
		r.FirstBarrier = t0.Add(w.first)
	}
	return r
}

// sameResult reports whether a and b are equal, a nil OlderAborted equal to
// an empty one.
func sameResult(a, b Result) bool {
	return slices.Equal(a.OlderAborted, b.OlderAborted) && scalars(a) == scalars(b)
}

// scalarResult is Result without its slice, so that it compares with ==.
type scalarResult struct {
	aborted      int64
	reason       Reason
	triggered    int64
	first        time.Time
	align        time.Duration
	unaligned    bool
	timedOut     bool
	inFlightDone int64
}

func scalars(r Result) scalarResult {
	return scalarResult{r.Aborted, r.AbortReason, r.Triggered, r.FirstBarrier, r.Alignment,
		r.Unaligned, r.TimedOut, r.InFlightDone}
}

// step is one event of an interleaving and what must hold after it.
type step struct {
	at   time.Duration // the fake clock when the event arrives
	ev   kind
	ch   int
	id   int64
	want want
	// blocked has one character per channel after the step: 'B' blocked,
	// '.' readable. Records arriving on a 'B' channel are held back by the
	// task until alignment ends.
	blocked string
	// recording, like blocked, has 'R' for a channel whose records are in
	// flight for an unaligned checkpoint, '.' otherwise; empty means none
	// records. Unaligned() must be true exactly when one does.
	recording string
	pending   int64
	start     time.Duration // AlignmentStart - t0 while pending != 0
}

type interleaving struct {
	name   string
	inputs int
	steps  []step
}

func runInterleavings(t *testing.T, mode Mode, cases []interleaving) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: t0}
			h := New(mode, tc.inputs, clock.now)
			if h.Mode() != mode {
				t.Fatalf("Mode() = %v, want %v", h.Mode(), mode)
			}
			for i, s := range tc.steps {
				if len(s.blocked) != tc.inputs {
					t.Fatalf("step %d: blocked %q does not have %d channels", i, s.blocked, tc.inputs)
				}
				clock.t = t0.Add(s.at)
				var got Result
				desc := fmt.Sprintf("step %d (%v ch%d id%d at %v)", i, s.ev, s.ch, s.id, s.at)
				switch s.ev {
				case bar:
					got = h.OnBarrier(s.ch, s.id)
				case prio:
					got = h.OnPriorityBarrier(s.ch, s.id)
				case timeout:
					got = h.TimeOut(s.id)
					desc = fmt.Sprintf("step %d (timeout id%d at %v)", i, s.id, s.at)
				case cancel:
					got = h.OnCancel(s.ch, s.id)
				case eoi:
					got = h.OnEndOfInput(s.ch)
					desc = fmt.Sprintf("step %d (end-of-input ch%d at %v)", i, s.ch, s.at)
				case abort:
					got = h.Abort(s.id)
					desc = fmt.Sprintf("step %d (coordinator abort id%d at %v)", i, s.id, s.at)
				}
				if w := s.want.result(); !sameResult(got, w) {
					t.Errorf("%s: got %s, want %s", desc, fmtResult(got), fmtResult(w))
				}
				if b := blockedString(h, tc.inputs); b != s.blocked {
					t.Errorf("%s: blocked %q, want %q", desc, b, s.blocked)
				}
				wantRec := s.recording
				if wantRec == "" {
					wantRec = strings.Repeat(".", tc.inputs)
				}
				if r := recordingString(h, tc.inputs); r != wantRec {
					t.Errorf("%s: recording %q, want %q", desc, r, wantRec)
				}
				if u, w := h.Unaligned(), strings.Contains(wantRec, "R"); u != w {
					t.Errorf("%s: Unaligned() = %v, want %v", desc, u, w)
				}
				if p := h.Pending(); p != s.pending {
					t.Errorf("%s: Pending() = %d, want %d", desc, p, s.pending)
				}
				wantStart := time.Time{}
				if s.pending != 0 {
					wantStart = t0.Add(s.start)
				}
				if st := h.AlignmentStart(); !st.Equal(wantStart) {
					t.Errorf("%s: AlignmentStart() = %v, want %v", desc, st, wantStart)
				}
			}
		})
	}
}

func blockedString(h Handler, inputs int) string {
	var b strings.Builder
	for ch := range inputs {
		if h.Blocked(ch) {
			b.WriteByte('B')
		} else {
			b.WriteByte('.')
		}
	}
	return b.String()
}

func recordingString(h Handler, inputs int) string {
	var b strings.Builder
	for ch := range inputs {
		if h.Recording(ch) {
			b.WriteByte('R')
		} else {
			b.WriteByte('.')
		}
	}
	return b.String()
}

func fmtResult(r Result) string {
	if sameResult(r, Result{}) {
		return "{}"
	}
	var parts []string
	if len(r.OlderAborted) != 0 {
		parts = append(parts, fmt.Sprintf("older aborted %v", r.OlderAborted))
	}
	if r.Aborted != 0 || r.AbortReason != NoReason {
		parts = append(parts, fmt.Sprintf("aborted %d (%v)", r.Aborted, r.AbortReason))
	}
	if r.Triggered != 0 || r.Unaligned || r.TimedOut {
		parts = append(parts, fmt.Sprintf("triggered %d unaligned %v timed out %v",
			r.Triggered, r.Unaligned, r.TimedOut))
	}
	if r.InFlightDone != 0 {
		parts = append(parts, fmt.Sprintf("in-flight done %d", r.InFlightDone))
	}
	if !r.FirstBarrier.IsZero() || r.Alignment != 0 {
		parts = append(parts, fmt.Sprintf("first %v alignment %v", r.FirstBarrier.Sub(t0), r.Alignment))
	}
	return "{" + strings.Join(parts, "; ") + "}"
}

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

func TestLastBarrier(t *testing.T) {
	for _, mode := range []Mode{ExactlyOnce, AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			clock := &fakeClock{t: t0}
			h := New(mode, 3, clock.now)
			h.OnBarrier(0, 1)
			h.OnBarrier(1, 1)
			h.OnBarrier(2, 1)
			h.OnBarrier(1, 2)
			h.OnPriorityBarrier(2, 2) // a priority barrier is a barrier
			h.OnCancel(0, 3)          // a cancellation marker is not a barrier
			h.OnBarrier(2, 1)         // stale: does not lower the highest
			h.OnEndOfInput(0)
			h.OnBarrier(0, 9)         // after end of input: ignored
			h.OnPriorityBarrier(0, 9) // likewise
			for ch, want := range []int64{1, 2, 2} {
				if got := h.LastBarrier(ch); got != want {
					t.Errorf("LastBarrier(%d) = %d, want %d", ch, got, want)
				}
			}
		})
	}
}

func TestChannelOutOfRangePanics(t *testing.T) {
	for _, mode := range []Mode{ExactlyOnce, AtLeastOnce} {
		h := New(mode, 2, time.Now)
		for name, call := range map[string]func(){
			"OnBarrier":         func() { h.OnBarrier(2, 1) },
			"OnPriorityBarrier": func() { h.OnPriorityBarrier(-1, 1) },
			"OnCancel":          func() { h.OnCancel(-1, 1) },
			"OnEndOfInput":      func() { h.OnEndOfInput(5) },
			"Blocked":           func() { h.Blocked(2) },
			"Recording":         func() { h.Recording(2) },
			"LastBarrier":       func() { h.LastBarrier(2) },
		} {
			t.Run(mode.String()+"/"+name, func(t *testing.T) {
				defer func() {
					if recover() == nil {
						t.Errorf("%s with a bad channel did not panic", name)
					}
				}()
				call()
			})
		}
	}
}

func TestStrings(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  fmt.Stringer
		want string
	}{
		{"exactly-once", ExactlyOnce, "exactly-once"},
		{"at-least-once", AtLeastOnce, "at-least-once"},
		{"no reason", NoReason, ""},
		{"subsumed", Subsumed, "subsumed by a newer checkpoint"},
		{"canceled", Canceled, "cancellation barrier from upstream"},
		{"coordinator", AbortedByCoordinator, "aborted by the coordinator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s := tc.got.String(); s != tc.want {
				t.Errorf("String() = %q, want %q", s, tc.want)
			}
		})
	}
}

// element is one item in a simulated input channel: a record of the given
// epoch (the number of barriers before it on its channel) or a barrier.
type element struct {
	barrier bool
	epoch   int64
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
