package cli

import (
	"strings"
	"testing"
)

// --metrics-addr and --pprof are refused before anything starts.
func TestCheckMetricsFlags(t *testing.T) {
	for _, c := range []struct {
		addr  string
		pprof bool
		want  string // "" when accepted
	}{
		{"", false, ""},
		{"127.0.0.1:9249", true, ""},
		{":0", false, ""},
		{"", true, "--pprof serves on --metrics-addr"},
		{"127.0.0.1:99999", false, `--metrics-addr "127.0.0.1:99999": want host:port`},
		{"nocolon", false, `--metrics-addr "nocolon": want host:port`},
	} {
		o := &runOptions{metricsAddr: c.addr, pprof: c.pprof}
		err := o.checkMetricsFlags()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q pprof=%v: %v, want %q", c.addr, c.pprof, err, c.want)
		}
	}
}
