package cli

// The engine names an option it cannot use by Flink's configuration key;
// the command line names it by the flag the user typed.

import (
	"errors"

	"faultline/restart"
)

// restartFlags are the flags of the restart and failover strategies'
// options, by Flink's key (each flag's help names its key; a test holds
// the two together).
var restartFlags = map[string]string{
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

// asFlagError is err as a usage error; a restart option's error names
// the flag of its key.
func asFlagError(err error) error {
	var oe *restart.OptionError
	if errors.As(err, &oe) {
		if f, ok := restartFlags[oe.Key]; ok {
			return usagef("--%s %s: want %s", f, oe.Value, oe.Want)
		}
	}
	return usageError{err}
}
