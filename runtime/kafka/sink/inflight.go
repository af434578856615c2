package sink

import (
	"sync"
	"sync/atomic"

	"github.com/faultline-dev/faultline/runtime/kafka"
)

// inFlight counts what a producer sent and the broker has not acknowledged
// yet, and keeps the first failure, so that a pre-commit or a final flush
// can wait for all of it. Once stopped, nobody waits any more.
type inFlight struct {
	mu      sync.Mutex
	idle    *sync.Cond // signalled when n drops to 0 or on stop
	n       int
	err     error
	stopped bool
	bad     atomic.Bool // err or stopped is set: the hot path's check
}

func newInFlight() *inFlight {
	f := &inFlight{}
	f.idle = sync.NewCond(&f.mu)
	return f
}

func (f *inFlight) add() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

// settle marks one sent item done, failed when err is set.
func (f *inFlight) settle(err error) {
	f.mu.Lock()
	f.n--
	if err != nil && f.err == nil {
		f.err = err
		f.bad.Store(true)
	}
	if f.n == 0 {
		f.idle.Broadcast()
	}
	f.mu.Unlock()
}

// wait waits until everything sent is settled, or until stop, and returns
// the first failure (kafka.ErrWriterClosed once stopped: what was written after
// the stop was never sent, even when nothing sent before is unsettled).
func (f *inFlight) wait() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.n > 0 && !f.stopped {
		f.idle.Wait()
	}
	if f.err == nil && f.stopped {
		return kafka.ErrWriterClosed
	}
	return f.err
}

// failed returns the first failure, or kafka.ErrWriterClosed after stop.
func (f *inFlight) failed() error {
	if !f.bad.Load() {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil && f.stopped {
		return kafka.ErrWriterClosed
	}
	return f.err
}

// take returns the first failure and forgets it (a fire-and-forget
// producer reports each failure once).
func (f *inFlight) take() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.err
	f.err = nil
	f.bad.Store(f.stopped)
	return err
}

// stop releases every waiter; it reports whether this call stopped it.
func (f *inFlight) stop() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	first := !f.stopped
	f.stopped = true
	f.bad.Store(true)
	f.idle.Broadcast()
	return first
}
