package tui

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// A terminal UI session with a panic and a restart, frozen and quit, then
// its events file played by faultline replay at four times the speed: at
// the end of the replay the checkpoints pane, the restarts pane and the
// verify line read as the session's last screen did.
func TestReplayShowsWhatTheSessionShowed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := e2e.ShellEnv(t)
	cmd := fmt.Sprintf("%s%s run --state-dir %s --listen 0 --checkpoint-interval 500ms --restart-delay 500ms --inject after=3s,task=join/1,fault=panic 2>%s; echo faultline exited $?; sleep 600",
		env, e2e.Binary(t), dir, filepath.Join(dir, "stderr"))
	s := e2e.StartTmux(t, 160, 45, cmd)
	asOf := regexp.MustCompile(`verify +committed [\d,]+ +dup 0 +lost 0 ✓ +as of #(\d+)`)
	s.WaitFor("RUNNING again after the panic, the output verified past the restore", 90*time.Second, func(sc string) bool {
		m := asOf.FindStringSubmatch(sc)
		n := 0
		if m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		return e2e.HeaderStatus(sc) == "RUNNING" && strings.Contains(sc, "restored from checkpoint") && n > 3
	})
	// Frozen, nothing changes: the record catches up with the screen (the
	// verify line is recorded once a second).
	s.Keys("Space")
	s.WaitFor("the world frozen", 10*time.Second, e2e.Contains("the world stands still"))
	time.Sleep(2500 * time.Millisecond)
	live := s.Screen()
	s.Keys("q")
	s.WaitFor("faultline to exit", 60*time.Second, e2e.Contains("faultline exited 0"))

	r := e2e.StartTmux(t, 160, 45, fmt.Sprintf("%s%s replay --speed 4 %s; echo replay exited $?; sleep 600",
		env, e2e.Binary(t), filepath.Join(dir, "events.jsonl")))
	replayed := r.WaitFor("the end of the recorded session", 90*time.Second, e2e.Contains("end of the recorded session: job CANCELED"))
	for _, part := range []struct {
		name string
		of   func(string) []string
	}{{"the checkpoints pane", checkpointRows}, {"the restarts pane", restartLines}, {"the verify line", verifyLine}} {
		if got, want := part.of(replayed), part.of(live); !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("%s of the replay:\n%s\nof the session:\n%s", part.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	r.Keys("q")
	r.WaitFor("replay to exit", 10*time.Second, e2e.Contains("replay exited 0"))
}

// paneLines are the lines between the checkpoints pane's title and the
// events pane's.
func paneLines(screen string) []string {
	lines := strings.Split(screen, "\n")
	var out []string
	in := false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "── checkpoints"):
			in = true
			out = append(out, l)
		case strings.HasPrefix(l, "── events"):
			return out
		case in:
			out = append(out, l)
		}
	}
	return out
}

// checkpointRows are the checkpoints pane: its title and rows.
func checkpointRows(screen string) []string {
	var out []string
	for _, l := range paneLines(screen) {
		left, _, _ := strings.Cut(l, "│")
		if left, _, ok := strings.Cut(left, "┬"); ok {
			out = append(out, strings.TrimSpace(left))
			continue
		}
		out = append(out, strings.TrimSpace(left))
	}
	return out
}

// restartLines are the restarts pane's lines, but the job's status (the
// session's screen is frozen RUNNING, the replay's ends CANCELED).
func restartLines(screen string) []string {
	var out []string
	for _, l := range paneLines(screen) {
		_, right, ok := strings.Cut(l, "│")
		if !ok {
			_, right, ok = strings.Cut(l, "┬")
		}
		right = strings.TrimSpace(right)
		if ok && right != "" && !strings.HasPrefix(right, "job ") {
			out = append(out, right)
		}
	}
	return out
}

// verifyLine is the verify line up to its checkpoint.
func verifyLine(screen string) []string {
	m := regexp.MustCompile(`verify +committed [\d,]+ +dup \d+ +lost \d+ \S* *as of #\d+`).FindString(screen)
	if m == "" {
		return nil
	}
	return []string{m}
}
