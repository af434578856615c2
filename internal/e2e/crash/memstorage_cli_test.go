package crash

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// With the jobmanager checkpoint storage (the classic MemoryStateBackend)
// the checkpoints live in the process's memory: a crash of the whole
// process, embedded broker and all, loses them. The next run says so and
// starts over from the beginning of its input, and its output is still
// exact: what the crashed run committed is skipped, not written twice.
func TestJobManagerStorageCrashStartsOver(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := []string{"run", "--headless", "--records", "40000", "--rate", "8000", "--checkpoint-interval", "300ms",
		"--checkpoint-storage", "jobmanager", "--state-dir", dir, "--listen", "0"}
	cmd := e2e.Command(t, append(base, "--inject", "after=2s,fault=crash")...)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the crash fault did not kill the process: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `"event":"checkpoint_completed"`) {
		t.Fatalf("no checkpoint completed before the crash:\n%s", out.String())
	}
	r := e2e.Faultline(t, append(base, "--resume")...)
	if r.Code != 0 || e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 {
		t.Fatalf("resumed run: exit %d, report %v, stderr %s", r.Code, r.Report, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "jobmanager checkpoint storage: the ") || !strings.Contains(r.Stdout, "lived in its process's memory") {
		t.Errorf("the resumed run does not say the checkpoints died with the process:\n%.2000s", r.Stdout)
	}
	if from, _ := r.Report["checkpoints"].(map[string]any)["restored_from"].([]any); len(from) != 0 {
		t.Errorf("restored from %v: the jobmanager storage's checkpoints should be gone", from)
	}
}
