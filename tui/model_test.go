package tui

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/internal/fixture"
)

func assertCalls(t *testing.T, ctrl *fakeController, want ...string) {
	t.Helper()
	if got := ctrl.Calls(); !slices.Equal(got, want) {
		t.Fatalf("controller calls:\n got %q\nwant %q", got, want)
	}
}

func assertSelected(t *testing.T, h *harness, want string) {
	t.Helper()
	if got := h.m.graph.Selected(); got != want {
		t.Fatalf("selected %q, want %q", got, want)
	}
}

func TestTabCyclesFocus(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	for _, want := range []pane{paneCheckpoints, paneEvents, paneGraph} {
		h.press("tab")
		if h.m.focus != want {
			t.Fatalf("focus %d, want %d", h.m.focus, want)
		}
	}
	h.press("shift+tab")
	if h.m.focus != paneEvents {
		t.Fatalf("shift+tab: focus %d, want events", h.m.focus)
	}
	if !strings.Contains(h.m.View(), "━━ events ━━") {
		t.Fatal("the focused pane's rule is not heavy")
	}
}

func TestCheckpointDetail(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("enter") // the graph has the focus: no detail
	if h.m.overlay != overlayNone {
		t.Fatal("enter in the graph opened something")
	}
	h.press("tab", "down", "enter")
	if h.m.overlay != overlayDetail || h.m.detail.ID() != 13 {
		t.Fatalf("overlay %d, checkpoint %d; want the detail of 13", h.m.overlay, h.m.detail.ID())
	}
	v := h.m.View()
	for _, want := range []string{"checkpoint 13", "end to end 21ms", "join/1", "✓ acked", "sync", "async", "align", "delay"} {
		if !strings.Contains(v, want) {
			t.Fatalf("detail lacks %q:\n%s", want, v)
		}
	}
	h.press("c") // commands still work in the detail
	assertCalls(t, h.ctrl, "TriggerCheckpoint")
	h.press("esc")
	if h.m.overlay != overlayNone {
		t.Fatal("esc did not close the detail")
	}
}

func TestCheckpointDetailOfPending(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("tab", "enter")
	v := h.m.View()
	for _, want := range []string{"checkpoint 14", "pending", "8/13 acknowledged", "waiting for 5 subtasks", "○ waiting"} {
		if !strings.Contains(v, want) {
			t.Fatalf("detail lacks %q:\n%s", want, v)
		}
	}
}

func TestHelpToggle(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("?")
	if h.m.overlay != overlayHelp {
		t.Fatal("? did not open the help")
	}
	h.press("x") // the help takes the keys
	if h.m.overlay != overlayHelp {
		t.Fatal("x left the help")
	}
	h.press("?")
	if h.m.overlay != overlayNone {
		t.Fatal("? did not close the help")
	}
	h.press("?", "esc")
	if h.m.overlay != overlayNone {
		t.Fatal("esc did not close the help")
	}
	assertCalls(t, h.ctrl)
}

func TestQuit(t *testing.T) {
	for _, k := range []string{"q", "ctrl+c"} {
		h := newHarness(t, fixture.Running(), 120, 40)
		h.press(k)
		if !h.quit {
			t.Fatalf("%s did not quit", k)
		}
	}
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("x", "ctrl+c")
	if !h.quit {
		t.Fatal("ctrl+c did not quit from the fault menu")
	}
	h = newHarness(t, fixture.Running(), 120, 40)
	h.press("/", "q", "ctrl+c")
	if !h.quit {
		t.Fatal("ctrl+c did not quit while a filter was typed")
	}
}

func TestEventsAreLoggedAndClosedStreamStopsWaiting(t *testing.T) {
	ch := make(chan view.Stamped, 4)
	ch <- view.Stamped{Event: view.JobStatus{Status: "RUNNING"}}
	close(ch)
	m := newModel(newFake(fixture.Running()), ch, modelConfig{})
	msg := waitEvents(ch, sampler{})()
	em, ok := msg.(EventsMsg)
	if !ok || len(em.Events) != 1 || !em.Closed {
		t.Fatalf("wait on a closed channel returned %#v", msg)
	}
	if _, cmd := m.Update(em); cmd != nil {
		t.Fatal("the model waits again on a closed channel")
	}
	if !m.eventsClosed {
		t.Fatal("the model did not note the end of the stream")
	}
	if msg := waitEvents(ch, sampler{})(); !msg.(EventsMsg).Closed || len(msg.(EventsMsg).Events) != 0 {
		t.Fatalf("wait again returned %#v", msg)
	}
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	if v := m.View(); !strings.Contains(v, "event stream ended") || !strings.Contains(v, "job RUNNING") {
		t.Fatalf("log:\n%s", v)
	}
}

func TestWaitEventsBatches(t *testing.T) {
	ch := make(chan view.Stamped, 600)
	for range 600 {
		ch <- view.Stamped{Event: fixture.Event(t, "x", nil)}
	}
	msg := waitEvents(ch, sampler{})().(EventsMsg)
	if len(msg.Events) != maxEventBatch+1 || msg.Closed {
		t.Fatalf("batch of %d (closed %v)", len(msg.Events), msg.Closed)
	}
	done := make(chan struct{})
	close(done)
	if msg := waitEvents(make(chan view.Stamped), sampler{done: done})(); msg != nil {
		t.Fatalf("after done: %#v", msg)
	}
}

func TestBeforeTheFirstSample(t *testing.T) {
	m := newModel(newFake(Snapshot{}), nil, modelConfig{})
	if v := m.View(); v != "" {
		t.Fatalf("view before the size: %q", v)
	}
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	v := m.View()
	if !strings.Contains(v, "waiting for") {
		t.Fatalf("view before the first sample:\n%s", v)
	}
	m.Update(keyMsg("x")) // no selection yet: no menu, no crash
	if m.overlay != overlayNone {
		t.Fatal("fault menu without a selection")
	}
}

func TestTickStopsWhenRunReturns(t *testing.T) {
	ctrl := newFake(fixture.Running())
	done := make(chan struct{})
	close(done)
	s := sampler{ctrl: ctrl, count: new(atomic.Int64), done: done}
	if msg := s.tick(time.Hour)(); msg != nil {
		t.Fatalf("tick after done returned %#v", msg)
	}
	if ctrl.snapshots != 0 {
		t.Fatal("tick after done sampled the job")
	}
	s.done = nil
	msg, ok := s.tick(time.Millisecond)().(SnapshotMsg)
	if !ok || msg.Seq != 1 || msg.Snapshot.Job.Name != "orders" {
		t.Fatalf("tick returned %#v", msg)
	}
}
