package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/barrier"
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

// Rates are records per second of the job's clock over at least a second
// of wall time: slow motion reads the job's own rate, and a frozen world
// its last one, not 0/s.
func TestRatesAreOnTheJobsClock(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var p taskSample
	cur := taskSample{at: t0, in: 0}
	rateOn(&cur, p, false, t0)
	p = cur
	// Slower: a second of wall time is a quarter second of the job's;
	// 4 records read in it are 16 a second of the job.
	cur = taskSample{at: t0.Add(time.Second), in: 4}
	rateOn(&cur, p, true, t0.Add(time.Second/4))
	if cur.rate != 16 {
		t.Fatalf("slow motion: %v records/s, want 16", cur.rate)
	}
	// Within the window: the rate stays.
	p = cur
	cur = taskSample{at: t0.Add(1500 * time.Millisecond), in: 5}
	rateOn(&cur, p, true, t0.Add(time.Second/4+time.Second/8))
	if cur.rate != 16 {
		t.Fatalf("within the window: %v, want the last 16", cur.rate)
	}
	// Frozen: the job's clock stood still; the last rate stays.
	p = cur
	cur = taskSample{at: t0.Add(3 * time.Second), in: 5}
	rateOn(&cur, p, true, t0.Add(time.Second/4))
	if cur.rate != 16 {
		t.Fatalf("frozen: %v, want the last 16", cur.rate)
	}
	// Stepping: 16 records in 10 ms of the job's clock over a second of
	// wall time are not 1,600 a second; the window stays open until the
	// steps add up to a quarter second of the job's clock.
	p = cur
	cur = taskSample{at: t0.Add(4 * time.Second), in: 21}
	rateOn(&cur, p, true, t0.Add(time.Second/4+10*time.Millisecond))
	if cur.rate != 16 {
		t.Fatalf("a step: %v, want the last 16", cur.rate)
	}
	p = cur
	cur = taskSample{at: t0.Add(5 * time.Second), in: 25}
	rateOn(&cur, p, true, t0.Add(time.Second/2))
	if cur.rate != 84 {
		t.Fatalf("steps adding up to a quarter second: %v, want the 21 records since the window began in 0.25s, 84", cur.rate)
	}
}
