package tui

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// The alignment tour from start to end with the keys a learner presses,
// at the largest screen the tours are written for and the smallest the UI
// takes: the narration of each moment, the join's input strips marked
// while they align, and the check's result on screen.
//
// It runs beside the other tours' tests, and both sizes at once: a tour
// mostly waits for the job.
func TestTUITourAlignmentWithKeys(t *testing.T) {
	e2e.NeedProgram(t)
	t.Parallel()
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cmd := fmt.Sprintf("%s%s tour alignment --state-dir %s 2>%s; echo faultline exited $?; sleep 600",
				e2e.ShellEnv(t), e2e.Binary(t), filepath.Join(dir, "state"), filepath.Join(dir, "stderr"))
			s := e2e.StartTmux(t, size[0], size[1], cmd)
			s.WaitFor("the tour's panel and first narration", 60*time.Second, func(sc string) bool {
				return strings.Contains(sc, "tour · Barrier alignment · step 1/19") && strings.Contains(sc, "The join reads four")
			})
			s.Keys("n")
			s.WaitFor("the tour asking for the slow fault", 30*time.Second, e2e.Contains("press select parse-orders/0"))
			// The selection starts on join/0; parse-payments and
			// parse-orders are the rows above it.
			s.Keys("Up", "Up")
			s.WaitFor("parse-orders/0 selected", 5*time.Second, e2e.Contains("▸parse-orders/0"))
			s.Inject("3", "slow", "parse-orders/0")
			sc := s.WaitFor("the alignment narration, frozen", 60*time.Second, func(sc string) bool {
				return strings.Contains(sc, "step 10/19") && strings.Contains(sc, "BLOCKED") && strings.Contains(sc, "FROZEN")
			})
			// The highlight marks join/0's input strips.
			if !strings.Contains(sc, "»◂") && !strings.Contains(sc, "»▌") {
				t.Fatalf("join/0's inputs are not marked:\n%s", sc)
			}
			s.Keys("n")
			s.WaitFor("the narration after the steps", 60*time.Second, e2e.Contains("step 12/19"))
			s.Keys("n")
			sc = s.WaitFor("the end of the tour", 90*time.Second, e2e.Contains("tour complete"))
			if !strings.Contains(sc, "tour complete: every check held ✓") || !strings.Contains(sc, "✓ nothing lost, nothing duplicated") || !strings.Contains(sc, "»verify") {
				t.Fatalf("the tour's end:\n%s", sc)
			}
			s.Keys("q")
			s.WaitFor("faultline to exit", 60*time.Second, e2e.Contains("faultline exited 0"))
		})
	}
}

// A tour of two runs (a savepoint taken as the job stops, then a job
// started from it with three join subtasks) stays on one screen from its
// first narration to its end: no capture in between shows the shell, and
// each run's summary is printed once the screen has closed.
func TestTUITourRunsStayOnOneScreen(t *testing.T) {
	e2e.NeedProgram(t)
	t.Parallel()
	dir := t.TempDir()
	cmd := fmt.Sprintf("%s%s tour savepoints --autoplay --state-dir %s 2>%s; echo faultline exited $?; sleep 600",
		e2e.ShellEnv(t), e2e.Binary(t), filepath.Join(dir, "state"), filepath.Join(dir, "stderr"))
	s := e2e.StartTmux(t, 80, 24, cmd)
	const panel = "tour · Savepoints and rescaling"
	s.WaitFor("the tour's panel", 60*time.Second, e2e.Contains(panel))
	var left string // a capture without the tour's screen, before the end
	steps := map[string]bool{}
	s.WaitFor("the end of the tour, on the screen it started on", 3*time.Minute, func(sc string) bool {
		if !strings.Contains(sc, panel) && left == "" {
			left = sc
		}
		if i := strings.Index(sc, "· step "); i >= 0 {
			steps[strings.Fields(sc[i+len("· step "):])[0]] = true
		}
		return strings.Contains(sc, "tour complete") || strings.Contains(sc, "faultline exited")
	})
	if left != "" {
		t.Fatalf("the tour left its screen before its end:\n%s", left)
	}
	if !steps["11/11"] {
		t.Fatalf("the tour never reached its last step, which the second run shows (steps seen: %v)", steps)
	}
	sc := s.WaitFor("the runs' summaries after the screen closed", 60*time.Second, e2e.Contains("faultline exited"))
	if !strings.Contains(sc, "faultline exited 0") || strings.Count(sc, "verify: committed") != 2 {
		t.Fatalf("after the tour, want exit 0 and the two runs' summaries:\n%s", sc)
	}
}
