package cli

import (
	"strings"
	"testing"

	"faultline/runtime/barrier"
)

// --mode takes the modes the UI names: unaligned is exactly-once with
// --unaligned; a wrong one says which there are.
func TestModeTakesTheUIsNames(t *testing.T) {
	for _, tc := range []struct {
		mode      string
		want      barrier.Mode
		unaligned bool
	}{
		{"exactly-once", barrier.ExactlyOnce, false},
		{"aligned", barrier.ExactlyOnce, false},
		{"unaligned", barrier.ExactlyOnce, true},
		{"exactly-once unaligned", barrier.ExactlyOnce, true},
		{"at-least-once", barrier.AtLeastOnce, false},
	} {
		_, o := newRunCmdOptions()
		o.mode = tc.mode
		p := &prepared{}
		if err := o.checkMode(p); err != nil || p.mode != tc.want || o.unaligned != tc.unaligned || o.mode == tc.mode && tc.unaligned {
			t.Errorf("--mode %q: %v, mode %v unaligned %v (reported as %q)", tc.mode, err, p.mode, o.unaligned, o.mode)
		}
	}
	_, o := newRunCmdOptions()
	o.mode = "bogus"
	if err := o.checkMode(&prepared{}); err == nil || !strings.Contains(err.Error(), "unaligned") {
		t.Errorf("--mode bogus: %v, want an error that names unaligned", err)
	}
}
