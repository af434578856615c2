package tui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
	"github.com/faultline-dev/faultline/tui/internal/fixture"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
)

// goldenScene is one screen the golden tests keep.
type goldenScene struct {
	name   string
	snap   func() Snapshot
	events func() []view.Stamped
	keys   []string
	// ready is on screen once the scene is set up: the sample and the
	// events are in (and the keys have had their effect).
	ready string
	// steps, when set, is on screen after each key but the last (keys whose
	// effect comes back from a command must be waited for).
	steps []string
	// want must be in the final view.
	want []string
}

var goldenScenes = []goldenScene{
	{
		name: "running", snap: fixture.Running, events: fixture.RunEvents,
		ready: "checkpoint 14 triggered",
		want: []string{"RUNNING", "exactly-once · aligned", "checkpoint 14 pending · 8/13 acked", "▸0 RUN",
			"▌14", "✓14", "○14", "p0:1203", "13 completed", "verify  committed 18,204  dup 0  lost 0"},
	},
	{
		name: "aligning", snap: fixture.Aligning, events: fixture.RunEvents,
		ready: "checkpoint 14 triggered",
		want:  []string{"SLOW", "ALIGNING #14 38ms", "BLOCKED 6", "▌14······", "◂··▌14"},
	},
	{
		name: "restarting", snap: fixture.Restarting, events: fixture.RestartEvents,
		ready: "restart 1 scheduled",
		want: []string{"RESTARTING in 0.8s", "restarting in 0.8s", "FAILED", "RESTARTING", "attempts 1/3",
			"14 failed", "job failover", "failover full"},
	},
	{
		name: "detail", snap: fixture.Running, events: fixture.RunEvents, keys: []string{"tab", "enter"},
		ready: "esc close",
		want:  []string{"checkpoint 14", "8/13 acknowledged", "○ waiting", "✓ acked", "sync", "async", "delay"},
	},
	{
		name: "overview", snap: fixture.Unaligned, events: fixture.UnalignedEvents, keys: []string{"i"},
		ready: "summary and configuration",
		want: []string{"per checkpoint", "end to end", "p99", "persisted in-flight", "per subtask", "alignment", "start delay",
			"execution.checkpointing", ".interval", "10m"},
	},
	{
		// Focused, the history grows into the events' rows.
		name: "history-focused", snap: fixture.Restarting, events: fixture.RestartEvents, keys: []string{"tab"},
		ready: "14 failed",
		want:  []string{"14 failed", "job failover", "13 completed", "12 completed"},
	},
	{
		name: "fault-menu", snap: fixture.Running, events: fixture.RunEvents, keys: []string{"x"},
		ready: "inject a fault",
		want:  []string{"selected join/0", "1 panic", "broker-down", "unavailable: the broker is external", "(job) the process dies"},
	},
	{
		name: "fault-confirm", snap: fixture.Running, events: fixture.RunEvents, keys: []string{"x", "enter"},
		steps: []string{"inject a fault"}, ready: "inject panic into join/0?",
		want: []string{"y inject", "n/esc cancel"},
	},
	{
		name: "slowed", snap: fixture.Slowed, events: fixture.RunEvents,
		ready: "checkpoint 14 triggered",
		want:  []string{"SLOW ×10", "bp HIGH", "1,264 ·="},
	},
	{
		name: "at-least-once", snap: fixture.AtLeastOnce, events: fixture.AtLeastOnceEvents,
		ready: "dup 23 (at-least-once)",
		want:  []string{"at-least-once · no alignment", "after", "dup 23 (at-least-once)", "lost 0 ✓"},
	},
	{
		name: "at-least-once-detail", snap: fixture.AtLeastOnce, events: fixture.AtLeastOnceEvents, keys: []string{"tab", "enter"},
		ready: "esc close",
		want: []string{"checkpoint 16", "at-least-once", "processed after the barrier: join 37", "read again after a restore",
			"after", "23", "14"},
	},
	{
		name: "damaged", snap: fixture.Damaged, events: fixture.DamagedEvents,
		ready: "sink/0: the output already holds 460 records",
		want:  []string{"DAMAGED", "restored checkpoint 12 — checkpoint 13 is damaged, passed over", "sink/0: the output already holds 460 records"},
	},
	{
		name: "stepping", snap: fixture.Stepping, events: fixture.RunEvents,
		ready: "STEPPING",
		want:  []string{"STEPPING", "ALIGNING #14"},
	},
	{
		name: "unaligned", snap: fixture.Unaligned, events: fixture.UnalignedEvents,
		ready: "checkpoint 17 triggered",
		want: []string{"exactly-once · unaligned", "checkpoint 17 pending · unaligned", "UNALIGNED #17", "▌17«•••", "•3", "●····",
			"REC 7", "type", "persisted", "unaligned", "timed out", "96KB", "completed unaligned in 31ms"},
	},
	{
		name: "unaligned-detail", snap: fixture.Unaligned, events: fixture.UnalignedEvents, keys: []string{"tab", "down", "down", "enter"},
		ready: "esc close",
		want: []string{"checkpoint 15", "persisted in-flight data 40KB (320 records)", "timed out → unaligned: join/0",
			"type", "timed out", "aligned", "persisted", "40KB"},
	},
	{
		name: "timed-out", snap: fixture.TimedOut, events: fixture.RunEvents,
		ready: "checkpoint 14 triggered",
		want:  []string{"exactly-once · aligned", "UNALIGNED #14", "timeout → unaligned", "▌14«•••••", "•2", "REC 3", "timed out"},
	},
	{
		// A guided tour: its panel in the events' place (they are not
		// drawn, so none are sent: the final view does not depend on when
		// they come), join/1's cell marked.
		name: "tour-step", snap: tourSnap(fixture.TourStep), events: noEvents,
		ready: "waiting for: join/1 to align…",
		want: []string{"── tour · Barriers and alignment · step 3/9 ─", "»1 RUN", "reached join/1 on three of its four",
			"waiting for: join/1 to align…", "n next · b back · r restart · q quit", "▸0 RUN", "verify  committed 18,204"},
	},
	{
		name: "tour-held", snap: tourSnap(fixture.TourHeld), events: noEvents,
		// At 80×24 the narration takes the check's row: it is what the
		// step says now (the check shows at 120×40).
		ready: "pressing x then 1",
		want:  []string{"step 4/9", "pressing x then 1 (autoplay)", "none after it", "»◂···▌14", "»◂······▌14"},
	},
	{
		name: "tour-failed", snap: tourSnap(fixture.TourFailed), events: noEvents,
		ready: "✗ nothing lost",
		want:  []string{"step 7/9", " n next ", "✗ nothing lost, nothing duplicated — 12 records committed twice", "»verify  committed 18,204"},
	},
	{
		name: "tour-done", snap: tourSnap(fixture.TourDone), events: noEvents,
		ready: "tour complete",
		want:  []string{"step 9/9", "tour complete: a check did not hold ✗", "r restart · q quit", "✗ nothing lost"},
	},
	{
		name: "help", snap: fixture.Running, events: fixture.RunEvents, keys: []string{"?"},
		ready: "fault tolerance",
		want:  []string{"checkpoint", "savepoint", "freeze", "step to the next moment", "R", "reset restart attempts"},
	},
}

// tourSnap is the default job running with the tour tour makes.
func tourSnap(tour func() *Tour) func() Snapshot {
	return func() Snapshot { return fixture.Touring(fixture.Running(), tour()) }
}

func noEvents() []view.Stamped { return nil }

// TestGolden runs the program with teatest at 80×24 and 120×40 and keeps
// the final model's view in testdata/TestGolden (regenerate with
// go test ./tui/... -update). The final view, not the byte stream, is
// compared: how many frames the renderer writes depends on timing.
func TestGolden(t *testing.T) {
	for _, sc := range goldenScenes {
		for _, size := range [][2]int{{80, 24}, {120, 40}} {
			t.Run(sc.name+"/"+common.Itoa(int64(size[0]))+"x"+common.Itoa(int64(size[1])), func(t *testing.T) {
				view := runScene(t, sc, size[0], size[1])
				for _, w := range sc.want {
					if !strings.Contains(view, w) {
						t.Errorf("view lacks %q", w)
					}
				}
				golden.RequireEqual(t, []byte(view))
			})
		}
	}
	t.Run("too-small/60x20", func(t *testing.T) {
		sc := goldenScene{snap: fixture.Running, events: fixture.RunEvents, ready: "terminal too small"}
		view := runScene(t, sc, 60, 20)
		if !strings.Contains(view, "terminal too small: need at least 80×24, have 60×20") {
			t.Errorf("view:\n%s", view)
		}
		golden.RequireEqual(t, []byte(view))
	})
}

// runScene runs the program on the scene's sample and events, presses its
// keys, waits until it is ready and returns the final model's view.
func runScene(t *testing.T, sc goldenScene, w, h int) string {
	t.Helper()
	evs := sc.events()
	ch := make(chan view.Stamped, len(evs))
	for _, e := range evs {
		ch <- e
	}
	done := make(chan struct{})
	m := newModel(newFake(sc.snap()), ch, modelConfig{period: 20 * time.Millisecond, done: done})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h))
	t.Cleanup(func() { close(done) })

	first := sc.ready
	if len(sc.keys) > 0 {
		first = "verify" // the first frame with a sample
	}
	waitFor(t, tm, first)
	for i, k := range sc.keys {
		tm.Send(keyMsg(k))
		if i < len(sc.steps) {
			waitFor(t, tm, sc.steps[i])
		}
	}
	if len(sc.keys) > 0 {
		waitFor(t, tm, sc.ready)
	}
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	return tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).View()
}

func waitFor(t *testing.T, tm *teatest.TestModel, s string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(s)) },
		teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(5*time.Millisecond))
}
