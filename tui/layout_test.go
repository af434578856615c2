package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
	"github.com/faultline-dev/faultline/tui/internal/fixture"
)

func TestViewFitsTheTerminal(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {100, 30}, {120, 40}, {200, 60}} {
		for name, s := range map[string]Snapshot{"running": fixture.Running(), "aligning": fixture.Aligning(), "restarting": fixture.Restarting()} {
			for _, keys := range [][]string{nil, {"x"}, {"?"}, {"tab", "enter"}} {
				h := newHarness(t, s, size[0], size[1])
				h.events(fixture.RestartEvents())
				h.press(keys...)
				lines := strings.Split(h.m.View(), "\n")
				if len(lines) != size[1] {
					t.Fatalf("%s %v at %dx%d: %d lines", name, keys, size[0], size[1], len(lines))
				}
				for i, l := range lines {
					if w := common.Width(l); w != size[0] {
						t.Fatalf("%s %v at %dx%d: line %d is %d wide: %q", name, keys, size[0], size[1], i, w, l)
					}
				}
			}
		}
	}
}

func TestViewFitsTheTerminalInColour(t *testing.T) {
	lipgloss.SetColorProfile(termenv.TrueColor)
	defer lipgloss.SetColorProfile(termenv.Ascii)
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, keys := range [][]string{nil, {"x"}, {"?"}, {"tab", "enter"}} {
			h := newHarness(t, fixture.Aligning(), size[0], size[1])
			h.events(fixture.RestartEvents())
			h.press(keys...)
			v := h.m.View()
			if !strings.Contains(v, "\x1b[") {
				t.Fatal("no colour in the view")
			}
			lines := strings.Split(v, "\n")
			if len(lines) != size[1] {
				t.Fatalf("%v at %dx%d: %d lines", keys, size[0], size[1], len(lines))
			}
			for i, l := range lines {
				if w := common.Width(l); w != size[0] {
					t.Fatalf("%v at %dx%d: line %d is %d wide: %q", keys, size[0], size[1], i, w, l)
				}
			}
		}
	}
}

func TestPipelineJobShowsEveryStripAt80x24(t *testing.T) {
	h := newHarness(t, fixture.Pipeline(), 80, 24)
	v := h.m.View()
	for _, want := range []string{"source", "enrich", "sink", "▌7", "p3:"} {
		if !strings.Contains(v, want) {
			t.Fatalf("view lacks %q:\n%s", want, v)
		}
	}
}

// wideSnapshot is a pipeline of parallelism n with ten operators.
func wideSnapshot(n int) Snapshot {
	s := fixture.Pipeline()
	s.Operators = nil
	s.Tasks = map[string]Task{}
	prev := ""
	for o := range 10 {
		op := Operator{Name: "operator-with-a-long-name-" + common.Itoa(int64(o)), Type: "enrich", Parallelism: n}
		if prev != "" {
			op.Inputs = []Edge{{From: prev, Kind: "hash", Key: "k"}}
		}
		s.Operators = append(s.Operators, op)
		for i := range n {
			t := Task{Name: common.TaskName(op.Name, i), Operator: op.Name, Index: i, Status: "RUNNING", RateIn: 123456}
			if prev != "" {
				for j := range n {
					t.Inputs = append(t.Inputs, fixture.Queue(common.TaskName(prev, j), 0, 100000, fixture.Barrier(99999, 5000)))
				}
			} else {
				t.Offsets = map[int32]int64{int32(i): 123456789}
			}
			s.Tasks[t.Name] = t
		}
		prev = op.Name
	}
	return s
}

func TestBigJobsDoNotBreakTheLayout(t *testing.T) {
	for _, n := range []int{1, 8, 40} {
		for _, size := range [][2]int{{80, 24}, {120, 40}} {
			h := newHarness(t, wideSnapshot(n), size[0], size[1])
			h.press("j", "j", "j", "j", "j", "j", "j", "j", "l")
			for _, keys := range [][]string{nil, {"x"}, {"tab", "enter"}} {
				h.press(keys...)
				lines := strings.Split(h.m.View(), "\n")
				if len(lines) != size[1] {
					t.Fatalf("parallelism %d at %v: %d lines", n, size, len(lines))
				}
				for i, l := range lines {
					if w := common.Width(l); w != size[0] {
						t.Fatalf("parallelism %d at %v %v: line %d is %d wide: %q", n, size, keys, i, w, l)
					}
				}
				h.press("esc")
			}
		}
	}
}

func TestRestartsPaneSaysWhatWasLostAndWhyItGaveUp(t *testing.T) {
	s := fixture.Restarting()
	s.Job.Status = "FAILED"
	s.Restart.NextRestartAt = time.Time{}
	s.Restart.Failover = "individual"
	s.Restart.LastRestarted = []string{"join/1"}
	s.Restart.LostRecords = 37
	s.Restart.GaveUp = "fixed-delay: all 3 restart attempts used; failure 4 is final"
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		h := newHarness(t, s, size[0], size[1])
		v := h.m.View()
		for _, want := range []string{"job FAILED · gave up", "individual failover lost 37", "gave up: fixed-delay"} {
			if want == "gave up: fixed-delay" && size[0] == 80 {
				continue // no room at 80×24: the status line says it gave up
			}
			if !strings.Contains(v, want) {
				t.Errorf("%v: view lacks %q:\n%s", size, want, v)
			}
		}
	}
	s.Restart.GaveUp, s.Job.Status = "", "RUNNING"
	s.Restart.Strategy, s.Restart.Description = "failure-rate", "failure-rate (3 failures in 1m, delay 1s)"
	s.Restart.Status = view.RestartStatus{FailuresInWindow: 2, MaxFailuresInWindow: 3, Window: time.Minute}
	h := newHarness(t, s, 120, 40)
	if v := h.m.View(); !strings.Contains(v, "failures 2/3 in 1m00s") || !strings.Contains(v, "failover individual: restarted join/1") {
		t.Errorf("failure-rate:\n%s", v)
	}
}
