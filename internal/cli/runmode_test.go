package cli

import (
	"strings"
	"testing"

	"faultline/runtime"
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

// The summary after the UI says why checkpoints failed: a clean run's one
// failure is the checkpoint the stop aborted.
func TestSummarySaysWhyCheckpointsFailed(t *testing.T) {
	for _, tc := range []struct {
		c    runtime.ReportCheckpoints
		want string
	}{
		{runtime.ReportCheckpoints{}, "0 failed"},
		{runtime.ReportCheckpoints{Failed: 1, FailedBy: map[string]int{"job failover": 1}}, "1 failed (aborted as the job restarted or stopped)"},
		{runtime.ReportCheckpoints{Failed: 3, FailedBy: map[string]int{"job failover": 1, "expired": 2}}, "3 failed (2 expired, 1 aborted as the job restarted or stopped)"},
	} {
		if got := failedText(tc.c); got != tc.want {
			t.Errorf("failedText(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}
