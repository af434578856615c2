package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// faultlineUntil runs faultline until it has printed the nth event named
// event, then kills it (SIGKILL) as a crash would.
func faultlineUntil(t *testing.T, event string, nth int, args ...string) int {
	t.Helper()
	seen := 0
	killWhen(t, func(m map[string]any) bool {
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

// killWhen runs faultline until it printed a line that until accepts,
// then kills it (SIGKILL) as a crash would. It reports whether one came.
func killWhen(t *testing.T, until func(line map[string]any) bool, args ...string) bool {
	t.Helper()
	return killWhenWith(t, nil, until, args...)
}

// killWhenWith is killWhen with env (KEY=value) added to the program's
// environment.
func killWhenWith(t *testing.T, env []string, until func(line map[string]any) bool, args ...string) bool {
	t.Helper()
	cmd := command(t, args...)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	came := false
	for !came && sc.Scan() {
		var m map[string]any
		came = json.Unmarshal(sc.Bytes(), &m) == nil && until(m)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	go func() {
		for sc.Scan() {
		}
	}()
	cmd.Wait()
	return came
}

// The crash fault kills the process as SIGKILL does; corrupt-checkpoint
// damages the newest checkpoint just before, so the resumed run falls back to
// the one before it and still loses and duplicates nothing.
func TestCrashAndCorruptCheckpointFaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	broker := startBroker(t)
	base := []string{"run", "--headless", "--records", "100000", "--rate", "30000", "--checkpoint-interval", "500ms",
		"--state-dir", dir, "--brokers", broker, "--generate"}
	// Checkpoints are triggered every 500 ms: the damage falls between the
	// third and the fourth, with two older ones to fall back on; the crash
	// comes soon after (a fourth may complete in between under load).
	cmd := command(t, append(base, "--inject", "after=1800ms,fault=corrupt-checkpoint", "--inject", "after=2100ms,fault=crash")...)
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
	v := faultline(t, "checkpoints", "verify", "--json", "--state-dir", dir)
	if err := json.Unmarshal([]byte(v.stdout), &verified); err != nil {
		t.Fatalf("checkpoints verify: %v %q", err, v.stdout)
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
	l := faultline(t, "checkpoints", "list", "--json", "--state-dir", dir)
	if err := json.Unmarshal([]byte(l.stdout), &listed); err != nil || len(listed) == 0 {
		t.Fatalf("checkpoints list: %v %q", err, l.stdout)
	}
	newest := listed[len(listed)-1]["id"].(float64)
	r := faultline(t, append(base, "--resume")...)
	if r.code != 0 && r.code != 4 {
		t.Fatalf("resume: exit %d %s", r.code, r.stderr)
	}
	from := r.report["checkpoints"].(map[string]any)["restored_from"].([]any)
	switch {
	case len(from) == 0:
		t.Fatal("the resumed run restored nothing")
	case newest == corrupted && from[0].(float64) >= corrupted:
		t.Fatalf("restored from %v; checkpoint %v was damaged", from, corrupted)
	case newest != corrupted && from[0].(float64) != newest:
		t.Fatalf("restored from %v; the newest intact checkpoint is %v", from, newest)
	}
	if num(r.report, "verify", "lost") != 0 || num(r.report, "verify", "duplicates") != 0 {
		t.Fatalf("after the fallback: %v", r.report["verify"])
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
	cmd, stderr, lines := startRun(t, "run", "--headless", "--rate", "2000", "--checkpoint-interval", "200ms",
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
				if err := os.RemoveAll(dir); err != nil {
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
}

// startRun starts faultline with args; it returns the command, its stderr
// (to read once the command has exited) and the JSON objects it prints on
// stdout.
func startRun(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, <-chan map[string]any) {
	t.Helper()
	return startRunWith(t, nil, args...)
}

// startRunWith is startRun with env (KEY=value) added to the program's
// environment.
func startRunWith(t *testing.T, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, <-chan map[string]any) {
	t.Helper()
	cmd := command(t, args...)
	cmd.Env = append(cmd.Env, env...)
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stderr, jsonLines(out)
}

// reportOf reads lines to their end and returns the report among them
// (nil when the run printed none).
func reportOf(lines <-chan map[string]any) map[string]any {
	var report map[string]any
	for m := range lines {
		if r, ok := m["report"].(map[string]any); ok {
			report = r
		}
	}
	return report
}

// jsonLines sends each line of r that is a JSON object, until r ends.
func jsonLines(r io.Reader) <-chan map[string]any {
	lines := make(chan map[string]any, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	return lines
}

// A second Ctrl-C while the output is being checked quits at once, with
// exit 1 and a line that says what it left; the resumed run then goes on
// from the last checkpoint and ends exact. The check is held where a user
// loses patience with it: on a broker that stops answering (the broker
// process stopped with SIGSTOP as the job finishes).
func TestSecondCtrlCCutsTheVerificationShort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := command(t, "broker", "--state-dir", filepath.Join(dir, "broker"), "--listen", "0")
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
	cmd, stderr, lines := startRun(t, args...)
	for m := range lines {
		if m["event"] == "job_status" && m["status"] == "FINISHED" {
			break // the check comes next, and needs the broker
		}
	}
	syscall.Kill(-b.Process.Pid, syscall.SIGSTOP)
	waitEvents(t, lines, "verify_started", 1)
	cmd.Process.Signal(syscall.SIGINT)
	// Later than supervise.Again, so that it is a second Ctrl-C and not
	// the copy of the first.
	time.Sleep(700 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	second := time.Now()
	report := reportOf(lines)
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
	r := faultline(t, append(args, "--resume")...)
	if r.code != 0 || num(r.report, "verify", "duplicates") != 0 || num(r.report, "verify", "lost") != 0 {
		t.Fatalf("resume: exit %d, report %v, stderr %q", r.code, r.report, r.stderr)
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
	args := []string{"run", "--headless", "--records", "100000", "--checkpoint-interval", "200ms", "--listen", "0", "--state-dir", dir}
	cmd, stderr, lines := startRun(t, append(args, "--rate", "20000")...)
	waitEvents(t, lines, "checkpoint_completed", 2)
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
	r := faultline(t, append(args, "--resume")...)
	if from := r.report["checkpoints"].(map[string]any)["restored_from"].([]any); r.code != 0 || len(from) == 0 ||
		num(r.report, "verify", "duplicates") != 0 || num(r.report, "verify", "lost") != 0 {
		t.Fatalf("--resume after the kill: exit %d, report %v, stderr %q", r.code, r.report, r.stderr)
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
