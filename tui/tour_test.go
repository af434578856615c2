package tui

import (
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/tui/common"
	"github.com/faultline-dev/faultline/tui/components/tour"
	"github.com/faultline-dev/faultline/tui/internal/fixture"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// The guided tour's side of the UI: its keys reach the tour, its panel
// takes the events' place, and the screen still fits.

func touring() Snapshot { return fixture.Touring(fixture.Running(), fixture.TourStep()) }

func TestTourKeysReachTheTour(t *testing.T) {
	for _, tc := range []struct {
		name string
		send []tea.KeyMsg
		want []string
	}{
		{"one by one", []tea.KeyMsg{keyMsg("n"), keyMsg("b"), keyMsg("r")}, []string{"TourKey(n)", "TourKey(b)", "TourKey(r)"}},
		{"in one read", []tea.KeyMsg{{Type: tea.KeyRunes, Runes: []rune("nnbr")}},
			[]string{"TourKey(n)", "TourKey(n)", "TourKey(b)", "TourKey(r)"}},
		{"with other commands", []tea.KeyMsg{{Type: tea.KeyRunes, Runes: []rune("cnR")}},
			[]string{"TriggerCheckpoint", "TourKey(n)", "ResetRestarts"}},
		{"from the checkpoint detail", []tea.KeyMsg{keyMsg("tab"), keyMsg("enter"), keyMsg("n")}, []string{"TourKey(n)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, touring(), 80, 24)
			for _, k := range tc.send {
				h.send(k)
			}
			assertCalls(t, h.ctrl, tc.want...)
		})
	}
}

// Outside a tour n, b and r mean what they meant before: nothing.
func TestTourKeysOutsideATour(t *testing.T) {
	h := newHarness(t, fixture.Running(), 80, 24)
	before := h.m.View()
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("nbr")})
	assertCalls(t, h.ctrl)
	if h.m.View() != before || h.quit {
		t.Fatalf("n, b or r did something:\n%s", h.m.View())
	}
}

// The fault menu, its confirmation and the help take their keys first: n
// there is no tour's.
func TestTourKeysNotInMenusOrHelp(t *testing.T) {
	for _, keys := range [][]string{
		{"x", "enter", "n"}, // the confirmation: n is no
		{"x", "n", "b", "r", "esc"},
		{"?", "n", "b", "r", "esc"},
	} {
		t.Run(strings.Join(keys, " "), func(t *testing.T) {
			h := newHarness(t, touring(), 80, 24)
			h.press(keys...)
			assertCalls(t, h.ctrl)
			if h.m.overlay != overlayNone {
				t.Fatal("the overlay stayed open")
			}
			if keys[0] == "x" && len(keys) == 3 {
				if got := h.m.status.Flash(); got != "fault injection cancelled" {
					t.Fatalf("n did not cancel the injection: flash %q", got)
				}
			}
			h.press("n")
			assertCalls(t, h.ctrl, "TourKey(n)")
		})
	}
}

// At 80×24 the panel shows the whole narration (four lines here) and the
// status line, in place of the events and the short help (the check that
// held gives its line to the narration); nothing else loses more than the
// history's oldest row and the restarts' least urgent line.
func TestTourPanelAt80x24(t *testing.T) {
	h := newHarness(t, fixture.Touring(fixture.Running(), fixture.TourHeld()), 80, 24)
	h.events(fixture.RunEvents())
	lines := strings.Split(h.m.View(), "\n")
	at := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "── tour · Barriers and alignment · step 4/9 ─") {
			at = i
		}
	}
	if at < 0 || len(lines)-at != tour.MinHeight+1 {
		t.Fatalf("the panel is not the %d lines above the verify line:\n%s", tour.MinHeight, strings.Join(lines, "\n"))
	}
	for i, want := range []string{"Checkpoint 14's barriers", "channel that", "it too:", "none after it.", "pressing x then 1 (autoplay)", "verify  committed"} {
		if !strings.Contains(lines[at+1+i], want) {
			t.Errorf("line %d: %q lacks %q", at+1+i, lines[at+1+i], want)
		}
	}
	v := strings.Join(lines, "\n")
	for _, want := range []string{"sink ← rebal", "parse-payments/1", "14 pending", "13 completed", "attempts 0/3", "failover full", "n next · b back · r restart · q quit"} {
		if !strings.Contains(v, want) {
			t.Errorf("%q is gone:\n%s", want, v)
		}
	}
	if strings.Contains(v, "12:01:09.374  checkpoint 14 triggered") {
		t.Errorf("the events are drawn:\n%s", v)
	}
}

// The events are kept during a tour, and come back after it; tab skips
// them meanwhile.
func TestTourKeepsTheEvents(t *testing.T) {
	h := newHarness(t, touring(), 120, 40)
	h.press("tab", "tab")
	if h.m.focus != paneGraph {
		t.Fatalf("tab went to the events, not drawn: focus %d", h.m.focus)
	}
	h.press("tab")
	h.events(fixture.RunEvents())
	if v := h.m.View(); strings.Contains(v, "checkpoint 14 triggered") || !strings.Contains(v, "tour · Barriers") {
		t.Fatalf("the events show during the tour:\n%s", v)
	}
	h.send(SnapshotMsg{Snapshot: fixture.Running()}) // the tour ended
	if v := h.m.View(); !strings.Contains(v, "checkpoint 14 triggered") || strings.Contains(v, "tour ·") {
		t.Fatalf("the events did not come back:\n%s", v)
	}
	if h.m.focus != paneCheckpoints {
		t.Fatalf("focus %d", h.m.focus)
	}
	h.press("tab")
	if h.m.focus != paneEvents {
		t.Fatal("tab does not reach the events after the tour")
	}
}

// The screen fits the terminal in a tour, with every overlay, at every
// size; the panel never has fewer than its minimum.
func TestTourViewFitsTheTerminal(t *testing.T) {
	for _, profile := range []termenv.Profile{termenv.Ascii, termenv.TrueColor} {
		lipgloss.SetColorProfile(profile)
		for _, size := range [][2]int{{80, 24}, {90, 26}, {100, 30}, {120, 40}, {200, 60}} {
			for _, tr := range []*Tour{fixture.TourStep(), fixture.TourHeld(), fixture.TourFailed(), fixture.TourDone()} {
				for _, keys := range [][]string{nil, {"x"}, {"x", "enter"}, {"?"}, {"tab", "enter"}} {
					h := newHarness(t, fixture.Touring(fixture.Running(), tr), size[0], size[1])
					h.events(fixture.RestartEvents())
					h.press(keys...)
					lines := strings.Split(h.m.View(), "\n")
					if len(lines) != size[1] {
						t.Fatalf("%v at %dx%d: %d lines", keys, size[0], size[1], len(lines))
					}
					for i, l := range lines {
						if w := common.Width(l); w != size[0] {
							t.Fatalf("%v at %dx%d: line %d is %d wide: %q", keys, size[0], size[1], i, w, l)
						}
					}
					if s := h.m.sizes(); s.eventsH < tour.MinHeight {
						t.Fatalf("at %dx%d the panel has %d lines", size[0], size[1], s.eventsH)
					}
				}
			}
		}
	}
	lipgloss.SetColorProfile(termenv.Ascii)
}

// The help lists the tour's keys and marks while a tour runs, and only
// then.
func TestHelpHasATourSection(t *testing.T) {
	for _, tc := range []struct {
		snap Snapshot
		want bool
	}{{touring(), true}, {fixture.Running(), false}} {
		h := newHarness(t, tc.snap, 120, 40)
		h.press("?")
		var all []string
		for range 4 {
			all = append(all, h.m.View())
			h.press("pgdown")
		}
		v := strings.Join(all, "\n")
		for _, s := range []string{" tour ", "n next", "b back", "r restart", "reading a guided tour", "»1 »◂·· »14"} {
			if strings.Contains(v, s) != tc.want {
				t.Errorf("tour %v: %q shown: %v", tc.want, s, !tc.want)
			}
		}
	}
}
