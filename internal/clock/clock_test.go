package clock

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fired reports whether ch has a value waiting, and the value.
func fired(ch <-chan time.Time) (time.Time, bool) {
	select {
	case at := <-ch:
		return at, true
	default:
		return time.Time{}, false
	}
}

// The Fake runs due functions inside Advance in the order of their
// deadlines (the order of scheduling among equal ones), with Now at each
// one's deadline, including functions scheduled by those it runs.
func TestFakeAfterFuncOrder(t *testing.T) {
	c := NewFake(t0)
	var got []string
	at := map[string]time.Duration{}
	add := func(name string, d time.Duration) {
		c.AfterFunc(d, func() {
			got = append(got, name)
			at[name] = c.Now().Sub(t0)
		})
	}
	add("c", 30*time.Millisecond)
	add("a", 10*time.Millisecond)
	add("b", 10*time.Millisecond)
	c.AfterFunc(20*time.Millisecond, func() { add("d", 5*time.Millisecond) })
	stopped := c.AfterFunc(15*time.Millisecond, func() { got = append(got, "stopped") })
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop: want true once, then false")
	}
	if n := c.Pending(); n != 4 {
		t.Fatalf("Pending = %d, want 4", n)
	}
	c.Advance(29 * time.Millisecond)
	want := []string{"a", "b", "d"}
	if len(got) != len(want) {
		t.Fatalf("after 29ms ran %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after 29ms ran %v, want %v", got, want)
		}
	}
	if at["a"] != 10*time.Millisecond || at["d"] != 25*time.Millisecond {
		t.Fatalf("ran at %v", at)
	}
	if now := c.Now().Sub(t0); now != 29*time.Millisecond {
		t.Fatalf("Now = t0+%v, want t0+29ms", now)
	}
	c.Advance(time.Millisecond)
	if len(got) != 4 || got[3] != "c" || c.Pending() != 0 {
		t.Fatalf("after 30ms ran %v with %d pending", got, c.Pending())
	}
}

func TestSince(t *testing.T) {
	c := NewFake(t0)
	c.Advance(1500 * time.Millisecond)
	if d := Since(c, t0); d != 1500*time.Millisecond {
		t.Fatalf("Since = %v, want 1.5s", d)
	}
	if d := Since(Real{}, time.Now().Add(-time.Hour)); d < time.Hour {
		t.Fatalf("Since on the wall clock = %v, want at least an hour", d)
	}
}

// After on a Fake fires inside the Advance that reaches its deadline, with
// the deadline's time, and not at all once stopped.
func TestAfterFake(t *testing.T) {
	for _, tc := range []struct {
		name     string
		advances []time.Duration
		stop     bool // stop before advancing
		want     bool
	}{
		{name: "before the deadline", advances: []time.Duration{99 * time.Millisecond}},
		{name: "at the deadline", advances: []time.Duration{100 * time.Millisecond}, want: true},
		{name: "in steps past it", advances: []time.Duration{60 * time.Millisecond, 60 * time.Millisecond}, want: true},
		{name: "stopped", advances: []time.Duration{time.Second}, stop: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewFake(t0)
			ch, tm := After(c, 100*time.Millisecond)
			if c.Pending() != 1 {
				t.Fatalf("Pending = %d, want 1", c.Pending())
			}
			if tc.stop && !tm.Stop() {
				t.Fatal("Stop before the deadline reported false")
			}
			for _, d := range tc.advances {
				c.Advance(d)
			}
			at, ok := fired(ch)
			if ok != tc.want {
				t.Fatalf("fired = %v, want %v", ok, tc.want)
			}
			if ok && !at.Equal(t0.Add(100*time.Millisecond)) {
				t.Fatalf("fired with t0+%v, want t0+100ms", at.Sub(t0))
			}
			if c.Pending() != 0 && (tc.want || tc.stop) {
				t.Fatalf("Pending = %d after it fired or stopped", c.Pending())
			}
			if ok && tm.Stop() {
				t.Fatal("Stop after firing reported true")
			}
		})
	}
}

// After on the wall clock is a time.Timer.
func TestAfterReal(t *testing.T) {
	ch, _ := After(Real{}, time.Millisecond)
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("After(1ms) on the wall clock did not fire")
	}
	ch, tm := After(Real{}, time.Hour)
	if !tm.Stop() {
		t.Fatal("Stop of an hour's wait reported false")
	}
	if _, ok := fired(ch); ok {
		t.Fatal("a stopped wait fired")
	}
}
