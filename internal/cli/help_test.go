package cli

import (
	"bytes"
	"strings"
	"testing"
)

// The help of every command shows defaults a person can read: no internal
// stand-ins such as -1 or the largest int.
func TestHelpShowsNoStandInDefaults(t *testing.T) {
	root := newRootCmd()
	for _, c := range append(root.Commands(), root) {
		var b bytes.Buffer
		c.SetOut(&b)
		if err := c.Help(); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"(default -1)", "(default 2147483647)", "(default 9223372036854775807)"} {
			if strings.Contains(b.String(), bad) {
				t.Errorf("%s --help prints %s", c.CommandPath(), bad)
			}
		}
	}
}
