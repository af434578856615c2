// Package restart decides whether and when a failed job restarts (Flink:
// RestartBackoffTimeStrategy) and which tasks restart (Flink:
// FailoverStrategy).
package restart

import (
	"fmt"
	"time"
)

// BackoffStrategy decides, after each failure, whether the job may restart
// and after what delay (Flink: RestartBackoffTimeStrategy).
type BackoffStrategy interface {
	// NotifyFailure records a failure at the given time.
	NotifyFailure(err error, at time.Time)
	// CanRestart reports whether the job may restart after the failures
	// recorded so far.
	CanRestart() bool
	// Backoff is the delay before the next restart.
	Backoff() time.Duration
	// Name is the strategy's name as the flag spells it.
	Name() string
	// Describe states the strategy and its parameters.
	Describe() string
	// Status says where the strategy stands: attempts used and left, and
	// why it gave up when it did.
	Status() Status
}

// Status is what the UI and the report show of a strategy.
type Status struct {
	Attempts     int // restarts granted so far (exponential-delay: since the last reset)
	MaxAttempts  int // 0 when unlimited or not attempt-based
	GaveUp       bool
	GaveUpReason string

	// FailuresInWindow is, for failure-rate, how many failures fall inside
	// the sliding window that ends at the latest failure, out of
	// MaxFailuresInWindow allowed; Window is the window's length. All three
	// are 0 for the other strategies.
	FailuresInWindow    int
	MaxFailuresInWindow int
	Window              time.Duration

	// NextDelay is the wait before the restart granted for the latest
	// failure; 0 before the first failure and after giving up.
	NextDelay time.Duration
}

// FixedDelay allows a fixed number of restarts, each after the same delay
// (Flink: FixedDelayRestartBackoffTimeStrategy, restart-strategy.fixed-delay.*).
type FixedDelay struct {
	MaxAttempts int
	Delay       time.Duration
	failures    int
}

// NewFixedDelay returns the strategy; attempts must be at least 0.
func NewFixedDelay(attempts int, delay time.Duration) *FixedDelay {
	return &FixedDelay{MaxAttempts: attempts, Delay: delay}
}

// NotifyFailure implements BackoffStrategy.
func (f *FixedDelay) NotifyFailure(error, time.Time) { f.failures++ }

// CanRestart implements BackoffStrategy.
func (f *FixedDelay) CanRestart() bool { return f.failures <= f.MaxAttempts }

// Backoff implements BackoffStrategy.
func (f *FixedDelay) Backoff() time.Duration { return f.Delay }

// Name implements BackoffStrategy.
func (f *FixedDelay) Name() string { return "fixed-delay" }

// Describe implements BackoffStrategy.
func (f *FixedDelay) Describe() string {
	return fmt.Sprintf("fixed-delay (attempts %d, delay %s)", f.MaxAttempts, f.Delay)
}

// Status implements BackoffStrategy.
func (f *FixedDelay) Status() Status {
	s := Status{Attempts: min(f.failures, f.MaxAttempts), MaxAttempts: f.MaxAttempts}
	if f.failures > 0 && f.CanRestart() {
		s.NextDelay = f.Delay
	}
	if !f.CanRestart() {
		s.GaveUp = true
		s.GaveUpReason = fmt.Sprintf("fixed-delay: all %d restart attempts used; failure %d is final", f.MaxAttempts, f.failures)
	}
	return s
}

// None never restarts (Flink: NoRestartBackoffTimeStrategy).
type None struct{ failed bool }

// NotifyFailure implements BackoffStrategy.
func (n *None) NotifyFailure(error, time.Time) { n.failed = true }

// CanRestart implements BackoffStrategy.
func (n *None) CanRestart() bool { return false }

// Backoff implements BackoffStrategy.
func (n *None) Backoff() time.Duration { return 0 }

// Name implements BackoffStrategy.
func (n *None) Name() string { return "none" }

// Describe implements BackoffStrategy.
func (n *None) Describe() string { return "none (no restarts)" }

// Status implements BackoffStrategy.
func (n *None) Status() Status {
	if n.failed {
		return Status{GaveUp: true, GaveUpReason: "restart strategy none: the job does not restart"}
	}
	return Status{}
}
