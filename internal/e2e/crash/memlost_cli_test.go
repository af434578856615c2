package crash

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// removeMemtableLogs deletes the checkpoint store's memtable logs (*.mem)
// in the state dir and returns how many there were.
func removeMemtableLogs(t *testing.T, stateDir string) int {
	t.Helper()
	mems, err := filepath.Glob(filepath.Join(stateDir, "checkpoints", "*.mem"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mems {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	return len(mems)
}

// A deleted memtable log takes the newest checkpoints' records with it, key
// and all: list and verify name them as lost, and the resumed run passes
// them over, goes back to the newest one left and writes nothing twice.
// Before, the store forgot them: list and verify showed the older ones
// only, and the resumed run went back without a word and wrote again what
// the lost ones had committed.
func TestDeletedMemtableLogLosesTheNewestCheckpoints(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := []string{"run", "--headless", "--records", "20000", "--rate", "10000", "--checkpoint-interval", "100ms",
		"--state-dir", dir, "--listen", "0"}
	// A run killed after three checkpoints; list recovers the store and
	// flushes them into a table. The resumed run, killed after one more,
	// leaves the newest in the memtable log only.
	faultlineUntil(t, "checkpoint_completed", 3, base...)
	if l := e2e.Faultline(t, "checkpoints", "list", "--state-dir", dir); l.Code != 0 {
		t.Fatalf("list: exit %d %s", l.Code, l.Stderr)
	}
	var last int64
	e2e.KillWhen(t, func(m map[string]any) bool {
		if m["event"] == "checkpoint_completed" {
			last = int64(m["id"].(float64))
		}
		return last > 0
	}, append(base, "--resume")...)
	if last == 0 {
		t.Fatal("the resumed run completed no checkpoint")
	}
	if n := removeMemtableLogs(t, dir); n == 0 {
		t.Fatal("no memtable log after the kill")
	}

	lost := fmt.Sprintf("checkpoint %d: DAMAGED: the store completed it, but its metadata record is gone", last)
	l := e2e.Faultline(t, "checkpoints", "list", "--state-dir", dir)
	t.Logf("list:\n%s%s", l.Stdout, l.Stderr)
	if l.Code != 0 || !strings.Contains(l.Stdout, lost) || !strings.Contains(l.Stdout, "orders") {
		t.Fatalf("list: exit %d, no %q beside the older checkpoints:\n%s%s", l.Code, lost, l.Stdout, l.Stderr)
	}
	v := e2e.Faultline(t, "checkpoints", "verify", "--state-dir", dir)
	if v.Code != 1 || !strings.Contains(v.Stdout, lost) || !strings.Contains(v.Stderr, "checkpoints are damaged") {
		t.Fatalf("verify: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
	}
	res := e2e.Faultline(t, append(base, "--resume")...)
	invalid := false
	for _, e := range res.EventsNamed("checkpoint_invalid") {
		invalid = invalid || int64(e["id"].(float64)) == last && strings.Contains(e["error"].(string), "metadata record is gone")
	}
	if res.Code != 0 || !invalid || e2e.Num(res.Report, "verify", "duplicates") != 0 || e2e.Num(res.Report, "verify", "lost") != 0 {
		t.Fatalf("resume: exit %d, checkpoint_invalid for %d: %v, verify %v, stderr %q", res.Code, last, invalid, res.Report["verify"], res.Stderr)
	}
	if from := res.Report["checkpoints"].(map[string]any)["restored_from"].([]any); len(from) == 0 || int64(from[0].(float64)) >= last {
		t.Fatalf("restored from %v, want a checkpoint before %d", from, last)
	}
}

// A run killed at random moments — while a checkpoint is being written,
// between its commit and the store's record of it, anywhere — never leaves
// a store that reports a checkpoint lost or damaged.
func TestKilledRunsNeverReportALoss(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// 40 s of input: every run is killed long before its end.
	args := []string{"run", "--headless", "--records", "200000", "--rate", "5000", "--checkpoint-interval", "100ms",
		"--state-dir", dir, "--listen", "0", "--resume"}
	for round := range 20 {
		// Kill after the nth checkpoint triggered, and a random time into
		// its writing and the next.
		nth, wait := 1+rand.IntN(3), time.Duration(rand.IntN(150_000))*time.Microsecond
		seen := 0
		came := e2e.KillWhen(t, func(m map[string]any) bool {
			if m["event"] == "checkpoint_triggered" {
				seen++
			}
			if seen < nth {
				return false
			}
			time.Sleep(wait)
			return true
		}, args...)
		if !came {
			t.Fatalf("round %d: the run ended before checkpoint %d was triggered", round, nth)
		}
		v := e2e.Faultline(t, "checkpoints", "verify", "--state-dir", dir)
		t.Logf("round %d: killed %v after trigger %d: %s", round, wait.Round(time.Millisecond), nth, finalLine(v.Stdout))
		if v.Code != 0 || strings.Contains(v.Stdout, "DAMAGED") {
			t.Fatalf("round %d: verify after a kill: exit %d\n%s%s", round, v.Code, v.Stdout, v.Stderr)
		}
	}
}

// finalLine is the last line of s.
func finalLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}
