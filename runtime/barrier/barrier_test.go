package barrier

import (
	"fmt"
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
