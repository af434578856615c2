package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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
