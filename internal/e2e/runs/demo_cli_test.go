package runs

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// contrastRun is the at-least-once lesson, headless: join/0 falls to a
// tenth of its rate for 5 s; right after the first checkpoint that
// completes 2 s into the run, join/1 panics, and the job restores that
// checkpoint, taken while the barriers reached the joins at different
// times.
func contrastRun(t *testing.T, mode string, seed int, stateDir string) e2e.Result {
	t.Helper()
	return e2e.Faultline(t, "run", "--headless", "--records", "20000", "--rate", "4000", "--seed", fmt.Sprint(seed),
		"--mode", mode, "--checkpoint-interval", "500ms", "--state-dir", stateDir,
		"--inject", "after=1s,task=join/0,fault=slow,factor=10,for=5s",
		"--inject", "after=2s,after-checkpoints=1,task=join/1,fault=panic")
}

// The same failure of a job with a slowed join subtask: at-least-once
// commits duplicates (records processed past a barrier are read again after
// the restore), exactly-once none; neither loses a record. make soak runs
// ten seeds of each.
func TestSlowJoinContrastsTheGuarantees(t *testing.T) {
	e2e.NeedProgram(t)
	seeds := []int{1}
	if e2e.Soak() {
		seeds = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	}
	for _, mode := range []string{"at-least-once", "exactly-once"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			for _, seed := range seeds {
				r := contrastRun(t, mode, seed, t.TempDir())
				dups, lost := e2e.Num(r.Report, "verify", "duplicates"), e2e.Num(r.Report, "verify", "lost")
				t.Logf("seed %d: duplicates %v, lost %v, restored from %v", seed, dups, lost, r.Report["checkpoints"].(map[string]any)["restored_from"])
				if r.Code != 0 || lost != 0 || e2e.Num(r.Report, "restarts") != 1 {
					t.Fatalf("seed %d: exit %d, lost %v, %v restarts: %s", seed, r.Code, lost, r.Report["restarts"], r.Stderr)
				}
				slowed, after := false, 0.0
				for _, e := range r.Events {
					slowed = slowed || e["event"] == "task_slowed"
					if e["event"] == "checkpoint_completed" {
						after += e2e.Num(e, "after_barrier")
					}
				}
				if !slowed {
					t.Fatalf("seed %d: no task_slowed event", seed)
				}
				switch mode {
				case "at-least-once":
					if dups == 0 || after == 0 {
						t.Fatalf("seed %d: at-least-once committed %v duplicates, %v records after a barrier", seed, dups, after)
					}
				default:
					if dups != 0 || after != 0 {
						t.Fatalf("seed %d: exactly-once committed %v duplicates, %v records after a barrier", seed, dups, after)
					}
				}
			}
		})
	}
}

// Duplicates an at-least-once period committed stay the price of that
// period: a later exactly-once run on the same state dir lists them apart
// and passes.
func TestAtLeastOnceDuplicatesDoNotFailALaterRun(t *testing.T) {
	t.Parallel()
	e2e.NeedProgram(t)
	dir := filepath.Join(t.TempDir(), "state")
	first := contrastRun(t, "at-least-once", 1, dir)
	dups := e2e.Num(first.Report, "verify", "duplicates")
	if first.Code != 0 || dups == 0 || e2e.Num(first.Report, "verify", "duplicates_at_least_once") != dups {
		t.Fatalf("first run: exit %d, verify %v: %s", first.Code, first.Report["verify"], first.Stderr)
	}
	again := e2e.Faultline(t, "run", "--headless", "--records", "20000", "--rate", "4000", "--seed", "1",
		"--mode", "exactly-once", "--checkpoint-interval", "500ms", "--state-dir", dir, "--resume")
	v := again.Report["verify"].(map[string]any)
	if again.Code != 0 || v["guarantee"] != "exactly-once" || e2e.Num(again.Report, "verify", "duplicates_at_least_once") != e2e.Num(again.Report, "verify", "duplicates") ||
		e2e.Num(again.Report, "verify", "duplicates") < dups || v["ok"] != true {
		t.Fatalf("exactly-once run after it: exit %d, verify %v: %s", again.Code, v, again.Stderr)
	}
}
