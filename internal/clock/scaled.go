package clock

import (
	"sync"
	"time"
)

// Scaled is a clock that runs at a changeable rate of its base clock: the
// job's clock, which stops while the world is frozen (rate 0) and runs
// slower in slow motion, so that durations, timeouts and fault timers
// measured on it leave out the time a person spent reading a frozen
// screen. Its times lag the base clock's by the time it lost; compare them
// only with other times of the same Scaled clock.
type Scaled struct {
	base Clock

	mu         sync.Mutex
	rate       float64
	anchorBase time.Time // the base clock's time at the last rate change
	anchor     time.Time // this clock's time then
	// stopped is the base time the clock lost at rate 0 before the last
	// rate change (Stopped adds the current stop).
	stopped time.Duration
	timers  map[*scaledTimer]struct{}
}

// NewScaled returns a clock that starts at base's time and runs at rate 1.
func NewScaled(base Clock) *Scaled {
	now := base.Now()
	return &Scaled{base: base, rate: 1, anchorBase: now, anchor: now, timers: map[*scaledTimer]struct{}{}}
}

// Now is the scaled time.
func (s *Scaled) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nowLocked(s.base.Now())
}

func (s *Scaled) nowLocked(base time.Time) time.Time {
	return s.anchor.Add(time.Duration(float64(base.Sub(s.anchorBase)) * s.rate))
}

// Rate is the current rate (1: as fast as the base clock, 0: stopped).
func (s *Scaled) Rate() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rate
}

// Stopped is how much base time has passed while the clock stood still
// (rate 0), since it was made.
func (s *Scaled) Stopped() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.stopped
	if s.rate == 0 {
		d += s.base.Now().Sub(s.anchorBase)
	}
	return d
}

// SetRate changes the rate from now on (negative rates count as 0); the
// pending timers fire when this clock reaches their deadline.
func (s *Scaled) SetRate(rate float64) {
	rate = max(rate, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	if rate == s.rate {
		return
	}
	base := s.base.Now()
	if s.rate == 0 {
		s.stopped += base.Sub(s.anchorBase)
	}
	s.anchor = s.nowLocked(base)
	s.anchorBase = base
	s.rate = rate
	for t := range s.timers {
		s.armLocked(t)
	}
}

// AfterFunc calls f in its own goroutine (or inside the base Fake's
// Advance) once d has passed on this clock.
func (s *Scaled) AfterFunc(d time.Duration, f func()) Timer {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &scaledTimer{s: s, at: s.nowLocked(s.base.Now()).Add(d), f: f}
	s.timers[t] = struct{}{}
	s.armLocked(t)
	return t
}

// armLocked (re)starts t's wait on the base clock for what is left of it
// at the current rate; at rate 0 it waits for the next rate change.
func (s *Scaled) armLocked(t *scaledTimer) {
	if t.base != nil {
		t.base.Stop()
		t.base = nil
	}
	if s.rate == 0 {
		return
	}
	left := t.at.Sub(s.nowLocked(s.base.Now()))
	wait := time.Duration(float64(max(left, 0)) / s.rate)
	if left > 0 && wait <= 0 {
		wait = 1
	}
	t.base = s.base.AfterFunc(wait, func() { s.fire(t) })
}

// fire runs t if this clock has reached its deadline, and waits again if
// rounding left it short.
func (s *Scaled) fire(t *scaledTimer) {
	s.mu.Lock()
	if _, ok := s.timers[t]; !ok {
		s.mu.Unlock()
		return
	}
	if s.rate == 0 || s.nowLocked(s.base.Now()).Before(t.at) {
		s.armLocked(t)
		s.mu.Unlock()
		return
	}
	delete(s.timers, t)
	t.base = nil
	s.mu.Unlock()
	t.f()
}

type scaledTimer struct {
	s    *Scaled
	at   time.Time
	f    func()
	base Timer // the wait on the base clock (nil while stopped)
}

func (t *scaledTimer) Stop() bool {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if _, ok := t.s.timers[t]; !ok {
		return false
	}
	delete(t.s.timers, t)
	if t.base != nil {
		t.base.Stop()
		t.base = nil
	}
	return true
}
