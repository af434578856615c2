package tui

import (
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/internal/fixture"
)

// lineStarting is the screen line that starts with prefix (after spaces).
func lineStarting(t *testing.T, screen, prefix string) int {
	t.Helper()
	for y, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " "), prefix) {
			return y
		}
	}
	t.Fatalf("no line starts with %q:\n%s", prefix, screen)
	return -1
}

func click(x, y int) tea.MouseMsg {
	return tea.MouseMsg{X: x, Y: y, Button: tea.MouseButtonLeft, Action: tea.MouseActionPress}
}

// A click selects the subtask or the checkpoint under it and focuses its
// pane; the wheel scrolls the pane under it.
func TestMouseSelectsAndScrolls(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	screen := h.m.View()
	h.send(click(118, lineStarting(t, screen, "join ⋈")))
	if got := h.m.graph.Selected(); got != "join/1" || h.m.focus != paneGraph {
		t.Fatalf("a click at the end of join's row selected %q (focus %v), want join/1", got, h.m.focus)
	}
	h.send(click(3, lineStarting(t, screen, "12 completed")))
	if id := h.m.cps.SelectedID(); id != 12 || h.m.focus != paneCheckpoints {
		t.Fatalf("a click on checkpoint 12's row selected %d (focus %v)", id, h.m.focus)
	}
	var evs []view.Stamped
	for i := range 30 {
		evs = append(evs, view.Stamped{At: time.Duration(i) * time.Second,
			Event: fixture.Event(t, "mode_changed", map[string]any{"mode": "m" + strconv.Itoa(i)})})
	}
	h.events(evs)
	screen = h.m.View()
	events := lineStarting(t, screen, "── events") + 2
	h.send(tea.MouseMsg{X: 10, Y: events, Button: tea.MouseButtonWheelUp, Action: tea.MouseActionPress})
	if h.m.focus != paneEvents || h.m.log.Back() != wheelLines {
		t.Fatalf("the wheel over the events: focus %v, scrolled %d, want %d", h.m.focus, h.m.log.Back(), wheelLines)
	}
	// Over the header or the help line, nothing happens.
	h.send(click(10, 0))
	if h.m.focus != paneEvents {
		t.Fatalf("a click on the header moved the focus to %v", h.m.focus)
	}
}
