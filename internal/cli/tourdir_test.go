package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"faultline/internal/e2e"
)

// The sweep deletes a tour's state dir that no live tour holds, with the
// job files next to it, and leaves alone a held one, a young one, one whose
// checkpoint store is open, and whatever is not a tour's.
func TestSweepTourDirsTakesOnlyWhatNoTourHolds(t *testing.T) {
	tmp := t.TempDir()
	now := time.Now()
	mk := func(name string, age time.Duration) string {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, "checkpoints"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "checkpoints", "000001.vlog"), make([]byte, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{filepath.Join(dir, "checkpoints"), dir} {
			if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	gone := mk("faultline-tour-recovery-111", time.Minute)
	if err := os.WriteFile(gone+"-pipeline.yaml", make([]byte, 24), 0o644); err != nil {
		t.Fatal(err)
	}
	held, release, err := newTourDir(tmp, "savepoints")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := os.Chtimes(held, now.Add(-time.Hour), now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	young := mk("faultline-tour-failover-222", time.Second)
	inUse := mk("faultline-tour-unaligned-333", time.Hour)
	unlockStore, err := lockTourDir(checkpointDir(inUse))
	if err != nil {
		t.Fatal(err)
	}
	defer unlockStore()
	other := mk("faultline-bin-444", time.Hour)

	n, size := sweepTourDirs(tmp, now)
	if n != 1 || size < 1024 {
		t.Errorf("swept %d dirs taking %d bytes, want 1 taking at least the 1024 written", n, size)
	}
	for _, p := range []string{gone, gone + "-pipeline.yaml"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	for _, p := range []string{held, young, inUse, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was deleted: %v", p, err)
		}
	}
	if got := sweptNote(1, 1<<20); got != "removed the state dir that a tour stopped on the spot left behind (1.0 MiB)" {
		t.Errorf("note %q", got)
	}
	if got := sweptNote(3, 3<<20); got != "removed 3 state dirs that tours stopped on the spot left behind (3.0 MiB)" {
		t.Errorf("note %q", got)
	}
	if got := sweptNote(0, 0); got != "" {
		t.Errorf("note %q for nothing removed", got)
	}
	release()
	if _, err := os.Stat(held); !os.IsNotExist(err) {
		t.Errorf("a tour's own dir outlived its end (%v)", err)
	}
}

// A tour killed on the spot (SIGKILL, its embedded broker with it) leaves
// its state dir; the next tour removes it and says so, and when that one
// ends, nothing of either is left.
func TestTourKilledOnTheSpotLeavesNothingForLong(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	env := "TMPDIR=" + tmp
	steps := 0
	came := e2e.KillWhenWith(t, []string{env}, func(line map[string]any) bool {
		if _, ok := line["step"]; ok {
			steps++
		}
		return steps == 3
	}, "tour", "recovery", "--headless")
	if !came {
		t.Fatal("the tour ended before its third step")
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "faultline-tour-recovery-*"))
	if len(left) != 1 {
		t.Fatalf("the killed tour left %v, want its state dir", left)
	}
	// Past the grace a fresh folder gets before it counts as left behind.
	time.Sleep(tourDirGrace + time.Second)
	again := e2e.Command(t, "tour", "recovery", "--headless")
	again.Env = append(again.Env, env)
	var stderr strings.Builder
	again.Stderr = &stderr
	if err := again.Run(); err != nil {
		t.Fatalf("the next tour: %v; stderr %q", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "faultline: removed the state dir that a tour stopped on the spot left behind (") {
		t.Errorf("stderr %q does not say what it removed", stderr.String())
	}
	if rest, _ := filepath.Glob(filepath.Join(tmp, tourDirPrefix+"*")); len(rest) != 0 {
		t.Errorf("left in the temporary directory: %v", rest)
	}
}
