package statedir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/diskroom"
	"github.com/faultline-dev/faultline/internal/e2e"
)

// smallDisk mounts a tmpfs of size bytes in a temporary folder; it is the
// only way to meet a full disk for real, and needs the right to mount.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small file system here (%v: %s); TestDiskShortCountsMappedFilesAndTheNextLog checks the rule without one", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fillTo writes a file in dir so that about free bytes stay free.
func fillTo(t *testing.T, dir string, free int64) string {
	t.Helper()
	have, err := diskroom.Free(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "fill")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for n := have - free; n > 0; n -= int64(len(chunk)) {
		if _, err := f.Write(chunk[:min(int64(len(chunk)), n)]); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// A full disk is met with a message and exit 1, never with SIGBUS: at the
// start when there is too little room, and during the run when the room
// runs out, after which the run stops cleanly and a resumed one, with room
// again, is exact.
func TestFullDiskStopsTheRunCleanly(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, "150m")
	state := filepath.Join(disk, "state")

	fill := fillTo(t, disk, 20<<20)
	start := time.Now()
	r := e2e.Faultline(t, "run", "--headless", "--records", "50000", "--state-dir", state)
	if r.Code != 1 || !strings.Contains(r.Stderr, "disk is nearly full: "+state+" has") || time.Since(start) > 5*time.Second {
		t.Fatalf("start on a full disk: exit %d after %s, stderr %q", r.Code, time.Since(start), r.Stderr)
	}
	os.Remove(fill)

	args := []string{"run", "--headless", "--rate", "20000", "--checkpoint-interval", "300ms", "--listen", "0", "--state-dir", state}
	cmd, stderr, lines := e2e.StartRun(t, args...)
	e2e.WaitEvents(t, lines, "checkpoint_completed", 3)
	fill = fillTo(t, disk, 30<<20)
	report := e2e.ReportOf(lines)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 1 || report == nil || !strings.Contains(stderr.String(), "stopped the job: the state dir's disk is nearly full") {
		t.Fatalf("disk filled during the run: exit %d, report %v, stderr %q", code, report, stderr)
	}
	if e2e.Num(report, "verify", "lost") != 0 || e2e.Num(report, "verify", "duplicates") != 0 {
		t.Fatalf("verify %v", report["verify"])
	}
	os.Remove(fill)

	cmd, stderr, lines = e2e.StartRun(t, append(args, "--resume")...)
	e2e.WaitEvents(t, lines, "checkpoint_completed", 3)
	cmd.Process.Signal(syscall.SIGINT)
	report = e2e.ReportOf(lines)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 || report == nil || e2e.Num(report, "verify", "lost") != 0 || e2e.Num(report, "verify", "duplicates") != 0 {
		t.Fatalf("resume: exit %d, report %v, stderr %q", code, report, stderr)
	}
}
