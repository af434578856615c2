package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// The real binary in tmux: wait for the graph, select join/1, inject a
// panic with the keys a user would press, and read from the screen that
// the job went RESTARTING and back to RUNNING, restored from a checkpoint.
func TestTUIInjectPanicAndRecover(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The shell around it stays, so that what faultline printed last can be
	// read after it exits.
	env := e2e.ShellEnv(t)
	cmd := fmt.Sprintf("%s%s run --state-dir %s --listen 0 --checkpoint-interval 500ms --restart-delay 1s 2>%s; echo faultline exited $?; sleep 600",
		env, e2e.Binary(t), dir, filepath.Join(dir, "stderr"))
	s := e2e.StartTmux(t, 120, 40, cmd)
	completed := regexp.MustCompile(`checkpoint \d+ completed in`)
	s.WaitFor("the job graph with a completed checkpoint", 60*time.Second, func(sc string) bool {
		return e2e.HeaderStatus(sc) == "RUNNING" && strings.Contains(sc, "join ⋈") && completed.MatchString(sc)
	})
	// The selection starts on the first subtask with several inputs,
	// join/0; one step right is join/1.
	s.Keys("Right")
	s.WaitFor("join/1 selected", 5*time.Second, e2e.Contains("▸join/1"))
	s.Inject("1", "panic", "join/1")
	s.WaitFor("RESTARTING", 15*time.Second, func(sc string) bool { return e2e.HeaderStatus(sc) == "RESTARTING" })
	restored := regexp.MustCompile(`restored from checkpoint (\d+)`)
	sc := s.WaitFor("RUNNING again, restored from a checkpoint", 30*time.Second, func(sc string) bool {
		return e2e.HeaderStatus(sc) == "RUNNING" && restored.MatchString(sc)
	})
	id := restored.FindStringSubmatch(sc)[1]
	if !strings.Contains(sc, "join/1") || id == "0" {
		t.Fatalf("restored from checkpoint %s; screen:\n%s", id, sc)
	}
	// q quits cleanly: the job is cancelled and the summary printed.
	s.Keys("q")
	s.WaitFor("the summary after quitting", 60*time.Second, e2e.Contains("state dir "+dir))
	// It goes on closing the broker's log and the store after the summary;
	// the state dir is removed only once it has exited.
	s.WaitFor("the process to exit after the summary", 60*time.Second, e2e.Contains("faultline exited 0"))
	if b, _ := os.ReadFile(filepath.Join(dir, "stderr")); len(b) > 0 {
		t.Errorf("the UI wrote to stderr: %s", b)
	}
	// The session's record in the state dir holds its events as the
	// headless mode prints them, the panic and the restore among them,
	// and the report last.
	record, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(record)), "\n")
	if err != nil || !strings.HasPrefix(lines[len(lines)-1], `{"report":`) ||
		!strings.Contains(string(record), `"event":"task_failed"`) || !strings.Contains(string(record), `"event":"restored","at_ms"`) {
		t.Errorf("the session's record (%v):\n%s", err, record)
	}
}

// alive reports whether process pid is still running (a zombie is not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// A terminal that goes away stops the run cleanly, as q does: by the
// hang-up signal, and, where the process ignores it (started under nohup)
// or is not sent one, because its terminal stopped being one. Before, the
// job ran on with nobody to see it, holding the state dir and the port.
// SIGTERM stops it cleanly too.
func TestTUIStopsWhenTheTerminalGoesAway(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, prefix string
		term         bool // SIGTERM the process instead of closing its terminal
		logged       bool // the log says the terminal went away
	}{
		{"hang-up signal", "", false, false},
		{"hang-up ignored", `trap "" HUP; `, false, true},
		{"SIGTERM", "", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			env := e2e.ShellEnv(t)
			s := e2e.StartTmux(t, 120, 40, fmt.Sprintf("%sexec env %s%s run --state-dir %s --listen 0 --checkpoint-interval 500ms", c.prefix, env, e2e.Binary(t), dir))
			s.WaitFor("the job running", 60*time.Second, func(sc string) bool { return e2e.HeaderStatus(sc) == "RUNNING" })
			var pid int
			fmt.Sscan(s.Tmux("list-panes", "-t", "ui", "-F", "#{pane_pid}"), &pid)
			if !alive(pid) {
				t.Fatalf("pane process %d is not running", pid)
			}
			if c.term {
				syscall.Kill(pid, syscall.SIGTERM)
			} else {
				exec.Command("tmux", "-L", s.Socket(), "kill-server").Run()
			}
			deadline := time.Now().Add(60 * time.Second)
			for alive(pid) {
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Fatal("faultline still runs 60 s later")
				}
				time.Sleep(100 * time.Millisecond)
			}
			log, _ := os.ReadFile(filepath.Join(dir, "faultline.log"))
			if got := strings.Contains(string(log), "the terminal went away"); got != c.logged {
				t.Errorf("the log says the terminal went away: %v, want %v", got, c.logged)
			}
			// A clean stop: the job was cancelled and its report written
			// at the end of the session's record.
			record, _ := os.ReadFile(filepath.Join(dir, "events.jsonl"))
			if !strings.Contains(string(record), `{"report":{"job":"orders","status":"CANCELED"`) {
				t.Errorf("no report of a cancelled job in the session's record: the process did not stop cleanly")
			}
		})
	}
}

// freezeAndGoOn runs the terminal UI on its own state dir with extra flags,
// freezes the world with space once a checkpoint has completed, keeps it
// frozen for freeze while checking the screen with during, lets it go on,
// waits for three more checkpoints, quits with q and returns the summary
// and the report the log holds.
func freezeAndGoOn(t *testing.T, freeze time.Duration, during func(screen string) error, flags ...string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	env := e2e.ShellEnv(t)
	cmd := fmt.Sprintf("%s%s run --state-dir %s --listen 0 --rate 2000 --checkpoint-interval 500ms %s 2>%s; echo faultline exited $?; sleep 600",
		env, e2e.Binary(t), dir, strings.Join(flags, " "), filepath.Join(dir, "stderr"))
	s := e2e.StartTmux(t, 120, 40, cmd)
	completed := regexp.MustCompile(`checkpoint (\d+) completed in`)
	s.WaitFor("a completed checkpoint", 60*time.Second, func(sc string) bool {
		return e2e.HeaderStatus(sc) == "RUNNING" && completed.MatchString(sc)
	})
	s.Keys("Space")
	s.WaitFor("the world frozen", 10*time.Second, e2e.Contains("FROZEN"))
	end := time.Now().Add(freeze)
	for time.Now().Before(end) {
		sc := s.Screen()
		if e2e.HeaderStatus(sc) != "RUNNING" || !strings.Contains(sc, "FROZEN") {
			t.Fatalf("%s into the freeze the screen shows:\n%s", freeze-time.Until(end), sc)
		}
		if during != nil {
			if err := during(sc); err != nil {
				t.Fatalf("%s into the freeze: %v; the screen shows:\n%s", freeze-time.Until(end), err, sc)
			}
		}
		time.Sleep(time.Second)
	}
	s.Keys("Space")
	s.WaitFor("the world moving", 10*time.Second, func(sc string) bool { return !strings.Contains(sc, "FROZEN") })
	last := func(sc string) int {
		n := 0
		for _, m := range completed.FindAllStringSubmatch(sc, -1) {
			var id int
			fmt.Sscan(m[1], &id)
			n = max(n, id)
		}
		return n
	}
	before := last(s.Screen())
	s.WaitFor("three more checkpoints", 60*time.Second, func(sc string) bool { return last(sc) >= before+3 })
	s.Keys("q")
	summary := s.WaitFor("the summary after quitting", 60*time.Second, e2e.Contains("state dir "+dir))
	s.WaitFor("the process to exit", 60*time.Second, e2e.Contains("faultline exited"))
	record, _ := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	_, report, _ := strings.Cut(string(record), `{"report":`)
	return summary, report
}

// A freeze shorter than the time a frozen job can wait fails nothing: the
// header counts the freeze and, past half of that time, warns when the job
// will fail over and why (the sink's transaction, whose timeout runs on the
// broker's clock); the job goes on when space is pressed again, with no
// failure, no restart and an exact output. A checkpoint timeout shorter
// than the freeze expires nothing: it runs on the job's clock, which
// stands still while the world is frozen.
func TestTUIFreezeWarnsAndGoesOnWithoutFailure(t *testing.T) {
	t.Parallel()
	warned := false
	// 9.5 s of 14: the header warns from 7 s on, and the job has 4 s to
	// catch up on what the freeze held back before its transaction
	// expires.
	summary, report := freezeAndGoOn(t, 9500*time.Millisecond, func(sc string) error {
		if strings.Contains(sc, "FAILS OVER AT 14s") {
			warned = true
		}
		return nil
	}, "--sink-transaction-timeout", "14s", "--checkpoint-timeout", "4s")
	if !warned {
		t.Errorf("9.5 s into a freeze with --sink-transaction-timeout 14s the header never warned")
	}
	checkFreezeResult(t, summary, report)
}

func checkFreezeResult(t *testing.T, summary, report string) {
	t.Helper()
	if !strings.Contains(summary, "restarts 0") || !strings.Contains(summary, "0 duplicates, 0 lost") {
		t.Errorf("summary after the freeze:\n%s", summary)
	}
	if !strings.Contains(report, `"failures":[]`) || !strings.Contains(report, `"duplicates":0,"lost":0`) {
		t.Errorf("report after the freeze: %.600s", report)
	}
}

// TestSoakTUIFreezeTwoMinutes is the trainer who stops the world for two
// minutes to explain a screen, at the default timeouts: nothing fails.
// It runs with make soak only (two minutes of a frozen screen).
func TestSoakTUIFreezeTwoMinutes(t *testing.T) {
	t.Parallel()
	if !e2e.Soak() {
		t.Skip("make soak runs it")
	}
	summary, report := freezeAndGoOn(t, 2*time.Minute, nil)
	checkFreezeResult(t, summary, report)
	t.Logf("after a two-minute freeze: %s", strings.TrimSpace(summary[strings.Index(summary, "faultline: job"):]))
}
