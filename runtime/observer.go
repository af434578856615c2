package runtime

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultline-dev/faultline/internal/clock"
	"github.com/faultline-dev/faultline/runtime/view"
)

// Event is one lifecycle event and when it happened (see view.Stamped).
type Event = view.Stamped

// Observer carries lifecycle events from the job to whoever shows them,
// through a bounded channel whose sends never block: when the reader falls
// behind, events are dropped and counted, and the job never waits for the UI.
type Observer struct {
	clk     clock.Clock
	start   time.Time
	ch      chan Event
	dropped atomic.Int64
	mu      sync.RWMutex // Emit holds it shared, Close exclusively
	closed  bool
	// tap, set before the run, sees each event on the goroutine that
	// emits it, before Emit returns (tests: what holds at that moment).
	tap func(Event)
}

// NewObserver returns an observer whose event times count from now on clk
// (the wall clock when nil).
func NewObserver(clk clock.Clock, capacity int) *Observer {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Observer{clk: clk, start: clk.Now(), ch: make(chan Event, capacity)}
}

// Since is the time since the observer started.
func (o *Observer) Since() time.Duration { return o.clk.Now().Sub(o.start) }

// Emit sends an event without blocking.
func (o *Observer) Emit(e view.Event) {
	if o == nil {
		return
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.closed {
		return
	}
	now := o.clk.Now()
	ev := Event{At: now.Sub(o.start), Wall: now, Event: e}
	if o.tap != nil {
		o.tap(ev)
	}
	select {
	case o.ch <- ev:
	default:
		o.dropped.Add(1)
	}
}

// Events is the stream to read; it is closed by Close.
func (o *Observer) Events() <-chan Event { return o.ch }

// Dropped is how many events were dropped because the reader was behind.
func (o *Observer) Dropped() int64 { return o.dropped.Load() }

// Close ends the stream; call it once the job has stopped emitting.
func (o *Observer) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.closed = true
		close(o.ch)
	}
}
