// Package clock gives time-dependent code (checkpoint scheduling, timeouts,
// restart delays, the subtasks' waits and their idle and back-pressure
// times) a clock that tests can drive by hand.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and runs functions later.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine (Real) or inside Advance (Fake)
	// once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call; it reports whether it did.
	Stop() bool
}

// Since is the time elapsed on c since t (time.Since on c).
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// After waits for d to pass on c: the channel receives c's time once it
// has (time.NewTimer on c). On the wall clock it is a time.Timer's channel;
// on a Fake it fires inside the Advance that reaches the deadline, as an
// AfterFunc would. Stop the Timer to give up the wait early; the channel
// then never fires.
func After(c Clock, d time.Duration) (<-chan time.Time, Timer) {
	if _, ok := c.(Real); ok {
		t := time.NewTimer(d)
		return t.C, t
	}
	ch := make(chan time.Time, 1) // the one send never blocks the clock
	t := c.AfterFunc(d, func() { ch <- c.Now() })
	return ch, t
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Fake is a clock that only moves when Advance is called. Timer functions run
// synchronously inside Advance, in the order of their deadlines, without any
// lock of the Fake held, so they may call back into the clock.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers []*fakeTimer
}

// NewFake returns a Fake clock set to start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

type fakeTimer struct {
	c       *Fake
	at      time.Time
	seq     int
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.stopped {
		return false
	}
	t.stopped = true
	for i, o := range t.c.timers {
		if o == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			break
		}
	}
	return true
}

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f at Now()+d.
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{c: c, at: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return t
}

// Pending reports how many timers are waiting.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Advance moves the clock forward by d, firing every timer that falls due,
// including timers scheduled by the fired functions themselves.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool {
			if !c.timers[i].at.Equal(c.timers[j].at) {
				return c.timers[i].at.Before(c.timers[j].at)
			}
			return c.timers[i].seq < c.timers[j].seq
		})
		if len(c.timers) == 0 || c.timers[0].at.After(end) {
			c.now = end
			c.mu.Unlock()
			return
		}
		t := c.timers[0]
		c.timers = c.timers[1:]
		t.stopped = true
		if t.at.After(c.now) {
			c.now = t.at
		}
		c.mu.Unlock()
		t.f()
	}
}
