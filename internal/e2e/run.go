package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// KillWhen runs faultline until it printed a line that until accepts,
// then kills it (SIGKILL) as a crash would. It reports whether one came.
func KillWhen(t *testing.T, until func(line map[string]any) bool, args ...string) bool {
	t.Helper()
	return KillWhenWith(t, nil, until, args...)
}

// KillWhenWith is KillWhen with env (KEY=value) added to the program's
// environment.
func KillWhenWith(t *testing.T, env []string, until func(line map[string]any) bool, args ...string) bool {
	t.Helper()
	cmd := Command(t, args...)
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

// StartRun starts faultline with args; it returns the command, its stderr
// (to read once the command has exited) and the JSON objects it prints on
// stdout.
func StartRun(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, <-chan map[string]any) {
	t.Helper()
	return StartRunWith(t, nil, args...)
}

// StartRunWith is StartRun with env (KEY=value) added to the program's
// environment.
func StartRunWith(t *testing.T, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, <-chan map[string]any) {
	t.Helper()
	cmd := Command(t, args...)
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
	return cmd, stderr, JSONLines(out)
}

// ReportOf reads lines to their end and returns the report among them
// (nil when the run printed none).
func ReportOf(lines <-chan map[string]any) map[string]any {
	var report map[string]any
	for m := range lines {
		if r, ok := m["report"].(map[string]any); ok {
			report = r
		}
	}
	return report
}

// JSONLines sends each line of r that is a JSON object, until r ends.
func JSONLines(r io.Reader) <-chan map[string]any {
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

// WaitEvents reads lines until n events named name have come, or fails.
func WaitEvents(t *testing.T, lines <-chan map[string]any, name string, n int) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for seen := 0; seen < n; {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatalf("the run ended after %d %s events, before %d", seen, name, n)
			}
			if m["event"] == name {
				seen++
			}
		case <-deadline:
			t.Fatalf("waited two minutes for %d %s events", n, name)
		}
	}
}
