package cli

// The engine names an option it cannot use by Flink's configuration key;
// the command line names it by the flag the user typed.

import (
	"errors"

	"faultline/restart"
	"faultline/runtime"
	"faultline/runtime/kafka"
)

// keyFlags are the flags of the settings the engine names by key (each
// flag's help names its key; a test holds the two together).
var keyFlags = map[string]string{
	runtime.KeyOnBadRecord:         "on-bad-record",
	runtime.KeyStateBackend:        "state-backend",
	runtime.KeyIncremental:         "incremental",
	kafka.KeyStartup:               "startup",
	kafka.KeyGuarantee:             "sink-guarantee",
	restart.KeyStrategy:            "restart-strategy",
	restart.KeyAttempts:            "restart-attempts",
	restart.KeyDelay:               "restart-delay",
	restart.KeyMaxFailures:         "failure-rate-max-failures",
	restart.KeyFailureRateInterval: "failure-rate-interval",
	restart.KeyFailureRateDelay:    "failure-rate-delay",
	restart.KeyInitialBackoff:      "backoff-initial",
	restart.KeyMaxBackoff:          "backoff-max",
	restart.KeyMultiplier:          "backoff-multiplier",
	restart.KeyJitter:              "backoff-jitter",
	restart.KeyResetThreshold:      "backoff-reset-threshold",
	restart.KeyAttemptsBeforeReset: "backoff-attempts-before-reset",
	restart.KeyFailover:            "failover-strategy",
}

// asFlagError is err as a usage error; a setting the engine names by
// its key (a restart option, a runtime.ConfigError) is named by its flag.
func asFlagError(err error) error {
	var oe *restart.OptionError
	var ce *runtime.ConfigError
	key, value, want := "", "", ""
	switch {
	case errors.As(err, &oe):
		key, value, want = oe.Key, oe.Value, oe.Want
	case errors.As(err, &ce):
		key, value, want = ce.Key, ce.Value, ce.Want
	}
	if f, ok := keyFlags[key]; ok {
		return usagef("--%s %s: want %s", f, value, want)
	}
	return usageError{err}
}
