package supervise

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests run this test binary as the program: with SUPERVISE_TEST set,
// TestMain runs Main with the behaviour it names instead of the tests, so
// the binary starts itself again as the supervised child, as faultline does.
const modeEnv = "SUPERVISE_TEST"

var behaviours = map[string]func() int{
	"ok":    func() int { return 0 },
	"usage": func() int { return CodeUsage },
	"three": func() int { return 3 },
	// A panic in a goroutine of its own, which nothing can recover.
	"panic": func() int {
		go func() { panic("boom in a goroutine") }()
		select {}
	},
	"sigkill": func() int {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	},
	// Writes its pid and waits, with Go's default handling of signals:
	// SIGTERM kills it.
	"wait": func() int {
		os.WriteFile(os.Getenv("SUPERVISE_PIDFILE"), []byte(strconv.Itoa(os.Getpid())), 0o644)
		select {}
	},
	// Writes its pid, then counts the SIGTERMs it gets in a second after
	// the first and exits with the count.
	"count": func() int {
		sigs := make(chan os.Signal, 8)
		signal.Notify(sigs, syscall.SIGTERM)
		os.WriteFile(os.Getenv("SUPERVISE_PIDFILE"), []byte(strconv.Itoa(os.Getpid())), 0o644)
		<-sigs
		n := 1
		deadline := time.After(time.Second)
		for {
			select {
			case <-sigs:
				n++
			case <-deadline:
				return 10 + n
			}
		}
	},
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(modeEnv); mode != "" {
		os.Exit(Main("faultline", behaviours[mode]))
	}
	os.Exit(m.Run())
}

func program(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{modeEnv + "=" + mode, "TMPDIR=" + t.TempDir()}, env...)...)
	return cmd
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

func TestExitCodesPassThroughAndUsageStaysTwo(t *testing.T) {
	for mode, want := range map[string]int{"ok": 0, "usage": 2, "three": 3} {
		t.Run(mode, func(t *testing.T) {
			cmd := program(t, mode)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if got := exitCode(t, cmd.Run()); got != want || stderr.Len() != 0 {
				t.Fatalf("exit %d, stderr %q; want %d and nothing", got, stderr.String(), want)
			}
			if left, _ := filepath.Glob(filepath.Join(cmdTmp(cmd), "*")); len(left) != 0 {
				t.Fatalf("files left behind: %v", left)
			}
		})
	}
}

// cmdTmp is the TMPDIR the program ran with.
func cmdTmp(cmd *exec.Cmd) string {
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			return v
		}
	}
	return ""
}

// A panic nothing recovers exits with CodeCrash, never with 2, and says
// where its report is.
func TestPanicExitsWithTheCrashCode(t *testing.T) {
	cmd := program(t, "panic")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if got := exitCode(t, cmd.Run()); got != CodeCrash {
		t.Fatalf("exit %d, want %d; stderr %q", got, CodeCrash, stderr.String())
	}
	out := stderr.String()
	if !strings.Contains(out, "faultline: crashed: panic: boom in a goroutine") || !strings.Contains(out, "this is a bug in faultline") {
		t.Fatalf("stderr %q does not say that faultline crashed and why", out)
	}
	reports, _ := filepath.Glob(filepath.Join(cmdTmp(cmd), "faultline-crash-*.txt"))
	if len(reports) != 1 || !strings.Contains(out, reports[0]) {
		t.Fatalf("crash reports %v, stderr %q: want one, named on stderr", reports, out)
	}
	if b, _ := os.ReadFile(reports[0]); !strings.Contains(string(b), "goroutine") {
		t.Fatalf("the report holds no stack:\n%s", b)
	}
}

// A child killed by a signal (the crash fault's SIGKILL) kills the
// supervisor with the same signal, and the supervisor says so in one line
// first: which process, which signal, and what the state dir is left as.
func TestKilledChildEndsTheSupervisorTheSameWay(t *testing.T) {
	cmd := program(t, "sigkill")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ws := signaled(t, cmd.Run())
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("supervisor ended %v, want killed by SIGKILL", ws)
	}
	checkKilledLine(t, stderr.String(), "SIGKILL")
}

// A signal sent to the child alone that kills it (here SIGTERM, which the
// child does not handle) is said and passed on as SIGKILL is; the same
// signal sent to the supervisor, which passes it on, is not said: whoever
// sent it knows.
func TestSignalThatKillsTheChildIsSaidUnlessTheSupervisorGotIt(t *testing.T) {
	for _, to := range []string{"child", "supervisor"} {
		t.Run(to, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			cmd := program(t, "wait", "SUPERVISE_PIDFILE="+pidFile)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			child, _ := strconv.Atoi(waitFile(t, pidFile))
			pid := cmd.Process.Pid
			if to == "child" {
				pid = child
			}
			syscall.Kill(pid, syscall.SIGTERM)
			ws := signaled(t, cmd.Wait())
			if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
				t.Fatalf("supervisor ended %v, want killed by SIGTERM", ws)
			}
			if to == "child" {
				checkKilledLine(t, stderr.String(), "SIGTERM")
			} else if stderr.Len() != 0 {
				t.Fatalf("SIGTERM sent to the supervisor: stderr %q, want nothing", stderr.String())
			}
		})
	}
}

// signaled is the wait status in err, the end of a program.
func signaled(t *testing.T, err error) syscall.WaitStatus {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("run: %v, want an end by a signal", err)
	}
	return ee.Sys().(syscall.WaitStatus)
}

// checkKilledLine fails t unless stderr is the one line that says the
// child was killed by sig, and what that leaves.
func checkKilledLine(t *testing.T, stderr, sig string) {
	t.Helper()
	line := strings.TrimSuffix(stderr, "\n")
	if strings.Contains(line, "\n") || !strings.HasPrefix(line, "faultline: the faultline process (pid ") ||
		!strings.Contains(line, ") was killed by "+sig+"; the state dir is as a crash leaves it") || !strings.Contains(line, "the next `faultline run --resume`, or the terminal UI, goes on from its last completed checkpoint") {
		t.Fatalf("stderr %q; want one line saying the faultline process was killed by %s and what the state dir is left as", stderr, sig)
	}
}

// A SIGTERM sent to the supervisor alone reaches the child once.
func TestSignalToTheSupervisorReachesTheChildOnce(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := program(t, "count", "SUPERVISE_PIDFILE="+pidFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, pidFile)
	cmd.Process.Signal(syscall.SIGTERM)
	if got := exitCode(t, cmd.Wait()); got != 11 {
		t.Fatalf("exit %d, want 11 (one SIGTERM)", got)
	}
}

// When the supervisor is killed, the child dies with it at once, as one
// process would.
func TestChildDiesWithTheSupervisor(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := program(t, "count", "SUPERVISE_PIDFILE="+pidFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(waitFile(t, pidFile))
	if Dying(child) {
		t.Fatalf("Dying(%d) while its supervisor runs", child)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !Dying(child) {
		t.Fatalf("Dying(%d) = false once its supervisor is gone", child)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(child) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d still alive 5s after its supervisor was killed", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Dying says no of a process that is not a supervised child.
func TestDyingIsOnlyAnOrphanedChild(t *testing.T) {
	if Dying(os.Getpid()) {
		t.Fatal("Dying(this test) = true")
	}
}

// alive reports whether pid runs; a zombie that nobody reaps yet (the
// child is handed to init) does not.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err)
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not written in 10s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
