package restart

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"
)

// UnlimitedAttempts is the attempt count that means "no limit": Flink's
// Integer.MAX_VALUE, which its documentation shows as "infinite".
const UnlimitedAttempts = math.MaxInt32

// FixedDelay allows a fixed number of restarts, each after the same delay
// (Flink: FixedDelayRestartBackoffTimeStrategy, restart-strategy.fixed-delay.*).
// Its methods are safe for concurrent use.
type FixedDelay struct {
	MaxAttempts int
	Delay       time.Duration

	mu       sync.Mutex
	failures int
}

// NewFixedDelay returns the strategy; attempts must be at least 0.
func NewFixedDelay(attempts int, delay time.Duration) *FixedDelay {
	return &FixedDelay{MaxAttempts: attempts, Delay: delay}
}

// NotifyFailure implements BackoffStrategy.
func (f *FixedDelay) NotifyFailure(error, time.Time) {
	f.mu.Lock()
	f.failures++
	f.mu.Unlock()
}

// CanRestart implements BackoffStrategy.
func (f *FixedDelay) CanRestart() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.canRestart()
}

func (f *FixedDelay) canRestart() bool { return f.failures <= f.MaxAttempts }

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
	f.mu.Lock()
	defer f.mu.Unlock()
	s := Status{Attempts: min(f.failures, f.MaxAttempts), MaxAttempts: f.MaxAttempts}
	if f.failures > 0 && f.canRestart() {
		s.NextDelay = f.Delay
	}
	if !f.canRestart() {
		s.GaveUp = true
		s.GaveUpReason = fmt.Sprintf("fixed-delay: all %d restart attempts used; failure %d is final", f.MaxAttempts, f.failures)
	}
	return s
}

// Reset implements BackoffStrategy.
func (f *FixedDelay) Reset() {
	f.mu.Lock()
	f.failures = 0
	f.mu.Unlock()
}

// None never restarts (Flink: NoRestartBackoffTimeStrategy). Its methods
// are safe for concurrent use.
type None struct {
	mu     sync.Mutex
	failed bool
}

// NotifyFailure implements BackoffStrategy.
func (n *None) NotifyFailure(error, time.Time) {
	n.mu.Lock()
	n.failed = true
	n.mu.Unlock()
}

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
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.failed {
		return Status{GaveUp: true, GaveUpReason: "restart strategy none: the job does not restart"}
	}
	return Status{}
}

// Reset implements BackoffStrategy.
func (n *None) Reset() {
	n.mu.Lock()
	n.failed = false
	n.mu.Unlock()
}

// ErrUnexpectedRestart is what the throwing strategy raises when a restart
// is attempted (Flink: ThrowingRestartStrategy's IllegalStateException
// "Unexpected restart() call").
var ErrUnexpectedRestart = errors.New("unexpected restart() call: the throwing restart strategy lets no restart happen")

// Restarter is a BackoffStrategy the job master asks once more when it
// carries out a restart it granted; an error fails the job there, at the
// restart.
type Restarter interface {
	Restart() error
}

// Throwing grants every restart and throws when one is carried out
// (Flink: ThrowingRestartStrategy, which tests used to catch a restart that
// should never happen). Unlike none, which refuses at the failure and
// fails the job at once, the job goes RESTARTING and fails with the
// exception raised where the restart was attempted. Its methods are safe
// for concurrent use.
type Throwing struct {
	mu    sync.Mutex
	threw bool
}

var _ Restarter = (*Throwing)(nil)

// NotifyFailure implements BackoffStrategy.
func (t *Throwing) NotifyFailure(error, time.Time) {}

// CanRestart implements BackoffStrategy: it grants every restart.
func (t *Throwing) CanRestart() bool { return true }

// Backoff implements BackoffStrategy.
func (t *Throwing) Backoff() time.Duration { return 0 }

// Name implements BackoffStrategy.
func (t *Throwing) Name() string { return "throwing" }

// Describe implements BackoffStrategy.
func (t *Throwing) Describe() string { return "throwing (grants a restart, throws when it happens)" }

// Restart implements Restarter: it throws.
func (t *Throwing) Restart() error {
	t.mu.Lock()
	t.threw = true
	t.mu.Unlock()
	return ErrUnexpectedRestart
}

// Status implements BackoffStrategy.
func (t *Throwing) Status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.threw {
		return Status{GaveUp: true, GaveUpReason: "restart strategy throwing: the restart was attempted and threw: " + ErrUnexpectedRestart.Error()}
	}
	return Status{}
}

// Reset implements BackoffStrategy.
func (t *Throwing) Reset() {
	t.mu.Lock()
	t.threw = false
	t.mu.Unlock()
}

// DefaultFailureRate returns Flink's defaults for the failure-rate strategy
// (RestartStrategyOptions, Flink 1.20):
//
//	restart-strategy.failure-rate.max-failures-per-interval  1
//	restart-strategy.failure-rate.failure-rate-interval      1 min
//	restart-strategy.failure-rate.delay                      1 s
func DefaultFailureRate() *FailureRate {
	return NewFailureRate(1, time.Minute, time.Second)
}

// FailureRate restarts the job while at most MaxFailures failures fall inside
// a sliding window of length Interval, waiting Delay before each restart
// (Flink: FailureRateRestartBackoffTimeStrategy,
// restart-strategy.failure-rate.*).
//
// The window ends at the latest failure and reaches back Interval, both ends
// included: as in Flink, a failure exactly Interval before the latest one
// still counts. Only the times passed to NotifyFailure move the window; the
// strategy never reads a clock. Once it gives up it stays given up, because
// the job has failed. Its methods are safe for concurrent use.
type FailureRate struct {
	MaxFailures int
	Interval    time.Duration
	Delay       time.Duration

	mu       sync.Mutex
	times    []time.Time // failures inside the window, oldest first; at most MaxFailures+1
	failures int         // every failure notified
	restarts int         // restarts granted
	gaveUp   bool
	reason   string
}

// NewFailureRate returns the strategy. maxFailures must be at least 1,
// interval more than 0 and delay at least 0; Parse checks these.
func NewFailureRate(maxFailures int, interval, delay time.Duration) *FailureRate {
	return &FailureRate{MaxFailures: maxFailures, Interval: interval, Delay: delay}
}

// NotifyFailure implements BackoffStrategy.
func (f *FailureRate) NotifyFailure(_ error, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures++
	if f.gaveUp {
		return
	}
	// Keep the times sorted even if a caller hands them out of order.
	i, _ := slices.BinarySearchFunc(f.times, at, func(a, b time.Time) int { return a.Compare(b) })
	f.times = slices.Insert(f.times, i, at)
	newest := f.times[len(f.times)-1]
	drop := 0
	for drop < len(f.times) && newest.Sub(f.times[drop]) > f.Interval {
		drop++
	}
	f.times = slices.Delete(f.times, 0, drop)
	if len(f.times) > f.MaxFailures {
		f.gaveUp = true
		n := len(f.times)
		f.reason = fmt.Sprintf("failure-rate: %d %s within %s, more than the %d allowed",
			n, plural(n, "failure", "failures"), f.Interval, f.MaxFailures)
		return
	}
	f.restarts++
}

// CanRestart implements BackoffStrategy.
func (f *FailureRate) CanRestart() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.gaveUp
}

// Backoff implements BackoffStrategy: always Delay.
func (f *FailureRate) Backoff() time.Duration { return f.Delay }

// Name implements BackoffStrategy.
func (f *FailureRate) Name() string { return "failure-rate" }

// Describe implements BackoffStrategy.
func (f *FailureRate) Describe() string {
	return fmt.Sprintf("failure-rate (at most %d %s per %s, delay %s)",
		f.MaxFailures, plural(f.MaxFailures, "failure", "failures"), f.Interval, f.Delay)
}

// Status implements BackoffStrategy. FailuresInWindow counts the failures in
// the window that ends at the latest failure.
func (f *FailureRate) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := Status{
		Attempts:            f.restarts,
		FailuresInWindow:    len(f.times),
		MaxFailuresInWindow: f.MaxFailures,
		Window:              f.Interval,
		GaveUp:              f.gaveUp,
		GaveUpReason:        f.reason,
	}
	if f.failures > 0 && !f.gaveUp {
		s.NextDelay = f.Delay
	}
	return s
}

// Reset implements BackoffStrategy.
func (f *FailureRate) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.times, f.failures, f.restarts, f.gaveUp, f.reason = nil, 0, 0, false, ""
}

// ExponentialConfig holds the exponential-delay strategy's parameters, each
// named after the Flink option and the faultline flag it comes from.
type ExponentialConfig struct {
	// Initial is the delay before the first restart
	// (restart-strategy.exponential-delay.initial-backoff, --backoff-initial).
	Initial time.Duration
	// Max caps the delay
	// (restart-strategy.exponential-delay.max-backoff, --backoff-max).
	Max time.Duration
	// Multiplier grows the backoff after every failure
	// (restart-strategy.exponential-delay.backoff-multiplier, --backoff-multiplier).
	Multiplier float64
	// JitterFactor is the fraction of the backoff randomly added or
	// subtracted (restart-strategy.exponential-delay.jitter-factor, --backoff-jitter).
	JitterFactor float64
	// ResetThreshold is how long the job must run without failing for the
	// backoff and the attempt count to start over
	// (restart-strategy.exponential-delay.reset-backoff-threshold, --backoff-reset-threshold).
	ResetThreshold time.Duration
	// AttemptsBeforeReset is how many restarts are allowed without a reset
	// before the job fails; UnlimitedAttempts means no limit
	// (restart-strategy.exponential-delay.attempts-before-reset-backoff,
	// Flink 1.19+, --backoff-attempts-before-reset).
	AttemptsBeforeReset int
}

// DefaultExponential returns Flink's defaults for the exponential-delay
// strategy (RestartStrategyOptions and the "Task Failure Recovery" page,
// Flink 1.20):
//
//	restart-strategy.exponential-delay.initial-backoff                1 s
//	restart-strategy.exponential-delay.max-backoff                    1 min
//	restart-strategy.exponential-delay.backoff-multiplier             1.5
//	restart-strategy.exponential-delay.jitter-factor                  0.1
//	restart-strategy.exponential-delay.reset-backoff-threshold        1 h
//	restart-strategy.exponential-delay.attempts-before-reset-backoff  Integer.MAX_VALUE ("infinite")
//
// (Before Flink 1.19 max-backoff defaulted to 5 min and the multiplier to 2.0.)
func DefaultExponential() ExponentialConfig {
	return ExponentialConfig{
		Initial:             time.Second,
		Max:                 time.Minute,
		Multiplier:          1.5,
		JitterFactor:        0.1,
		ResetThreshold:      time.Hour,
		AttemptsBeforeReset: UnlimitedAttempts,
	}
}

// ExponentialDelay restarts the job after a delay that starts at Initial and
// grows by Multiplier with every failure up to Max, randomised by
// ±JitterFactor, and gives up after AttemptsBeforeReset restarts unless the
// job ran ResetThreshold without failing, which starts the backoff and the
// attempt count over (Flink: ExponentialDelayRestartBackoffTimeStrategy,
// restart-strategy.exponential-delay.*, with the Flink 1.19+ semantics of
// FLIP-364).
//
// The delay for the n-th attempt since the last reset (n from 0) is
//
//	backoff = Initial·Multiplierⁿ
//	delay   = clamp(backoff + backoff·JitterFactor·(2r−1), Initial, Max)
//
// with r drawn from the random source in [0,1): r=0 gives backoff·(1−j),
// r→1 gives backoff·(1+j). As in Flink, the jitter is drawn from the
// exponential value before the cap, and the delay then clamped to
// [Initial, Max]: once backoff·(1−j) has passed Max the delay is exactly
// Max, every time.
//
// The job counts as running from the restart that was scheduled for the
// previous failure (its time plus its delay). A failure at least
// ResetThreshold after that restart resets the backoff to Initial and the
// attempt count to 0, as in Flink 1.19+. A failure before that restart has
// even happened (for example a second task failing during the wait) is
// merged into the pending attempt, as Flink 1.19+ does: it uses no attempt,
// does not grow the backoff, and Backoff reports the time still left until
// the pending restart. Flink merges a failure at exactly the restart time
// too; here a failure at or after the restart time is a new attempt, so a
// job that fails the instant it restarts (as under a fake clock) still backs
// off.
//
// Only the times passed to NotifyFailure drive the strategy; it never reads
// a clock. Once it gives up it stays given up. Its methods are safe for
// concurrent use.
type ExponentialDelay struct {
	cfg ExponentialConfig
	rnd func() float64

	mu          sync.Mutex
	failures    int           // every failure notified
	attempt     int           // attempts since the last reset (Flink: currentRestartAttempt)
	scheduled   bool          // a restart has been granted at least once
	nextRestart time.Time     // when the restart for the latest attempt happens
	lastAt      time.Time     // the latest failure that was not ignored
	delay       time.Duration // the full delay granted to the latest attempt
	gaveUp      bool
	reason      string
}

// NewExponentialDelay returns the strategy. rnd returns values in [0,1) for
// the jitter; nil means math/rand. Parse checks cfg; see
// ExponentialConfig.Validate.
func NewExponentialDelay(cfg ExponentialConfig, rnd func() float64) *ExponentialDelay {
	if rnd == nil {
		rnd = rand.Float64
	}
	return &ExponentialDelay{cfg: cfg, rnd: rnd}
}

// Config returns the strategy's parameters.
func (e *ExponentialDelay) Config() ExponentialConfig { return e.cfg }

// NotifyFailure implements BackoffStrategy.
func (e *ExponentialDelay) NotifyFailure(_ error, at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failures++
	if e.gaveUp {
		return
	}
	if e.scheduled && at.Before(e.nextRestart) {
		e.lastAt = at // merged into the pending attempt
		return
	}
	ranFor := at.Sub(e.nextRestart)
	if !e.scheduled || ranFor >= e.cfg.ResetThreshold {
		e.attempt = 0
	}
	e.attempt++
	e.lastAt = at
	if e.attempt > e.cfg.AttemptsBeforeReset {
		e.gaveUp = true
		e.reason = fmt.Sprintf("exponential-delay: no restart attempts left (%d allowed before a reset); failure %d came %s after the last restart, sooner than the %s reset threshold",
			e.cfg.AttemptsBeforeReset, e.failures, ranFor, e.cfg.ResetThreshold)
		return
	}
	e.delay = e.delayFor(e.attempt - 1)
	e.nextRestart = at.Add(e.delay)
	e.scheduled = true
}

// delayFor is the jittered, clamped delay of the n-th attempt since a reset.
func (e *ExponentialDelay) delayFor(n int) time.Duration {
	initial, maxB := float64(e.cfg.Initial), float64(e.cfg.Max)
	backoff := initial * math.Pow(e.cfg.Multiplier, float64(n))
	j := e.cfg.JitterFactor
	if math.IsInf(backoff, 0) || math.IsNaN(backoff) || backoff*(1-j) >= maxB {
		return e.cfg.Max // no jitter can bring it below the cap
	}
	d := backoff
	if j > 0 {
		d += backoff * j * (2*e.rnd() - 1)
	}
	d = math.Max(initial, math.Min(d, maxB))
	return time.Duration(math.Round(d))
}

// CanRestart implements BackoffStrategy.
func (e *ExponentialDelay) CanRestart() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.gaveUp
}

// Backoff implements BackoffStrategy: the time from the latest failure to
// the restart granted for it (for a merged failure, the time still left
// until the pending restart); 0 before any failure and after giving up.
func (e *ExponentialDelay) Backoff() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.backoff()
}

func (e *ExponentialDelay) backoff() time.Duration {
	if !e.scheduled || e.gaveUp {
		return 0
	}
	return max(0, e.nextRestart.Sub(e.lastAt))
}

// Name implements BackoffStrategy.
func (e *ExponentialDelay) Name() string { return "exponential-delay" }

// Describe implements BackoffStrategy.
func (e *ExponentialDelay) Describe() string {
	c := e.cfg
	return fmt.Sprintf("exponential-delay (initial %s, max %s, multiplier %g, jitter %g, reset after %s, attempts before reset %s)",
		c.Initial, c.Max, c.Multiplier, c.JitterFactor, c.ResetThreshold, attemptsString(c.AttemptsBeforeReset))
}

// Status implements BackoffStrategy. Attempts counts the restarts since the
// last reset; MaxAttempts is AttemptsBeforeReset, or 0 when unlimited.
func (e *ExponentialDelay) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := Status{
		Attempts:     min(e.attempt, e.cfg.AttemptsBeforeReset),
		GaveUp:       e.gaveUp,
		GaveUpReason: e.reason,
		NextDelay:    e.backoff(),
	}
	if e.cfg.AttemptsBeforeReset < UnlimitedAttempts {
		s.MaxAttempts = e.cfg.AttemptsBeforeReset
	}
	return s
}

// Reset implements BackoffStrategy.
func (e *ExponentialDelay) Reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failures, e.attempt, e.scheduled, e.delay = 0, 0, false, 0
	e.nextRestart, e.lastAt = time.Time{}, time.Time{}
	e.gaveUp, e.reason = false, ""
}

func attemptsString(n int) string {
	if n >= UnlimitedAttempts {
		return "infinite"
	}
	return strconv.Itoa(n)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
