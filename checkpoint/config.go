package checkpoint

// The coordinator's settings as a user gives them, checked and named by
// Flink's keys.

import (
	"fmt"
	"time"
)

// Flink's keys of the coordinator's settings.
const (
	KeyInterval          = "execution.checkpointing.interval"
	KeyTimeout           = "execution.checkpointing.timeout"
	KeyMinPause          = "execution.checkpointing.min-pause"
	KeyMaxConcurrent     = "execution.checkpointing.max-concurrent-checkpoints"
	KeyTolerableFailures = "execution.checkpointing.tolerable-failed-checkpoints"
)

// MinInterval is the shortest interval between periodic checkpoints, and
// the shortest timeout (Flink's minimum).
const MinInterval = 10 * time.Millisecond

// OptionError is a setting of Config that cannot be used: Key is Flink's
// key, Value what was given, Want what is accepted. Whoever took the value
// from the user names it as the user wrote it.
type OptionError struct {
	Key, Value, Want string
}

func (e *OptionError) Error() string { return e.Key + " " + e.Value + ": want " + e.Want }

// Setting names the setting, the value given and what is accepted.
func (e *OptionError) Setting() (key, value, want string) { return e.Key, e.Value, e.Want }

// Check holds the settings to what a user may ask for, as given: here 0
// is no default, so a timeout or a concurrency of 0 is refused (the
// coordinator itself takes 0 as Flink's default). An error is an
// *OptionError.
func (c Config) Check() error {
	dur := func(key string, d time.Duration, want string) error {
		return &OptionError{Key: key, Value: d.String(), Want: want}
	}
	num := func(key string, n int, want string) error {
		return &OptionError{Key: key, Value: fmt.Sprint(n), Want: want}
	}
	switch {
	case c.Interval < 0 || c.Interval > 0 && c.Interval < MinInterval:
		return dur(KeyInterval, c.Interval, "0 (off), or 10ms or more (as in Flink)")
	case c.Timeout < MinInterval:
		return dur(KeyTimeout, c.Timeout, "10ms or more (as in Flink)")
	case c.MinPause < 0:
		return dur(KeyMinPause, c.MinPause, "0 or more")
	case c.MaxConcurrent < 1:
		return num(KeyMaxConcurrent, c.MaxConcurrent, "1 or more")
	case c.TolerableFailures < 0:
		return num(KeyTolerableFailures, c.TolerableFailures, "0 or more")
	}
	return nil
}
