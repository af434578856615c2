package tui

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// A headless run serving its REST API and taking faults from a control
// topic, watched from another terminal with faultline attach, as one
// watches a Flink job: the screen tells the checkpoints the run's events
// say completed, each within the poll and a frame of the run's event; c
// triggers a checkpoint in the run; x injects a panic into it through the
// control topic; C C cancels the run.
func TestAttachToAHeadlessRunShowsItsCheckpoints(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run, _, lines := e2e.StartRun(t, "run", "--headless", "--state-dir", dir, "--listen", "0", "--rate", "500",
		"--checkpoint-interval", "1s", "--rest-addr", "127.0.0.1:0", "--control-topic", "faultline-control")
	t.Cleanup(func() { run.Process.Kill() })
	addr, broker := "", ""
	api := regexp.MustCompile(`REST API \(Flink's\) at (http://\S+),`)
	for addr == "" || broker == "" {
		m, ok := <-lines
		if !ok {
			t.Fatal("the run ended before it served its REST API")
		}
		if text, _ := m["text"].(string); m["event"] == "notice" && api.MatchString(text) {
			addr = api.FindStringSubmatch(text)[1]
		}
		if m["event"] == "broker_started" {
			broker = fmt.Sprint(m["address"])
		}
	}
	// The run's completed checkpoints, and when each came.
	var mu sync.Mutex
	completed := map[int]time.Time{}
	status, failed := make(chan string, 16), make(chan string, 16)
	go func() {
		for m := range lines {
			switch m["event"] {
			case "task_failed":
				failed <- fmt.Sprint(m["task"], " ", m["fault"])
			case "checkpoint_completed":
				mu.Lock()
				completed[int(e2e.Num(m, "id"))] = time.Now()
				mu.Unlock()
			case "job_status":
				status <- fmt.Sprint(m["status"])
			}
		}
		close(status)
	}()
	s := e2e.StartTmux(t, 140, 45, fmt.Sprintf("%s%s attach %s --brokers %s; echo attach exited $?; sleep 600",
		e2e.ShellEnv(t), e2e.Binary(t), addr, broker))
	onScreen := regexp.MustCompile(`checkpoint (\d+) completed in`)
	seen := map[int]bool{}
	s.WaitFor("six checkpoints of the run on the attached screen", 90*time.Second, func(sc string) bool {
		for _, m := range onScreen.FindAllStringSubmatch(sc, -1) {
			id, _ := strconv.Atoi(m[1])
			mu.Lock()
			at, told := completed[id]
			mu.Unlock()
			if !told {
				t.Fatalf("the screen says checkpoint %d completed; the run's events do not:\n%s", id, sc)
			}
			if !seen[id] && time.Since(at) > 5*time.Second {
				t.Errorf("checkpoint %d is on the screen %s after the run's event (the poll is 1s)", id, time.Since(at).Round(time.Millisecond))
			}
			seen[id] = true
		}
		return len(seen) >= 6
	})
	s.Keys("c")
	s.WaitFor("the checkpoint triggered through the API", 10*time.Second, e2e.Contains("checkpoint triggered"))
	s.Inject("1", "panic", "join/0")
	select {
	case f := <-failed:
		if f != "join/0 panic" {
			t.Fatalf("the run's first failure after x on the attached screen: %s, want join/0 panic", f)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no task_failed in the run 30s after x on the attached screen")
	}
	s.WaitFor("the failure on the attached screen", 20*time.Second, e2e.Contains("join/0 failed"))
	s.Keys("m")
	s.WaitFor("the mode key said to have no REST counterpart", 10*time.Second, e2e.Contains("the checkpointing mode is the job's"))
	s.Keys("C")
	s.WaitFor("a second C asked for", 10*time.Second, e2e.Contains("press C again to cancel the job"))
	s.Keys("C")
	deadline := time.After(30 * time.Second)
	for st := ""; st != "CANCELED"; {
		select {
		case st = <-status:
		case <-deadline:
			t.Fatal("the run was not CANCELED 30s after C C on the attached screen")
		}
	}
	if err := run.Wait(); err != nil {
		t.Logf("the run exited: %v", err)
	}
}
