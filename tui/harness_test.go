package tui

import (
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/internal/fixture"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

func TestMain(m *testing.M) {
	// Goldens and string checks compare plain text: no colour, no bold.
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Exit(m.Run())
}

// harness drives the root model's Update directly, running the commands
// that key presses return (and the commands their results return) so that
// a test sees what the Controller received. Samples and event batches are
// handed in by the test; their follow-up commands (the next tick, the next
// wait for events) are not run.
type harness struct {
	t    *testing.T
	m    *model
	ctrl *fakeController
	quit bool
}

func newHarness(t *testing.T, s Snapshot, w, h int) *harness {
	t.Helper()
	ctrl := newFake(s)
	hn := &harness{t: t, m: newModel(ctrl, nil, modelConfig{period: time.Hour}), ctrl: ctrl}
	hn.send(tea.WindowSizeMsg{Width: w, Height: h})
	hn.send(SnapshotMsg{Snapshot: s})
	return hn
}

// send hands msg to Update and runs what comes back.
func (h *harness) send(msg tea.Msg) {
	h.t.Helper()
	_, cmd := h.m.Update(msg)
	switch msg.(type) {
	case SnapshotMsg, EventsMsg:
		return
	}
	h.run(cmd, 0)
}

func (h *harness) run(cmd tea.Cmd, depth int) {
	h.t.Helper()
	if cmd == nil {
		return
	}
	if depth > 10 {
		h.t.Fatal("commands keep coming")
	}
	msg := cmd()
	// tea.Sequence's message is a slice of commands of an unexported type:
	// run them in order.
	if v := reflect.ValueOf(msg); msg != nil && v.Kind() == reflect.Slice && v.Type().Elem() == reflect.TypeFor[tea.Cmd]() {
		for i := range v.Len() {
			h.run(v.Index(i).Interface().(tea.Cmd), depth+1)
		}
		return
	}
	switch msg := msg.(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			h.run(c, depth+1)
		}
	case tea.QuitMsg:
		h.quit = true
	default:
		_, next := h.m.Update(msg)
		h.run(next, depth+1)
	}
}

// press sends keys by name: "up", "enter", "esc", "tab", "shift+tab",
// "space", "ctrl+c", or runes.
func (h *harness) press(keys ...string) {
	h.t.Helper()
	for _, k := range keys {
		h.send(keyMsg(k))
	}
}

func keyMsg(k string) tea.KeyMsg {
	named := map[string]tea.KeyType{
		"up": tea.KeyUp, "down": tea.KeyDown, "left": tea.KeyLeft, "right": tea.KeyRight,
		"enter": tea.KeyEnter, "esc": tea.KeyEsc, "tab": tea.KeyTab, "shift+tab": tea.KeyShiftTab,
		"space": tea.KeySpace, "ctrl+c": tea.KeyCtrlC, "pgup": tea.KeyPgUp, "pgdown": tea.KeyPgDown,
		"home": tea.KeyHome,
	}
	if t, ok := named[k]; ok {
		if t == tea.KeySpace {
			return tea.KeyMsg{Type: t, Runes: []rune{' '}}
		}
		return tea.KeyMsg{Type: t}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// events sends a batch of events.
func (h *harness) events(ev []view.Stamped) { h.send(EventsMsg{Events: ev}) }

func TestPreview(t *testing.T) {
	if os.Getenv("PREVIEW") == "" {
		t.Skip("set PREVIEW=1 to print the screens")
	}
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, s := range []Snapshot{fixture.Running(), fixture.Aligning(), fixture.Restarting(), fixture.Slowed(),
			fixture.AtLeastOnce(), fixture.Damaged(), fixture.Stepping()} {
			h := newHarness(t, s, size[0], size[1])
			h.events(fixture.RestartEvents())
			t.Logf("\n%s", h.m.View())
		}
		for _, keys := range [][]string{{"x"}, {"x", "enter"}, {"?"}, {"tab", "enter"}, {"tab", "down", "enter"}} {
			h := newHarness(t, fixture.Running(), size[0], size[1])
			h.events(fixture.RunEvents())
			h.press(keys...)
			t.Logf("%v\n%s", keys, h.m.View())
		}
	}
	h := newHarness(t, fixture.Running(), 60, 20)
	t.Logf("\n%s", h.m.View())
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		h := newHarness(t, fixture.Pipeline(), size[0], size[1])
		h.press("j", "l")
		t.Logf("\n%s", h.m.View())
	}
}
