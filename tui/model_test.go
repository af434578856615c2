package tui

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"faultline/runtime/view"
	"faultline/tui/common"
	"faultline/tui/internal/fixture"
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

// m cycles exactly-once (aligned) → exactly-once unaligned →
// at-least-once → exactly-once, and the header says each at once.
func TestModeCycle(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	var want []string
	for _, tc := range []struct{ mode, header string }{
		{"exactly-once unaligned", "exactly-once · unaligned"},
		{"at-least-once", "at-least-once · no alignment"},
		{"exactly-once", "exactly-once · aligned"},
		{"exactly-once unaligned", "exactly-once · unaligned"},
	} {
		h.press("m")
		want = append(want, "SetMode("+tc.mode+")")
		assertCalls(t, h.ctrl, want...)
		if h.m.ctx.Mode != tc.mode {
			t.Fatalf("mode shown %q before the next sample, want %q", h.m.ctx.Mode, tc.mode)
		}
		if v := strings.SplitN(h.m.View(), "\n", 2)[0]; !strings.Contains(v, tc.header) {
			t.Fatalf("header does not show %q:\n%s", tc.header, v)
		}
		if got := h.m.status.Flash(); got != "mode "+tc.mode+" from the next checkpoint" {
			t.Fatalf("flash %q", got)
		}
	}
}

// A job that refuses unaligned checkpoints is not asked for them again
// on the next press: the cycle goes on from the mode it refused.
func TestModeCycleGoesOnAfterARefusal(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.ctrl.modeErr = errors.New(`mode "exactly-once unaligned": want exactly-once or at-least-once`)
	h.press("m")
	if h.m.ctx.Mode != "exactly-once" {
		t.Fatalf("mode shown %q after the switch failed", h.m.ctx.Mode)
	}
	h.ctrl.modeErr = nil
	h.press("m", "m")
	assertCalls(t, h.ctrl, "SetMode(exactly-once unaligned)", "SetMode(at-least-once)", "SetMode(exactly-once)")
}

// The header says how the mode handles barriers, and the
// aligned-checkpoint timeout in aligned mode.
func TestHeaderSaysTheAlignment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    string
		timeout time.Duration
		w       int
		want    string
	}{
		{"aligned", "exactly-once", 0, 120, "RUNNING  exactly-once · aligned  every 2s"},
		{"aligned with a timeout", "exactly-once", 100 * time.Millisecond, 120, "RUNNING  exactly-once · aligned, timeout 100ms  every 2s"},
		{"aligned with a timeout, narrow", "exactly-once", 100 * time.Millisecond, 80, "RUNNING  exactly-once · aligned  every 2s"},
		{"unaligned", "exactly-once unaligned", 100 * time.Millisecond, 120, "RUNNING  exactly-once · unaligned  every 2s"},
		{"unaligned, narrow", "exactly-once unaligned", 0, 80, "RUNNING  exactly-once · unaligned  every 2s"},
		{"at-least-once", "at-least-once", 100 * time.Millisecond, 120, "RUNNING  at-least-once · no alignment  every 2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fixture.Running()
			s.Job.Mode, s.Job.AlignedTimeout = tc.mode, tc.timeout
			h := newHarness(t, s, tc.w, 24)
			if v := strings.SplitN(h.m.View(), "\n", 2)[0]; !strings.Contains(v, tc.want) {
				t.Fatalf("header lacks %q:\n%s", tc.want, v)
			}
		})
	}
}

func TestModeSwitchRefused(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.ctrl.modeErr = errors.New("a checkpoint is pending")
	h.press("m")
	if h.m.ctx.Mode != "exactly-once" {
		t.Fatalf("mode shown %q after the switch failed", h.m.ctx.Mode)
	}
	if got := h.m.status.Flash(); got != "mode: a checkpoint is pending" {
		t.Fatalf("flash %q", got)
	}
}

func TestPause(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("p")
	assertCalls(t, h.ctrl, "SetSourcesPaused(true)")
	if !h.m.ctx.Paused || !strings.Contains(h.m.View(), "SOURCES PAUSED") {
		t.Fatal("the header does not say the sources are paused")
	}
	h.press("p")
	assertCalls(t, h.ctrl, "SetSourcesPaused(true)", "SetSourcesPaused(false)")
	if h.m.ctx.Paused {
		t.Fatal("still paused")
	}
}

func TestIntentIsShownUntilTheJobConfirmsIt(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("p") // the command returned with no sample taken yet
	if !h.m.ctx.Paused {
		t.Fatal("pause not shown at once")
	}
	// Samples that still show the sources running (taken before the
	// command returned, or lagging) do not undo it.
	for seq := int64(1); seq <= graceSamples; seq++ {
		h.send(SnapshotMsg{Snapshot: fixture.Running(), Seq: seq})
		if !h.m.ctx.Paused {
			t.Fatalf("sample %d undid the pause", seq)
		}
	}
	// The job confirms: from now on the UI shows the job's own state.
	s := fixture.Running()
	s.Input.SourcesPaused = true
	h.send(SnapshotMsg{Snapshot: s, Seq: graceSamples + 1})
	h.send(SnapshotMsg{Snapshot: fixture.Running(), Seq: graceSamples + 2})
	if h.m.ctx.Paused {
		t.Fatal("the job's own state is not shown once it confirmed")
	}
}

func TestIntentTheJobDidNotTake(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("z")
	for seq := int64(1); seq <= graceSamples+1; seq++ {
		h.send(SnapshotMsg{Snapshot: fixture.Running(), Seq: seq})
	}
	if h.m.ctx.Tempo != TempoNormal {
		t.Fatalf("tempo %s shown, the job runs normal", h.m.ctx.Tempo)
	}
	if got := h.m.status.Flash(); got != "tempo: the job still runs normal" {
		t.Fatalf("flash %q", got)
	}
}

// Keys pressed fast reach the UI as one message of several runes (Bubble
// Tea v1 reads them in one go): each one counts, in order.
func TestKeysPressedFastAllCount(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("zzmcs")})
	assertCalls(t, h.ctrl, "SetTempo(slow)", "SetTempo(slower)", "SetMode(exactly-once unaligned)", "TriggerCheckpoint", "TriggerSavepoint")
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

func TestTempo(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("z", "z", "z")
	assertCalls(t, h.ctrl, "SetTempo(slow)", "SetTempo(slower)", "SetTempo(normal)")

	h = newHarness(t, fixture.Running(), 120, 40)
	h.press("z", "space")
	if h.m.ctx.Tempo != TempoFrozen || !strings.Contains(h.m.View(), "FROZEN") {
		t.Fatal("space did not freeze")
	}
	h.press(".")
	h.press("space") // back to the tempo before the freeze
	assertCalls(t, h.ctrl, "SetTempo(slow)", "SetTempo(frozen)", "Step", "SetTempo(slow)")
	if h.m.ctx.Tempo != TempoSlow || !strings.Contains(h.m.View(), "SLOW") {
		t.Fatal("space did not go back to slow")
	}
}

func TestStepFreezesFirst(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press(".")
	assertCalls(t, h.ctrl, "SetTempo(frozen)", "Step")
	if h.m.ctx.Tempo != TempoFrozen {
		t.Fatal("not frozen after a step")
	}
	h.press(".")
	assertCalls(t, h.ctrl, "SetTempo(frozen)", "Step", "Step")
	h.press("space")
	assertCalls(t, h.ctrl, "SetTempo(frozen)", "Step", "Step", "SetTempo(normal)")
}

func TestSlowFromFrozen(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("space", "z")
	assertCalls(t, h.ctrl, "SetTempo(frozen)", "SetTempo(slow)")
}

func TestRate(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40) // 10,000 records/s
	h.press("+", "+", "-")
	assertCalls(t, h.ctrl, "SetRate(15000)", "SetRate(22500)", "SetRate(15000)")
	if h.m.ctx.Rate != 15000 {
		t.Fatalf("rate shown %v", h.m.ctx.Rate)
	}
	if got := h.m.status.Flash(); got != "generator rate 15,000 records/s" {
		t.Fatalf("flash %q", got)
	}
}

func TestRateBounds(t *testing.T) {
	s := fixture.Running()
	s.Input.Rate = 12
	h := newHarness(t, s, 120, 40)
	h.press("-", "-")
	assertCalls(t, h.ctrl, "SetRate(10)", "SetRate(10)")
	s.Input.Rate = 9_000_000
	h = newHarness(t, s, 120, 40)
	h.press("+")
	assertCalls(t, h.ctrl, "SetRate(10000000)")
}

func TestRateRefused(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.ctrl.rateErr = errors.New("no input generator: --brokers reads an existing topic")
	h.press("+")
	if h.m.ctx.Rate != 10000 {
		t.Fatalf("rate shown %v after the change failed", h.m.ctx.Rate)
	}
	if got := h.m.status.Flash(); !strings.HasPrefix(got, "rate: no input generator") {
		t.Fatalf("flash %q", got)
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
}

func TestCheckpointAndSavepointCommands(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("c")
	if got := h.m.status.Flash(); got != "checkpoint 15 triggered" {
		t.Fatalf("flash %q", got)
	}
	h.ctrl.savepointErr = errors.New("storage failure")
	h.press("s")
	assertCalls(t, h.ctrl, "TriggerCheckpoint", "TriggerSavepoint")
	if got := h.m.status.Flash(); got != "savepoint: storage failure" {
		t.Fatalf("flash %q", got)
	}
	if v := h.m.View(); !strings.Contains(v, "savepoint: storage failure") {
		t.Fatalf("flash not on screen:\n%s", v)
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

// Two keys pressed fast give two commands, which Bubble Tea runs in
// goroutines of their own: whichever reaches the job last, the job ends
// with the setting asked for last (m m: at-least-once, not unaligned).
func TestSettingsReachTheJobInTheOrderAsked(t *testing.T) {
	ctrl := newFake(fixture.Running())
	s := sampler{ctrl: ctrl, count: new(atomic.Int64), settings: &newest{}}
	first, second := setMode(s, "unaligned", 1), setMode(s, "at-least-once", 2)
	second()
	first()
	pauseFirst, pauseSecond := setPaused(s, true, 1), setPaused(s, false, 2)
	pauseSecond()
	pauseFirst()
	tempoFirst, tempoSecond := setTempo(s, TempoFrozen, false, 1), setTempo(s, TempoNormal, false, 2)
	tempoSecond()
	tempoFirst()
	rateFirst, rateSecond := setRate(s, 800, 1), setRate(s, 200, 2)
	rateSecond()
	rateFirst()
	snap := ctrl.Snapshot()
	if snap.Job.Mode != "at-least-once" || snap.Input.SourcesPaused || snap.Input.Tempo != TempoNormal || snap.Input.Rate != 200 {
		t.Fatalf("mode %s, paused %v, tempo %s, rate %v: the older requests overrode the newer", snap.Job.Mode, snap.Input.SourcesPaused, snap.Input.Tempo, snap.Input.Rate)
	}
}
