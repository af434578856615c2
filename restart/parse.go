package restart

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrInvalidOption is what every error of Parse and
// ExponentialConfig.Validate wraps: a restart strategy name or parameter
// that cannot be used. The command line reports it as a usage error.
var ErrInvalidOption = errors.New("invalid restart strategy option")

// OptionError says which option holds an unusable value and what would be
// accepted instead, e.g. `restart-strategy.exponential-delay.backoff-multiplier
// 0.5: want 1 or more`. The option is named by Flink's configuration key;
// whoever took the value from the user names it as the user wrote it (the
// command line: its flag).
type OptionError struct {
	Key   string // Flink's key, e.g. "restart-strategy.exponential-delay.backoff-multiplier"
	Value string // the value given, as the user would type it
	Want  string // what is accepted
}

func (e *OptionError) Error() string { return e.Key + " " + e.Value + ": want " + e.Want }

// Setting names the option, the value given and what is accepted.
func (e *OptionError) Setting() (key, value, want string) { return e.Key, e.Value, e.Want }

// Flink's configuration keys of the restart and failover strategies' options.
const (
	KeyStrategy            = "restart-strategy.type"
	KeyAttempts            = "restart-strategy.fixed-delay.attempts"
	KeyDelay               = "restart-strategy.fixed-delay.delay"
	KeyMaxFailures         = "restart-strategy.failure-rate.max-failures-per-interval"
	KeyFailureRateInterval = "restart-strategy.failure-rate.failure-rate-interval"
	KeyFailureRateDelay    = "restart-strategy.failure-rate.delay"
	KeyInitialBackoff      = "restart-strategy.exponential-delay.initial-backoff"
	KeyMaxBackoff          = "restart-strategy.exponential-delay.max-backoff"
	KeyMultiplier          = "restart-strategy.exponential-delay.backoff-multiplier"
	KeyJitter              = "restart-strategy.exponential-delay.jitter-factor"
	KeyResetThreshold      = "restart-strategy.exponential-delay.reset-backoff-threshold"
	KeyAttemptsBeforeReset = "restart-strategy.exponential-delay.attempts-before-reset-backoff"
	KeyFailover            = "jobmanager.execution.failover-strategy"
)

// Unwrap makes errors.Is(err, ErrInvalidOption) true.
func (e *OptionError) Unwrap() error { return ErrInvalidOption }

// Names returns the restart strategy names --restart-strategy accepts, in
// the order the help lists them.
func Names() []string {
	return []string{"fixed-delay", "failure-rate", "exponential-delay", "none", "throwing"}
}

// Options carries every restart strategy parameter, one field per flag. Only
// the fields of the strategy chosen are read and checked.
type Options struct {
	// Attempts is fixed-delay's number of restarts
	// (restart-strategy.fixed-delay.attempts, --restart-attempts).
	Attempts int
	// Delay is fixed-delay's wait before each restart
	// (restart-strategy.fixed-delay.delay, --restart-delay).
	Delay time.Duration

	// FailureRateMaxFailures is the most failures allowed inside the window
	// (restart-strategy.failure-rate.max-failures-per-interval, --failure-rate-max-failures).
	FailureRateMaxFailures int
	// FailureRateInterval is the window's length
	// (restart-strategy.failure-rate.failure-rate-interval, --failure-rate-interval).
	FailureRateInterval time.Duration
	// FailureRateDelay is failure-rate's wait before each restart
	// (restart-strategy.failure-rate.delay, --failure-rate-delay).
	FailureRateDelay time.Duration

	// Exponential holds exponential-delay's parameters (--backoff-*).
	Exponential ExponentialConfig
	// Rand is exponential-delay's random source for the jitter, returning
	// values in [0,1); nil means math/rand. Tests set it.
	Rand func() float64
}

// DefaultOptions returns Flink's default for every option (Flink 1.20
// RestartStrategyOptions): fixed-delay 1 attempt with a 1 s delay, failure-rate
// as DefaultFailureRate, exponential-delay as DefaultExponential. (Flink's
// job-level default with checkpointing on is fixed-delay with
// Integer.MAX_VALUE attempts; the command line picks its own flag defaults.)
func DefaultOptions() Options {
	fr := DefaultFailureRate()
	return Options{
		Attempts:               1,
		Delay:                  time.Second,
		FailureRateMaxFailures: fr.MaxFailures,
		FailureRateInterval:    fr.Interval,
		FailureRateDelay:       fr.Delay,
		Exponential:            DefaultExponential(),
	}
}

// Parse returns the strategy called name (the value of --restart-strategy),
// built from the options of that strategy. It accepts Flink's spellings too
// (fixeddelay, failurerate, exponentialdelay, off, disable), in any case. An
// unknown name or an unusable parameter gives an *OptionError naming its
// key.
func Parse(name string, opts Options) (BackoffStrategy, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "fixed-delay", "fixeddelay":
		switch {
		case opts.Attempts < 0:
			return nil, intErr(KeyAttempts, opts.Attempts, "0 or more")
		case opts.Delay < 0:
			return nil, durErr(KeyDelay, opts.Delay, "0 or more")
		}
		return NewFixedDelay(opts.Attempts, opts.Delay), nil
	case "failure-rate", "failurerate":
		switch {
		case opts.FailureRateMaxFailures < 1:
			return nil, intErr(KeyMaxFailures, opts.FailureRateMaxFailures, "1 or more")
		case opts.FailureRateInterval <= 0:
			return nil, durErr(KeyFailureRateInterval, opts.FailureRateInterval, "more than 0")
		case opts.FailureRateDelay < 0:
			return nil, durErr(KeyFailureRateDelay, opts.FailureRateDelay, "0 or more")
		}
		return NewFailureRate(opts.FailureRateMaxFailures, opts.FailureRateInterval, opts.FailureRateDelay), nil
	case "exponential-delay", "exponentialdelay":
		if err := opts.Exponential.Validate(); err != nil {
			return nil, err
		}
		return NewExponentialDelay(opts.Exponential, opts.Rand), nil
	case "none", "off", "disable":
		return &None{}, nil
	case "throwing":
		return &Throwing{}, nil
	}
	return nil, &OptionError{
		Key:   KeyStrategy,
		Value: fmt.Sprintf("%q", name),
		Want:  "one of " + strings.Join(Names(), ", "),
	}
}

// Validate checks the parameters as Flink does, with the errors naming
// Flink's keys. It is a little more lenient than Flink in one place: a
// multiplier of exactly 1 (a constant delay) is allowed, where Flink wants
// more than 1.
func (c ExponentialConfig) Validate() error {
	switch {
	case c.Initial <= 0:
		return durErr(KeyInitialBackoff, c.Initial, "more than 0")
	case c.Max <= 0:
		return durErr(KeyMaxBackoff, c.Max, "more than 0")
	case c.Max < c.Initial:
		return durErr(KeyMaxBackoff, c.Max, fmt.Sprintf("at least the initial backoff (%s)", c.Initial))
	case !(c.Multiplier >= 1): // also catches NaN
		return floatErr(KeyMultiplier, c.Multiplier, "1 or more")
	case !(c.JitterFactor >= 0 && c.JitterFactor <= 1):
		return floatErr(KeyJitter, c.JitterFactor, "a fraction from 0 to 1")
	case c.ResetThreshold <= 0:
		return durErr(KeyResetThreshold, c.ResetThreshold, "more than 0")
	case c.AttemptsBeforeReset < 1:
		return intErr(KeyAttemptsBeforeReset, c.AttemptsBeforeReset, fmt.Sprintf("1 or more (%d for no limit)", UnlimitedAttempts))
	}
	return nil
}

func intErr(key string, v int, want string) error {
	return &OptionError{Key: key, Value: fmt.Sprint(v), Want: want}
}

func durErr(key string, v time.Duration, want string) error {
	return &OptionError{Key: key, Value: v.String(), Want: want}
}

func floatErr(key string, v float64, want string) error {
	return &OptionError{Key: key, Value: fmt.Sprintf("%g", v), Want: want}
}
