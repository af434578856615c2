package checkpoint

import (
	"errors"
	"testing"
	"time"
)

func TestConfigCheckNamesFlinksKeys(t *testing.T) {
	ok := Config{Interval: 2 * time.Second, Timeout: DefaultTimeout, MaxConcurrent: 1}
	if err := ok.Check(); err != nil {
		t.Fatalf("Check(%+v) = %v", ok, err)
	}
	off := ok
	off.Interval = 0
	if err := off.Check(); err != nil {
		t.Fatalf("an interval of 0 turns checkpointing off, refused: %v", err)
	}
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Interval = -time.Second }, "execution.checkpointing.interval -1s: want 0 (off), or 10ms or more (as in Flink)"},
		{func(c *Config) { c.Interval = 5 * time.Millisecond }, "execution.checkpointing.interval 5ms: want 0 (off), or 10ms or more (as in Flink)"},
		{func(c *Config) { c.Timeout = 0 }, "execution.checkpointing.timeout 0s: want 10ms or more (as in Flink)"},
		{func(c *Config) { c.MinPause = -time.Millisecond }, "execution.checkpointing.min-pause -1ms: want 0 or more"},
		{func(c *Config) { c.MaxConcurrent = 0 }, "execution.checkpointing.max-concurrent-checkpoints 0: want 1 or more"},
		{func(c *Config) { c.TolerableFailures = -1 }, "execution.checkpointing.tolerable-failed-checkpoints -1: want 0 or more"},
	} {
		c := ok
		tc.change(&c)
		err := c.Check()
		var oe *OptionError
		if !errors.As(err, &oe) || err.Error() != tc.want {
			t.Fatalf("Check = %v, want the *OptionError %q", err, tc.want)
		}
	}
}
