package tui

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/internal/fixture"
)

// The tests of what the screens say, as a trainer reads them: restarts,
// the checkpoint history, the events, the header, the help, and that no
// number is cut on a wide terminal.

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

func TestEventsGetAtLeastTwelveLinesAt120x40(t *testing.T) {
	for _, tc := range []struct {
		w, h, events, mid int
	}{
		{120, 40, 12, 5}, {80, 24, 3, 4}, {200, 60, 12, 5},
	} {
		h := newHarness(t, fixture.Running(), tc.w, tc.h)
		s := h.m.sizes()
		if s.eventsH-1 < tc.events || s.midH-1 < tc.mid {
			t.Errorf("%dx%d: %d event lines, %d checkpoint lines; want at least %d and %d", tc.w, tc.h, s.eventsH-1, s.midH-1, tc.events, tc.mid)
		}
		if _, roomy := h.m.graph.Heights(); tc.w >= 120 && s.graphH < roomy+1 {
			t.Errorf("%dx%d: the graph lost its strips (%d lines)", tc.w, tc.h, s.graphH)
		}
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

// cutNumber finds a number cut short: a digit right before "…".
var cutNumber = regexp.MustCompile(`[0-9]…`)

func TestNoNumberIsCutAt120Columns(t *testing.T) {
	slowed := fixture.Slowed()
	j := slowed.Tasks["join/1"]
	for c := range j.Inputs {
		j.Inputs[c].Queue.Queued *= 1000
		for b := range j.Inputs[c].Queue.Barriers {
			j.Inputs[c].Queue.Barriers[b].ID = 1264
			j.Inputs[c].Queue.Barriers[b].Pos = j.Inputs[c].Queue.Queued - 1
		}
	}
	j.Inputs[0].Blocked, j.Inputs[0].HeldBack = true, 1_264_000
	slowed.Tasks["join/1"] = j
	src := slowed.Tasks["orders-source/0"]
	src.Offsets = map[int32]int64{0: 123456789, 1: 123456788}
	slowed.Tasks["orders-source/0"] = src
	slowed.Restart.Strategy = "exponential-delay"
	slowed.Restart.Description = "exponential-delay (initial 1s, max 1m0s, multiplier 1.5, jitter 0.1, reset after 1h0m0s, attempts before reset infinite)"
	slowed.Checkpoints.History[3].Failure = "declined: join/1: snapshot failed: write checkpoint 11 of join/1: injected storage failure after 3 writes"
	events := append(fixture.RestartEvents(), view.Stamped{At: time.Second, Event: view.RestartScheduled{
		Strategy: "exponential-delay", DelayMs: 1000, Attempt: 1, Description: slowed.Restart.Description}})

	for _, size := range [][2]int{{120, 40}, {120, 50}, {160, 50}} {
		for _, keys := range [][]string{nil, {"x"}, {"x", "3"}, {"tab", "enter"}, {"?"}} {
			h := newHarness(t, slowed, size[0], size[1])
			h.events(events)
			h.press(keys...)
			v := h.m.View()
			if m := cutNumber.FindString(v); m != "" {
				t.Errorf("%v %v: a number is cut (%q):\n%s", size, keys, m, v)
			}
			// Whole in the restarts pane and in the events.
			if size[1] >= 50 && keys == nil && strings.Count(v, "infinite)") < 2 {
				t.Errorf("%v: the exponential-delay description is not whole:\n%s", size, v)
			}
		}
	}
}

// At 80×24 the help is taller than the screen: it scrolls to the
// checkpointing modes and the legend.
func TestHelpScrollsAt80x24(t *testing.T) {
	h := newHarness(t, fixture.Running(), 80, 24)
	h.press("?")
	if v := h.m.View(); !strings.Contains(v, "↑↓ scroll") {
		t.Fatalf("no scroll hint:\n%s", v)
	}
	// Every line shows on some page.
	var seen strings.Builder
	for range 5 {
		seen.WriteString(h.m.View())
		h.press("pgdown")
	}
	for _, want := range []string{
		"checkpointing modes, in the order m goes through them", "exactly-once · aligned", "exactly-once · unaligned",
		"·=4", "one · stands for 4", "p0:1203", "next offset to read in partition 0",
		"◂▌17«•••···", "unaligned barrier 17 jumped to the front", "●··· REC 7", "UNALIGNED #17 38ms",
		"persisted 96KB", "dup 23 (at-least-once)",
	} {
		if !strings.Contains(seen.String(), want) {
			t.Fatalf("help lacks %q:\n%s", want, seen.String())
		}
	}
	h.press("esc")
	if h.m.overlay != overlayNone {
		t.Fatal("esc did not close the help")
	}
}

// The history says how each checkpoint handled its barriers and, with
// Flink's names, its persisted and processed in-flight data; a narrow
// table keeps the kind and the persisted data.
func TestCheckpointTableShowsInFlightData(t *testing.T) {
	for _, tc := range []struct {
		w    int
		want []string
	}{
		{120, []string{
			" id status     acks    dur   full align type      persisted processed",
			" 17 pending    8/13  38ms…   256B     — unaligned       4KB         —",
			" 16 completed 13/13   31ms  1.2MB   0ms unaligned      96KB        0B",
			" 15 completed 13/13  148ms  1.2MB 100ms timed out      40KB      28KB",
			" 14 completed 13/13   22ms  1.2MB   5ms aligned          0B      12KB",
		}},
		{80, []string{
			" id status     acks    dur type      persisted",
			" 16 completed 13/13   31ms unaligned      96KB",
			" 15 completed 13/13  148ms timed out      40KB",
		}},
	} {
		h := newHarness(t, fixture.Unaligned(), tc.w, 40)
		h.events(fixture.UnalignedEvents())
		v := h.m.View()
		for _, want := range tc.want {
			if !strings.Contains(v, want) {
				t.Errorf("%d columns: the table lacks %q:\n%s", tc.w, want, v)
			}
		}
	}
	// Nothing unaligned, no timeout: the table is as it was.
	h := newHarness(t, fixture.Running(), 120, 40)
	if v := h.m.View(); strings.Contains(v, "persisted") || strings.Contains(v, "unaligned") {
		t.Errorf("in-flight columns without in-flight data:\n%s", v)
	}
	// An at-least-once checkpoint aligns nothing and stores no in-flight
	// data.
	s := fixture.AtLeastOnce()
	s.Job.AlignedTimeout = 100 * time.Millisecond
	h = newHarness(t, s, 120, 40)
	h.events(fixture.AtLeastOnceEvents())
	for _, want := range []string{
		" id status     acks    dur   full align after type      persisted",
		" 16 completed 13/13   44ms  1.2MB     —    37 —                 —",
		" 14 completed 13/13   22ms  1.2MB   5ms       aligned          0B",
	} {
		if v := h.m.View(); !strings.Contains(v, want) {
			t.Errorf("at-least-once: the table lacks %q:\n%s", want, v)
		}
	}
}

// The detail of a checkpoint the timeout switched: which subtasks, and
// each subtask's kind and in-flight data.
func TestCheckpointDetailOfATimedOutCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		w    int
		want []string
	}{
		{120, []string{
			"persisted in-flight data 40KB (320 records) · processed in-flight data 28KB",
			"timed out → unaligned: join/0 — the checkpoint was older than the aligned-checkpoint timeout (100ms)",
			" subtask           ack       type          e2e    sync   async   align   delay    full    incr persisted processed",
			" orders-source/0   ✓ acked   —           142ms     1ms     5ms     2ms     2ms    97KB   3.1KB        0B        0B",
			"▸join/0            ✓ acked   timed out   144ms     1ms     5ms   100ms     2ms    97KB   3.1KB      40KB      22KB",
			" join/1            ✓ acked   aligned     145ms     1ms     5ms     9ms     2ms    97KB   3.1KB        0B       6KB",
		}},
		{80, []string{
			" subtask           ack       type          e2e    sync   async   align persisted",
			"▸join/0            ✓ acked   timed out   144ms     1ms     5ms   100ms      40KB",
		}},
	} {
		h := newHarness(t, fixture.Unaligned(), tc.w, 40)
		h.events(fixture.UnalignedEvents())
		h.press("tab", "down", "down", "enter")
		v := h.m.View()
		for _, want := range tc.want {
			if !strings.Contains(v, want) {
				t.Errorf("%d columns: the detail lacks %q:\n%s", tc.w, want, v)
			}
		}
	}
	// An aligned checkpoint without in-flight data: as before.
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("tab", "down", "enter")
	if v := h.m.View(); strings.Contains(v, "persisted") || strings.Contains(v, "type") {
		t.Errorf("in-flight columns without in-flight data:\n%s", v)
	}
}

func TestNoNumberIsCutAt120ColumnsUnaligned(t *testing.T) {
	for _, size := range [][2]int{{120, 40}, {160, 50}} {
		for _, keys := range [][]string{nil, {"tab", "enter"}, {"tab", "down", "down", "enter"}, {"?", "pgdown"}} {
			for _, snap := range []func() Snapshot{fixture.Unaligned, fixture.TimedOut} {
				h := newHarness(t, snap(), size[0], size[1])
				h.events(fixture.UnalignedEvents())
				h.press(keys...)
				v := h.m.View()
				if m := cutNumber.FindString(v); m != "" {
					t.Errorf("%v %v: a number is cut (%q):\n%s", size, keys, m, v)
				}
			}
		}
	}
}

// Once the job FAILED, the footer offers no key that needs a running job
// but R, which resubmits it from the newest checkpoint.
func TestFailedJobOffersResubmit(t *testing.T) {
	s := fixture.Restarting()
	s.Job.Status = "FAILED"
	h := newHarness(t, s, 120, 40)
	v := h.m.View()
	footer := v[strings.LastIndex(v, "\n")+1:]
	if !strings.Contains(footer, "R resubmit") || strings.Contains(footer, "x fault") || strings.Contains(footer, "space freeze") {
		t.Fatalf("footer of a FAILED job: %q", footer)
	}
	h.press("R")
	assertCalls(t, h.ctrl, "Resubmit")
}
