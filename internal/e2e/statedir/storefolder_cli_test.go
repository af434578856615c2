package statedir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// copyStateDir copies the state dir src, as it is, into a new temporary
// folder.
func copyStateDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "state")
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	return dst
}

// A folder where the checkpoint store's lock file belongs: the commands
// that write to the store say in one line that it is in the way and to
// remove it, without advising --fresh (the store is intact); list reads on;
// once the folder is gone, --resume goes on from the last checkpoint.
func TestLockFileReplacedByAFolder(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	args := []string{"run", "--headless", "--records", "20000", "--checkpoint-interval", "100ms"}
	if r := e2e.Faultline(t, append(args, "--state-dir", base)...); r.Code != 0 {
		t.Fatalf("first run: exit %d, stderr %q", r.Code, r.Stderr)
	}
	dir := copyStateDir(t, base)
	lock := filepath.Join(dir, "checkpoints", "LOCK")
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	// A run, with or without --resume, writes to the store.
	for _, cmd := range [][]string{append(args, "--resume"), args} {
		d := copyStateDir(t, dir)
		want := filepath.Join(d, "checkpoints", "LOCK") + " is a folder"
		r := e2e.Faultline(t, append(cmd, "--state-dir", d)...)
		line := strings.TrimRight(r.Stderr, "\n")
		if r.Code != 1 || strings.Contains(line, "\n") || !strings.Contains(line, want) || !strings.Contains(line, "remove that folder and try again") ||
			strings.Contains(line, "--fresh") || strings.Contains(line, "cannot be repaired") {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line saying %q and to remove it", strings.Join(cmd, " "), r.Code, r.Stderr, want)
		}
	}
	// reset deletes everything anyway: the folder with it.
	if r := e2e.Faultline(t, "reset", "--yes", "--state-dir", copyStateDir(t, dir)); r.Code != 0 {
		t.Errorf("reset --yes: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if r := e2e.Faultline(t, "checkpoints", "list", "--state-dir", dir); r.Code != 0 || !strings.Contains(r.Stdout, "checkpoint  orders") {
		t.Errorf("checkpoints list: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	r := e2e.Faultline(t, append(args, "--resume", "--state-dir", dir)...)
	if from := r.Report["checkpoints"].(map[string]any)["restored_from"].([]any); r.Code != 0 || len(from) == 0 ||
		e2e.Num(r.Report, "verify", "duplicates") != 0 || e2e.Num(r.Report, "verify", "lost") != 0 {
		t.Fatalf("--resume after removing the folder: exit %d, report %v, stderr %q", r.Code, r.Report, r.Stderr)
	}
}

// A folder where a table file of the checkpoint store belongs: every
// command that opens the store says so in one line naming the file, with
// the way on (--fresh), and that way on works.
func TestTableFileReplacedByAFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"run", "--headless", "--records", "20000", "--checkpoint-interval", "100ms"}
	if r := e2e.Faultline(t, append(args, "--state-dir", dir)...); r.Code != 0 {
		t.Fatalf("first run: exit %d, stderr %q", r.Code, r.Stderr)
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "checkpoints", "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table in the checkpoint store")
	}
	if err := os.Remove(tables[0]); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tables[0], 0o755); err != nil {
		t.Fatal(err)
	}
	want := "checkpoint store damaged: " + tables[0] + ": a folder where a table file belongs"
	for _, cmd := range [][]string{append(args, "--resume"), {"checkpoints", "list"}} {
		r := e2e.Faultline(t, append(cmd, "--state-dir", dir)...)
		line := strings.TrimRight(r.Stderr, "\n")
		if r.Code != 1 || strings.Contains(line, "\n") || !strings.Contains(line, want) || !strings.Contains(line, "faultline run --fresh") {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line saying %q and the way on", strings.Join(cmd, " "), r.Code, r.Stderr, want)
		}
	}
	if r := e2e.Faultline(t, "reset", "--state-dir", dir); r.Code != 2 || !strings.Contains(r.Stderr, "holds a damaged checkpoint store") {
		t.Errorf("reset: exit %d, stderr %q; want it to name the damaged store and ask for --yes", r.Code, r.Stderr)
	}
	if r := e2e.Faultline(t, "reset", "--yes", "--state-dir", copyStateDir(t, dir)); r.Code != 0 {
		t.Errorf("reset --yes: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if r := e2e.Faultline(t, append(args, "--fresh", "--state-dir", dir)...); r.Code != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 {
		t.Fatalf("--fresh: exit %d, stderr %q", r.Code, r.Stderr)
	}
}
