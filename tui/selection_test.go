package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faultline-dev/faultline/tui/internal/fixture"
)

func TestSelectionStartsAtTheFirstAligningCandidate(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	assertSelected(t, h, "join/0")
	if h.m.ctx.Selected != "join/0" {
		t.Fatalf("context selection %q", h.m.ctx.Selected)
	}
}

func TestSelectionMoves(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []string
		want string
	}{
		{"down keeps the index", []string{"down"}, "revenue/0"},
		{"j is down", []string{"j"}, "revenue/0"},
		{"up", []string{"up"}, "parse-payments/0"},
		{"k is up", []string{"k"}, "parse-payments/0"},
		{"right", []string{"right"}, "join/1"},
		{"l is right", []string{"l"}, "join/1"},
		{"left crosses to the operator before", []string{"left"}, "parse-payments/1"},
		{"h is left", []string{"h"}, "parse-payments/1"},
		{"right crosses to the next operator", []string{"l", "l"}, "revenue/0"},
		{"down clamps the index", []string{"l", "j", "j"}, "sink/0"},
		{"down stops at the last operator", []string{"j", "j", "j", "j"}, "sink/0"},
		{"right stops at the last subtask", []string{"j", "j", "l", "l"}, "sink/0"},
		{"up stops at the first operator", []string{"k", "k", "k", "k", "k", "k"}, "orders-source/0"},
		{"left stops at the first subtask", []string{"k", "k", "k", "k", "h", "h"}, "orders-source/0"},
		{"up keeps the index", []string{"l", "k"}, "parse-payments/1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fixture.Running(), 120, 40)
			h.press(tc.keys...)
			assertSelected(t, h, tc.want)
			assertCalls(t, h.ctrl)
		})
	}
}

func TestSelectionSurvivesSamples(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("l")
	h.send(SnapshotMsg{Snapshot: fixture.Aligning()})
	assertSelected(t, h, "join/1")
}

func TestArrowsMoveOnlyTheFocusedPane(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("tab", "down", "down")
	assertSelected(t, h, "join/0")
	if got := h.m.cps.SelectedID(); got != 12 {
		t.Fatalf("checkpoint row %d, want 12", got)
	}
	h.press("up", "up", "up")
	if got := h.m.cps.SelectedID(); got != 14 {
		t.Fatalf("checkpoint row %d, want 14 (clamped at the top)", got)
	}
}

func TestFaultMenuInjectsIntoTheSelectedSubtask(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("l", "x")
	if h.m.overlay != overlayMenu {
		t.Fatal("x did not open the fault menu")
	}
	if f, _ := h.m.menu.Choice(); f.Kind != "panic" {
		t.Fatalf("cursor on %q, want panic", f.Kind)
	}
	h.press("enter")
	if !h.m.menu.Confirming() {
		t.Fatal("enter did not ask for the confirmation")
	}
	if v := h.m.View(); !strings.Contains(v, "inject panic into join/1?") {
		t.Fatalf("no confirmation on screen:\n%s", v)
	}
	assertCalls(t, h.ctrl) // nothing before y
	h.press("y")
	assertCalls(t, h.ctrl, "Inject(panic,join/1)")
	if h.m.overlay != overlayNone {
		t.Fatal("the menu stayed open")
	}
	if got := h.m.status.Flash(); got != "injected panic into join/1" {
		t.Fatalf("flash %q", got)
	}
}

func TestFaultMenuPicksByNumber(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("x", "2", "y")
	assertCalls(t, h.ctrl, "Inject(error,join/0)")

	// A job-level fault acts on the job, whatever is selected.
	h.press("x", "5")
	if v := h.m.View(); !strings.Contains(v, "inject crash into the job?") {
		t.Fatalf("no job-level confirmation on screen:\n%s", v)
	}
	h.press("y")
	assertCalls(t, h.ctrl, "Inject(error,join/0)", "Inject(crash,)")
}

func TestFaultMenuCancel(t *testing.T) {
	for _, keys := range [][]string{
		{"x", "enter", "n"},
		{"x", "enter", "esc"},
		{"x", "esc"},
		{"x", "q"},
		{"x", "enter", "q"},
	} {
		t.Run(strings.Join(keys, " "), func(t *testing.T) {
			h := newHarness(t, fixture.Running(), 120, 40)
			h.press(keys...)
			assertCalls(t, h.ctrl)
			if h.m.overlay != overlayNone {
				t.Fatal("the menu stayed open")
			}
			if h.quit {
				t.Fatal("q in the menu quit the program")
			}
			// y after cancelling injects nothing either.
			h.press("y")
			assertCalls(t, h.ctrl)
		})
	}
}

func TestFaultMenuUnavailableEntryIsNotSelectable(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("x", "4") // broker-down: the broker is external
	if h.m.menu.Confirming() {
		t.Fatal("an unavailable fault was chosen")
	}
	if v := h.m.View(); !strings.Contains(v, "broker-down is not available: the broker is external") {
		t.Fatalf("no reason on screen:\n%s", v)
	}
	// The cursor skips it: down from slow (3) lands on crash (5).
	h.press("down", "down")
	if f, _ := h.m.menu.Choice(); f.Kind != "slow" {
		t.Fatalf("cursor on %q, want slow", f.Kind)
	}
	h.press("down")
	if f, _ := h.m.menu.Choice(); f.Kind != "crash" {
		t.Fatalf("cursor on %q, want crash (broker-down skipped)", f.Kind)
	}
	h.press("y") // not confirming yet: nothing happens
	assertCalls(t, h.ctrl)
}

func TestFaultMenuIsNotOnControlChords(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.send(tea.KeyMsg{Type: tea.KeyCtrlX})
	if h.m.overlay != overlayNone {
		t.Fatal("ctrl+x opened the fault menu")
	}
}

// "x1" in one read opens the fault menu and picks its first entry: the
// keys after the one that opens the menu wait for it.
func TestKeysAfterTheFaultKeyGoToTheMenu(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x1")})
	if v := h.m.View(); !strings.Contains(v, "inject panic into") {
		t.Fatalf("x1 in one read did not ask to inject a panic:\n%s", v)
	}
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")})
	assertCalls(t, h.ctrl, "Inject(panic,join/0)")
}
