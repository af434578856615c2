package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ShellEnv is the race detector's environment of Command as a shell
// command's prefix ("K='v' "), for the program started in a shell.
func ShellEnv(t *testing.T) string {
	NeedProgram(t)
	env := ""
	for _, kv := range raceEnv(t) {
		k, v, _ := strings.Cut(kv, "=")
		env += k + "='" + v + "' "
	}
	return env
}

// Session drives the real binary's terminal UI in a tmux session of its
// own server, as a user at a terminal would.
type Session struct {
	t      *testing.T
	socket string
}

// StartTmux starts command in a width×height tmux session of a server of
// its own, killed when the test ends.
func StartTmux(t *testing.T, width, height int, command string) *Session {
	t.Helper()
	NeedProgram(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed: `make deps` (or .ci/run) installs it from Debian's packages")
	}
	s := &Session{t: t, socket: fmt.Sprintf("faultline-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	s.Tmux("new-session", "-d", "-s", "ui", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), command)
	t.Cleanup(func() { exec.Command("tmux", "-L", s.socket, "kill-server").Run() })
	return s
}

// Socket is the name of the session's tmux server (tmux -L).
func (s *Session) Socket() string { return s.socket }

// Tmux runs a tmux command on the session's server and returns what it
// printed.
func (s *Session) Tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Screen is what the terminal shows.
func (s *Session) Screen() string { return s.Tmux("capture-pane", "-p", "-t", "ui") }

// Keys presses keys, in tmux's names (send-keys).
func (s *Session) Keys(keys ...string) {
	s.Tmux(append([]string{"send-keys", "-t", "ui"}, keys...)...)
}

// WaitFor polls the screen until match finds something in it.
func (s *Session) WaitFor(what string, timeout time.Duration, match func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		sc := s.Screen()
		if match(sc) {
			return sc
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("waited %s for %s; the screen shows:\n%s", timeout, what, sc)
		}
		if strings.Contains(sc, "faultline exited") && !strings.Contains(what, "summary") {
			s.t.Fatalf("faultline exited while waiting for %s:\n%s", what, sc)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Inject injects a fault into the selected subtask with the keys a user
// presses: x, the menu's pick, y once asked about fault into task.
func (s *Session) Inject(pick, fault, task string) {
	s.t.Helper()
	s.Keys("x")
	s.WaitFor("the fault menu", 5*time.Second, Contains("inject a fault"))
	s.Keys(pick)
	s.WaitFor("the confirmation", 5*time.Second, Contains("inject "+fault+" into "+task+"?"))
	s.Keys("y")
}

// Contains is a match for WaitFor: the screen holds sub.
func Contains(sub string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, sub) }
}

// HeaderStatus is the job status word in the header line.
func HeaderStatus(screen string) string {
	first, _, _ := strings.Cut(screen, "\n")
	for _, w := range []string{"RESTARTING", "RUNNING", "FAILED", "FAILING", "FINISHED", "CANCELED", "CREATED"} {
		if strings.Contains(first, " "+w) {
			return w
		}
	}
	return ""
}

// StartDemo starts the real binary's UI at 120×40 on a fresh state dir, at
// the UI's own input rate, and waits for a completed checkpoint.
func StartDemo(t *testing.T, flags ...string) *Session {
	dir := t.TempDir()
	env := ShellEnv(t)
	cmd := fmt.Sprintf("%s%s run --state-dir %s --listen 0 %s 2>%s; echo faultline exited $?; sleep 600",
		env, binary, dir, strings.Join(flags, " "), filepath.Join(dir, "stderr"))
	s := StartTmux(t, 120, 40, cmd)
	completed := regexp.MustCompile(`checkpoint \d+ completed in`)
	s.WaitFor("the job graph with a completed checkpoint", 60*time.Second, func(sc string) bool {
		return HeaderStatus(sc) == "RUNNING" && strings.Contains(sc, "join ⋈") && completed.MatchString(sc)
	})
	return s
}

// Atoi is the number a screen shows, thousands separators and all (0 when
// s is none).
func Atoi(s string) int { n, _ := strconv.Atoi(strings.ReplaceAll(s, ",", "")); return n }
