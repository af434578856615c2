package clock

import (
	"testing"
	"time"
)

func TestScaledStopsAndSlows(t *testing.T) {
	base := NewFake(time.Unix(1000, 0))
	s := NewScaled(base)
	start := s.Now()
	base.Advance(2 * time.Second)
	s.SetRate(0)
	base.Advance(10 * time.Second) // frozen: lost
	s.SetRate(0.5)
	base.Advance(4 * time.Second) // half speed: 2 s
	s.SetRate(1)
	base.Advance(time.Second)
	if got, want := s.Now().Sub(start), 5*time.Second; got != want {
		t.Fatalf("scaled time passed = %v, want %v", got, want)
	}
	if got, want := s.Stopped(), 10*time.Second; got != want {
		t.Fatalf("Stopped = %v, want %v", got, want)
	}
	s.SetRate(0)
	base.Advance(3 * time.Second)
	if got, want := s.Stopped(), 13*time.Second; got != want {
		t.Fatalf("Stopped while stopped = %v, want %v", got, want)
	}
}

func TestScaledTimersWaitForTheScaledTime(t *testing.T) {
	base := NewFake(time.Unix(1000, 0))
	s := NewScaled(base)
	fired := 0
	s.AfterFunc(10*time.Second, func() { fired++ })
	base.Advance(4 * time.Second)
	s.SetRate(0)
	base.Advance(time.Hour)
	if fired != 0 {
		t.Fatal("a timer fired while the clock stood still")
	}
	s.SetRate(0.25) // 6 s left take 24 s of base time
	base.Advance(23 * time.Second)
	if fired != 0 {
		t.Fatal("the timer fired before its scaled deadline")
	}
	base.Advance(time.Second)
	if fired != 1 {
		t.Fatalf("fired %d times at the scaled deadline, want 1", fired)
	}
	if base.Pending() != 0 {
		t.Fatalf("%d base timers left", base.Pending())
	}
}

func TestScaledTimerStop(t *testing.T) {
	base := NewFake(time.Unix(1000, 0))
	s := NewScaled(base)
	fired := false
	tm := s.AfterFunc(time.Second, func() { fired = true })
	s.SetRate(0)
	if !tm.Stop() || tm.Stop() {
		t.Fatal("Stop should report true once, then false")
	}
	s.SetRate(1)
	base.Advance(time.Minute)
	if fired {
		t.Fatal("a stopped timer fired")
	}
	after, _ := After(s, 2*time.Second)
	base.Advance(2 * time.Second)
	select {
	case <-after:
	default:
		t.Fatal("After on a Scaled clock did not fire")
	}
}

func TestScaledOnTheWallClock(t *testing.T) {
	s := NewScaled(Real{})
	done := make(chan struct{})
	s.SetRate(4)
	s.AfterFunc(200*time.Millisecond, func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a timer on a Scaled wall clock never fired")
	}
}
