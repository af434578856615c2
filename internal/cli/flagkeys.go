package cli

// The engine names an option it cannot use by Flink's configuration key;
// the command line names it by the flag the user typed.

import (
	"errors"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
	"github.com/faultline-dev/faultline/runtime/kafka/source"
)

// keyFlags are the flags of the settings the engine names by key (each
// flag's help names its key; a test holds the two together).
var keyFlags = map[string]string{
	checkpoint.KeyInterval:          "checkpoint-interval",
	checkpoint.KeyTimeout:           "checkpoint-timeout",
	checkpoint.KeyMinPause:          "min-pause",
	checkpoint.KeyMaxConcurrent:     "max-concurrent-checkpoints",
	checkpoint.KeyTolerableFailures: "tolerable-failed-checkpoints",
	runtime.KeyOnBadRecord:          "on-bad-record",
	runtime.KeyStateBackend:         "state-backend",
	runtime.KeyIncremental:          "incremental",
	source.KeyStartup:               "startup",
	sink.KeyGuarantee:               "sink-guarantee",
	restart.KeyStrategy:             "restart-strategy",
	restart.KeyAttempts:             "restart-attempts",
	restart.KeyDelay:                "restart-delay",
	restart.KeyMaxFailures:          "failure-rate-max-failures",
	restart.KeyFailureRateInterval:  "failure-rate-interval",
	restart.KeyFailureRateDelay:     "failure-rate-delay",
	restart.KeyInitialBackoff:       "backoff-initial",
	restart.KeyMaxBackoff:           "backoff-max",
	restart.KeyMultiplier:           "backoff-multiplier",
	restart.KeyJitter:               "backoff-jitter",
	restart.KeyResetThreshold:       "backoff-reset-threshold",
	restart.KeyAttemptsBeforeReset:  "backoff-attempts-before-reset",
	restart.KeyFailover:             "failover-strategy",
	kafka.KeySecurityProtocol:       "tls",
	kafka.KeySSLCA:                  "tls-ca",
	kafka.KeySASLMechanism:          "sasl-mechanism",
	kafka.KeySASLUsername:           "sasl-user",
}

// keyedError is an error of the engine that names a setting by its key
// (restart.OptionError, runtime.ConfigError, checkpoint.OptionError).
type keyedError interface {
	error
	Setting() (key, value, want string)
}

var (
	_ keyedError = (*restart.OptionError)(nil)
	_ keyedError = (*runtime.ConfigError)(nil)
	_ keyedError = (*checkpoint.OptionError)(nil)
)

// asFlagError is err as a usage error; a setting the engine names by its
// key is named by its flag.
func asFlagError(err error) error {
	var ke keyedError
	if errors.As(err, &ke) {
		key, value, want := ke.Setting()
		f, ok := keyFlags[key]
		var rq interface{ Requires() string }
		if errors.As(err, &rq) && rq.Requires() != "" {
			if other, known := keyFlags[rq.Requires()]; ok && known {
				return usagef("--%s %s is used only with --%s: add --%s, or drop --%s", f, value, other, other, f)
			}
		}
		if ok {
			return usagef("--%s %s: want %s", f, value, want)
		}
	}
	return usageError{err}
}
