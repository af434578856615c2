// Package restart decides what a failure costs: whether and when the job
// restarts (the backoff strategies, backoff.go; Flink:
// RestartBackoffTimeStrategy) and which subtasks restart (the failover
// strategies over the job's pipelined regions, failover.go; Flink:
// FailoverStrategy), together in the failure handler (Handler; Flink:
// ExecutionFailureHandler). It works on plain task names and errors and
// imports no other package of faultline: the job master in runtime acts on
// its decisions.
package restart

import (
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
	// Reset forgets every failure so far, as the strategy of a newly
	// submitted job would start (Flink keeps none across jobs); one that
	// gave up may restart again.
	Reset()
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
