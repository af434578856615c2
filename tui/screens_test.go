package tui

import (
	"strings"
	"testing"
	"time"

	"faultline/runtime/view"
	"faultline/tui/internal/fixture"
)

// The tests of what the screens say, as a trainer reads them.

// withNewer is s with checkpoints triggered after its newest, newest first.
func withNewer(s Snapshot, ids ...int64) Snapshot {
	var newer []view.Checkpoint
	for _, id := range ids {
		c := s.Checkpoints.History[0]
		c.ID = id
		newer = append(newer, c)
	}
	s.Checkpoints.History = append(newer, s.Checkpoints.History...)
	return s
}

func TestCheckpointHistoryFollowsTheNewestUntilARowIsChosen(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.send(SnapshotMsg{Snapshot: withNewer(fixture.Running(), 15)})
	if got := h.m.cps.SelectedID(); got != 15 || strings.Contains(h.m.View(), "newer") {
		t.Fatalf("not following: row %d", got)
	}
	h.press("tab", "down") // 14: one newer above
	if v := h.m.View(); !strings.Contains(v, "▲ 1 newer") {
		t.Fatalf("no marker:\n%s", v)
	}
	h.send(SnapshotMsg{Snapshot: withNewer(fixture.Running(), 17, 16, 15)})
	if got := h.m.cps.SelectedID(); got != 14 {
		t.Fatalf("the chosen row moved: %d", got)
	}
	if v := h.m.View(); !strings.Contains(v, "▲ 3 newer") {
		t.Fatalf("no marker for the newer rows:\n%s", v)
	}
	h.press("g") // home/g: the newest, following again
	h.send(SnapshotMsg{Snapshot: withNewer(fixture.Running(), 18, 17, 16, 15)})
	if got := h.m.cps.SelectedID(); got != 18 || strings.Contains(h.m.View(), "newer") {
		t.Fatalf("g did not follow the newest: row %d", got)
	}
	// Up to the top row follows too.
	h.press("down", "down", "up", "up")
	h.send(SnapshotMsg{Snapshot: withNewer(fixture.Running(), 19, 18, 17, 16, 15)})
	if got := h.m.cps.SelectedID(); got != 19 {
		t.Fatalf("the top row did not follow the newest: row %d", got)
	}
	h.press("down", "home")
	if !h.m.cps.Following() {
		t.Fatal("home did not follow the newest")
	}
}

func TestCheckpointDetailOfADamagedCheckpoint(t *testing.T) {
	h := newHarness(t, fixture.Damaged(), 120, 40)
	h.events(fixture.DamagedEvents())
	h.press("tab", "down", "enter")
	v := h.m.View()
	for _, want := range []string{"checkpoint 13", "DAMAGED", "DAMAGED: checkpoint 13: join/1's state: checksum mismatch in blob 3 of 7",
		"a restore passed over it"} {
		if !strings.Contains(v, want) {
			t.Fatalf("detail lacks %q:\n%s", want, v)
		}
	}
}

// The mode of a row comes from the events: an exactly-once checkpoint
// shows its alignment even after the switch to at-least-once.
func TestCheckpointTableKnowsEachRowsMode(t *testing.T) {
	h := newHarness(t, fixture.AtLeastOnce(), 120, 40)
	h.events(fixture.AtLeastOnceEvents())
	v := h.m.View()
	for _, want := range []string{
		" 16 completed 13/13 12:01:13.374   44ms  1.2MB   41KB     —    37",
		" 14 completed 13/13 12:01:09.374   22ms  1.2MB   39KB   5ms",
	} {
		if !strings.Contains(v, want) {
			t.Fatalf("table lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "1.4s") {
		t.Fatalf("an at-least-once row shows an alignment:\n%s", v)
	}
}

func TestEventsGoBackToTheNewestWhenTheFocusLeaves(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.events(fixture.RestartEvents())
	h.press("tab", "tab", "up", "up", "up")
	if h.m.log.Back() == 0 || !strings.Contains(h.m.View(), "newer below") {
		t.Fatal("the events did not scroll")
	}
	h.press("tab")
	if h.m.log.Back() != 0 || strings.Contains(h.m.View(), "newer below") {
		t.Fatal("the events stayed scrolled after the focus left")
	}
}

func TestHeaderSaysWhatTheSourcesRead(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40) // sources at 2104+2051+1980+2012/s, generator 10,000/s
	if v := h.m.View(); !strings.Contains(v, "sources read 8.1k/s · generator 10k/s") {
		t.Fatalf("header:\n%s", strings.SplitN(v, "\n", 2)[0])
	}
	s := fixture.Running()
	s.Input.Generator = false
	h = newHarness(t, s, 120, 40)
	if v := strings.SplitN(h.m.View(), "\n", 2)[0]; !strings.Contains(v, "sources read 8.1k/s") || strings.Contains(v, "generator") {
		t.Fatalf("header without a generator:\n%s", v)
	}
}

func TestHeaderSaysRestartedForAWhile(t *testing.T) {
	at := func(d time.Duration, status string, attempt int64) Snapshot {
		s := fixture.Running()
		s.Now = s.Now.Add(d)
		s.Job.Status, s.Job.Attempt = status, attempt
		return s
	}
	header := func(h *harness) string { return strings.SplitN(h.m.View(), "\n", 2)[0] }
	const word = "RESTARTED (attempt 2)"

	h := newHarness(t, at(0, "RUNNING", 1), 120, 40)
	h.send(SnapshotMsg{Snapshot: at(time.Second, "RESTARTING", 2)})
	if v := header(h); strings.Contains(v, "RESTARTED") {
		t.Fatalf("RESTARTED while restarting: %s", v)
	}
	h.send(SnapshotMsg{Snapshot: at(2*time.Second, "RUNNING", 2)})
	for _, d := range []time.Duration{2, 4, 6} {
		h.send(SnapshotMsg{Snapshot: at(d*time.Second, "RUNNING", 2)})
		if v := header(h); !strings.Contains(v, "RUNNING "+word) {
			t.Fatalf("%ds: %s", d, v)
		}
	}
	h.send(SnapshotMsg{Snapshot: at(7*time.Second, "RUNNING", 2)})
	if v := header(h); strings.Contains(v, "RESTARTED") {
		t.Fatalf("still RESTARTED 5s after the restart: %s", v)
	}

	// Frozen or slowed, the job may take long to run again: the word stays
	// until it has run for 2s.
	h = newHarness(t, at(0, "RUNNING", 1), 120, 40)
	h.send(SnapshotMsg{Snapshot: at(time.Second, "RESTARTING", 2)})
	h.send(SnapshotMsg{Snapshot: at(2*time.Second, "CREATED", 2)})
	h.send(SnapshotMsg{Snapshot: at(20*time.Second, "CREATED", 2)})
	if v := header(h); !strings.Contains(v, word) {
		t.Fatalf("not running yet: %s", v)
	}
	h.send(SnapshotMsg{Snapshot: at(30*time.Second, "RUNNING", 2)})
	h.send(SnapshotMsg{Snapshot: at(31*time.Second, "RUNNING", 2)})
	if v := header(h); !strings.Contains(v, word) {
		t.Fatalf("running for 1s only: %s", v)
	}
	h.send(SnapshotMsg{Snapshot: at(32*time.Second, "RUNNING", 2)})
	if v := header(h); strings.Contains(v, "RESTARTED") {
		t.Fatalf("running for 2s: %s", v)
	}
}

func TestResetRestartsKey(t *testing.T) {
	h := newHarness(t, fixture.Restarting(), 120, 40)
	h.press("R")
	assertCalls(t, h.ctrl, "ResetRestarts")
	if got := h.m.status.Flash(); got != "restart attempts reset: the strategy starts afresh, as for a new job" {
		t.Fatalf("flash %q", got)
	}
	h.press("r") // lower case is no command
	assertCalls(t, h.ctrl, "ResetRestarts")
	h.press("?")
	if v := h.m.View(); !strings.Contains(v, "R     reset restart attempts") {
		t.Fatalf("help does not list R:\n%s", v)
	}
}

// At 80×24 the help is taller than the screen: it scrolls to the legend.
func TestHelpScrollsAt80x24(t *testing.T) {
	h := newHarness(t, fixture.Running(), 80, 24)
	h.press("?")
	if v := h.m.View(); !strings.Contains(v, "↑↓ scroll") {
		t.Fatalf("no scroll hint:\n%s", v)
	}
	h.press("pgdown", "pgdown")
	v := h.m.View()
	for _, want := range []string{"·=4", "one · stands for 4", "p0:1203", "next offset to read in partition 0"} {
		if !strings.Contains(v, want) {
			t.Fatalf("help lacks %q:\n%s", want, v)
		}
	}
	h.press("esc")
	if h.m.overlay != overlayNone {
		t.Fatal("esc did not close the help")
	}
}
