package crash

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// faultlineUntil runs faultline until it has printed the nth event named
// event, then kills it (SIGKILL) as a crash would.
func faultlineUntil(t *testing.T, event string, nth int, args ...string) int {
	t.Helper()
	seen := 0
	e2e.KillWhen(t, func(m map[string]any) bool {
		if m["event"] == event {
			seen++
		}
		return seen == nth
	}, args...)
	if seen < nth {
		t.Fatalf("the run ended after %d %s events, before the %dth", seen, event, nth)
	}
	return seen
}

// The crash fault kills the process as SIGKILL does; corrupt-checkpoint
// damages the newest checkpoint just before, so the resumed run falls back to
// the one before it and still loses and duplicates nothing.
func TestCrashAndCorruptCheckpointFaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	broker := e2e.StartBroker(t)
	base := []string{"run", "--headless", "--records", "100000", "--rate", "30000", "--checkpoint-interval", "500ms",
		"--state-dir", dir, "--brokers", broker, "--generate"}
	// Checkpoints are triggered every 500 ms: the damage falls between the
	// third and the fourth, with two older ones to fall back on; the crash
	// comes soon after (a fourth may complete in between under load).
	cmd := e2e.Command(t, append(base, "--inject", "after=1800ms,fault=corrupt-checkpoint", "--inject", "after=2100ms,fault=crash")...)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the crash fault did not kill the process: %v\n%s", err, out.String())
	}
	// The events printed last may die with the process: ask the store
	// which checkpoint is damaged.
	var verified []map[string]any
	v := e2e.Faultline(t, "checkpoints", "verify", "--json", "--state-dir", dir)
	if err := json.Unmarshal([]byte(v.Stdout), &verified); err != nil {
		t.Fatalf("checkpoints verify: %v %q", err, v.Stdout)
	}
	var corrupted float64
	for _, c := range verified {
		if c["ok"] == false {
			corrupted = c["id"].(float64)
		}
	}
	if corrupted == 0 {
		t.Fatalf("no checkpoint was damaged: %v", verified)
	}
	// Under heavy load a newer checkpoint may still have completed between
	// the damage and the crash; then that one is the one to restore.
	var listed []map[string]any
	l := e2e.Faultline(t, "checkpoints", "list", "--json", "--state-dir", dir)
	if err := json.Unmarshal([]byte(l.Stdout), &listed); err != nil || len(listed) == 0 {
		t.Fatalf("checkpoints list: %v %q", err, l.Stdout)
	}
	newest := listed[len(listed)-1]["id"].(float64)
	r := e2e.Faultline(t, append(base, "--resume")...)
	if r.Code != 0 && r.Code != 4 {
		t.Fatalf("resume: exit %d %s", r.Code, r.Stderr)
	}
	from := r.Report["checkpoints"].(map[string]any)["restored_from"].([]any)
	switch {
	case len(from) == 0:
		t.Fatal("the resumed run restored nothing")
	case newest == corrupted && from[0].(float64) >= corrupted:
		t.Fatalf("restored from %v; checkpoint %v was damaged", from, corrupted)
	case newest != corrupted && from[0].(float64) != newest:
		t.Fatalf("restored from %v; the newest intact checkpoint is %v", from, newest)
	}
	if e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 {
		t.Fatalf("after the fallback: %v", r.Report["verify"])
	}
}

// A state dir removed under a running job (its checkpoints, the Badger
// state backend's databases, the embedded broker's log) stops the run with
// a message that says so, exit code 1, once the outputs are settled.
// Before, the run went on writing into deleted files, and when stopped it
// never exited: Badger's Close retries writing into a directory that is
// gone for good.
func TestRemovedStateDirStopsTheRun(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	cmd, stderr, lines := e2e.StartRun(t, "run", "--headless", "--rate", "2000", "--checkpoint-interval", "200ms",
		"--state-backend", "badger", "--listen", "0", "--state-dir", dir)
	var report map[string]any
	removed := false
	deadline := time.After(2 * time.Minute)
	for report == nil {
		select {
		case m, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("stdout ended without a report; stderr:\n%s", stderr.String())
			}
			if m["event"] == "checkpoint_completed" && !removed {
				// The run writes into the folder while it goes: as rm -rf
				// meets a file made behind it, the removal is tried again.
				var err error
				for try := 0; try < 20; try++ {
					if err = os.RemoveAll(dir); err == nil {
						break
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				removed = true
			}
			if r, ok := m["report"].(map[string]any); ok {
				report = r
			}
		case <-deadline:
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("still running two minutes after the state dir was removed (removed: %v); stderr:\n%s", removed, stderr.String())
		}
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(time.Minute):
		cmd.Process.Signal(syscall.SIGQUIT)
		<-exited
		t.Fatalf("printed its report but did not exit within a minute; stderr:\n%s", stderr.String())
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want code 1; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "the state dir "+dir+" was removed while the job ran") {
		t.Fatalf("stderr does not say the state dir was removed:\n%s", stderr.String())
	}
	if report["status"] != "CANCELED" {
		t.Fatalf("report %v", report)
	}
	// What was removed stays removed (nothing of the run, its embedded
	// broker's log included, comes back as it closes), and a new run on
	// the same path starts from nothing and ends exact.
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		left, _ := filepath.Glob(filepath.Join(dir, "*"))
		t.Fatalf("the removed state dir is back after the run (%v): %v", err, left)
	}
	if r := e2e.Faultline(t, "run", "--headless", "--records", "3000", "--state-dir", dir); r.Code != 0 || e2e.Num(r.Report, "verify", "expected") == 0 {
		t.Fatalf("a new run on the same path: exit %d, verify %v, stderr %q", r.Code, r.Report["verify"], r.Stderr)
	}
}

// A second Ctrl-C while the output is being checked quits at once, with
// exit 1 and a line that says what it left; the resumed run then goes on
// from the last checkpoint and ends exact. The check is held where a user
// loses patience with it: on a broker that stops answering (the broker
// process stopped with SIGSTOP as the job finishes).
func TestSecondCtrlCCutsTheVerificationShort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := e2e.Command(t, "broker", "--state-dir", filepath.Join(dir, "broker"), "--listen", "0")
	b.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // SIGSTOP goes to its process group alone
	out, err := b.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-b.Process.Pid, syscall.SIGCONT)
		b.Process.Signal(syscall.SIGTERM)
		b.Wait()
	})
	line, _ := bufio.NewReader(out).ReadString('\n')
	_, rest, _ := strings.Cut(line, "listening on ")
	addr, _, _ := strings.Cut(rest, " ")
	args := []string{"run", "--headless", "--records", "20000", "--checkpoint-interval", "300ms",
		"--state-dir", filepath.Join(dir, "state"), "--brokers", addr, "--generate"}
	cmd, stderr, lines := e2e.StartRun(t, args...)
	for m := range lines {
		if m["event"] == "job_status" && m["status"] == "FINISHED" {
			break // the check comes next, and needs the broker
		}
	}
	syscall.Kill(-b.Process.Pid, syscall.SIGSTOP)
	e2e.WaitEvents(t, lines, "verify_started", 1)
	cmd.Process.Signal(syscall.SIGINT)
	// Later than supervise.Again, so that it is a second Ctrl-C and not
	// the copy of the first.
	time.Sleep(700 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	second := time.Now()
	report := e2e.ReportOf(lines)
	err = cmd.Wait()
	took := time.Since(second)
	if code := cmd.ProcessState.ExitCode(); code != 1 || report != nil {
		t.Fatalf("exit %d (%v), report %v; want exit 1 and no report; stderr %q", code, err, report, stderr)
	}
	if !strings.Contains(stderr.String(), "interrupt again: quitting now, without checking the output") {
		t.Fatalf("stderr %q does not say why it quit", stderr)
	}
	if took > 3*time.Second {
		t.Fatalf("quit %s after the second Ctrl-C", took)
	}
	syscall.Kill(-b.Process.Pid, syscall.SIGCONT)
	r := e2e.Faultline(t, append(args, "--resume")...)
	if r.Code != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 || e2e.Num(r.Report, "verify", "lost") != 0 {
		t.Fatalf("resume: exit %d, report %v, stderr %q", r.Code, r.Report, r.Stderr)
	}
}

// A SIGKILL of the faultline process alone, the supervisor's child (as
// the OOM killer or a kill -9 of the wrong pid does): the supervisor says
// so in one line, with what the state dir is left as, and ends by the same
// signal, so that a shell sees the kill; --resume then goes on from the
// last checkpoint, as the line says.
func TestChildKilledAloneIsSaidAndEndsTheSupervisorTheSameWay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"run", "--headless", "--records", "50000", "--checkpoint-interval", "200ms", "--listen", "0", "--state-dir", dir}
	cmd, stderr, lines := e2e.StartRun(t, append(args, "--rate", "20000")...)
	e2e.WaitEvents(t, lines, "checkpoint_completed", 2)
	child := childOf(t, cmd.Process.Pid)
	if err := syscall.Kill(child, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok {
		t.Fatalf("wait: %v, want the supervisor killed by SIGKILL", err)
	}
	if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the supervisor ended %v, want killed by SIGKILL", ws)
	}
	want := fmt.Sprintf("faultline: the faultline process (pid %d) was killed by SIGKILL; the state dir is as a crash leaves it: "+
		"the next `faultline run --resume`, or the terminal UI, goes on from its last completed checkpoint\n", child)
	if stderr.String() != want {
		t.Fatalf("stderr %q, want %q", stderr.String(), want)
	}
	r := e2e.Faultline(t, append(args, "--resume")...)
	if from := r.Report["checkpoints"].(map[string]any)["restored_from"].([]any); r.Code != 0 || len(from) == 0 ||
		e2e.Num(r.Report, "verify", "duplicates") != 0 || e2e.Num(r.Report, "verify", "lost") != 0 {
		t.Fatalf("--resume after the kill: exit %d, report %v, stderr %q", r.Code, r.Report, r.Stderr)
	}
}

// childOf is the one child process of pid.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	var children []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		var state string
		var self, ppid int
		fmt.Sscan(filepath.Base(filepath.Dir(p)), &self)
		fmt.Sscan(string(b)[strings.LastIndexByte(string(b), ')')+1:], &state, &ppid)
		if ppid == pid {
			children = append(children, self)
		}
	}
	if len(children) != 1 {
		t.Fatalf("process %d has children %v, want one", pid, children)
	}
	return children[0]
}
