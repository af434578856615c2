package attach

import (
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// Flink refreshes its figures every ten seconds: polled every second, a
// subtask's count stands still nine times and then jumps. Its rate is the
// jump over the ten seconds, held until the next; a count that stands
// still longer than rateStale is a subtask that reads nothing; a new
// attempt counts afresh.
func TestRatesAreTakenBetweenChangesOfTheCount(t *testing.T) {
	r := rates{}
	t0 := time.Unix(1_800_000_000, 0)
	rate := func(sec int, records int64, attempt int) float64 {
		s := view.Snapshot{Now: t0.Add(time.Duration(sec) * time.Second),
			Tasks: map[string]view.Task{"join/0": {Name: "join/0", RecordsIn: records, Restarts: attempt}}}
		r.apply(&s)
		return s.Tasks["join/0"].RateIn
	}
	rate(0, 1000, 0)
	for sec := 1; sec < 10; sec++ {
		if got := rate(sec, 1000, 0); got != 0 {
			t.Fatalf("second %d: rate %v before the first change", sec, got)
		}
	}
	if got := rate(10, 21_000, 0); got != 2000 {
		t.Fatalf("the first change: rate %v, want 2000/s", got)
	}
	if got := rate(15, 21_000, 0); got != 2000 {
		t.Fatalf("between changes: rate %v, want the last (2000/s)", got)
	}
	if got := rate(10+26, 21_000, 0); got != 0 {
		t.Fatalf("still for 26s: rate %v, want 0", got)
	}
	if got := rate(40, 500, 1); got != 0 {
		t.Fatalf("a new attempt: rate %v, want 0 until its count changes", got)
	}
	if got := rate(42, 2500, 1); got != 1000 {
		t.Fatalf("the new attempt's first change: rate %v, want 1000/s", got)
	}
}
