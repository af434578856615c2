package soak

import (
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// The memory soak: the default job at a steady rate for ten minutes, its
// RSS and its state dir's size minute by minute.

// TestSoakMemory runs the default job unbounded at --rate 8000 for ten
// minutes (make soak only) and prints, each minute, the process's RSS
// (sampled every second: lowest, mean, highest) and the state dir's size.
// From minute 3 on each minute's mean RSS must be within 20 % of their
// overall mean, the highest below 300 MB, and the state dir no larger at
// the end than it was in minutes 2 to 5 (plus 25 %).
func TestSoakMemory(t *testing.T) {
	t.Parallel()
	if !e2e.Soak() {
		t.Skip("make soak runs it (ten minutes)")
	}
	s := newSoak(t, "memory soak")
	const minutes = 10
	r := s.start("run", "--headless", "--rate", "8000", "--listen", "0", "--state-dir", s.stateDir())
	reported := make(chan map[string]any, 1)
	go func() {
		var report map[string]any
		for m := range r.events {
			if rep, ok := m["report"].(map[string]any); ok {
				report = rep
			}
		}
		reported <- report
	}()
	type minute struct{ lo, hi, sum, n, disk int64 }
	var per [minutes]minute
	start := time.Now()
	for i := range per {
		m := &per[i]
		m.lo = 1 << 62
		for time.Since(start) < time.Duration(i+1)*time.Minute {
			time.Sleep(time.Second)
			rss := e2e.TreeRSS(r.cmd.Process.Pid)
			m.lo, m.hi, m.sum, m.n = min(m.lo, rss), max(m.hi, rss), m.sum+rss, m.n+1
		}
		m.disk = e2e.DiskUsage(s.stateDir())
		t.Logf("minute %2d: RSS %3d / %3d / %3d MB (lowest / mean / highest), state dir %3d MB",
			i+1, m.lo>>20, m.sum/m.n>>20, m.hi>>20, m.disk>>20)
	}
	r.cmd.Process.Signal(syscall.SIGINT)
	report := <-reported
	code := r.exit(s)
	if code != 0 || report == nil {
		t.Fatalf("exit %d, report %v", code, report)
	}
	v := report["verify"].(map[string]any)
	t.Logf("after %d minutes: verify expected %.0f committed %.0f duplicates %.0f lost %.0f", minutes, v["expected"], v["committed"], v["duplicates"], v["lost"])
	var total, n, early int64
	for _, m := range per[2:] {
		total, n = total+m.sum/m.n, n+1
	}
	mean := total / n
	for i, m := range per {
		if i >= 1 && i <= 4 {
			early = max(early, m.disk)
		}
		if i < 2 {
			continue
		}
		if d := m.sum/m.n - mean; d > mean/5 || -d > mean/5 {
			t.Errorf("minute %d: mean RSS %d MB, more than 20 %% from the mean of minutes 3-%d, %d MB", i+1, m.sum/m.n>>20, minutes, mean>>20)
		}
		if m.hi >= 300<<20 {
			t.Errorf("minute %d: RSS reached %d MB", i+1, m.hi>>20)
		}
	}
	if last := per[minutes-1].disk; last > early*5/4 {
		t.Errorf("the state dir grew: %d MB at the end, %d MB at most in minutes 2-5", last>>20, early>>20)
	}
	if v["duplicates"] != 0.0 || v["lost"] != 0.0 {
		t.Errorf("verify %v", v)
	}
}
