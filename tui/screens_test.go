package tui

import (
	"strings"
	"testing"

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
