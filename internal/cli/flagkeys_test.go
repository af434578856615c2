package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"faultline/restart"
)

// Each keyed flag's help names the Flink key its errors come back with.
func TestKeyedFlagsNameTheirKeys(t *testing.T) {
	cmd, _ := newRunCmdOptions()
	for key, name := range keyFlags {
		f := cmd.Flags().Lookup(name)
		if f == nil {
			t.Fatalf("no flag --%s for %s", name, key)
		}
		if !strings.Contains(f.Usage, "("+key+")") && !strings.Contains(f.Usage, "("+key+";") {
			t.Errorf("--%s's help does not name %s: %q", name, key, f.Usage)
		}
	}
}

// An unusable restart option is told by its flag, in one line, as a usage
// error.
func TestRestartOptionErrorsNameTheFlag(t *testing.T) {
	opts := restart.DefaultOptions()
	opts.Exponential.Max = 500 * time.Millisecond
	_, err := restart.Parse("exponential-delay", opts)
	got := asFlagError(err)
	var ue usageError
	if !errors.As(got, &ue) || got.Error() != "--backoff-max 500ms: want at least the initial backoff (1s)" {
		t.Fatalf("asFlagError = %v (%T)", got, got)
	}
	_, err = restart.ParseFailoverStrategy("sideways")
	if got := asFlagError(err).Error(); got != `--failover-strategy "sideways": want one of full, region, individual, none` {
		t.Fatalf("asFlagError = %q", got)
	}
}
