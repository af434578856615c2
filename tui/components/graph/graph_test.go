package graph

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
	"github.com/faultline-dev/faultline/tui/internal/fixture"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

func TestMain(m *testing.M) {
	// The checks compare plain text: no colour, no bold.
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Exit(m.Run())
}

// sampled is the pane after its first sample, s.
func sampled(s view.Snapshot) *Model {
	ctx := common.NewContext(nil)
	ctx.Snap, ctx.HasSnap = s, true
	g := New(ctx)
	g.Update(common.SnapshotMsg{Snapshot: s})
	return g
}

func TestRenderStrip(t *testing.T) {
	st := common.NewStyles(lipgloss.DefaultRenderer(), common.DefaultTheme())
	for _, tc := range []struct {
		name     string
		in       view.InputView
		aligning int64
		w        int
		want     string
		scale    int64
	}{
		{"empty channel", fixture.Queue("a/0", 0, 0), 0, 8, "◂       ", 1},
		{"elements, next leftmost", fixture.Queue("a/0", 0, 3), 0, 8, "◂···    ", 1},
		{"barrier at its position, its id between the elements", fixture.Queue("a/0", 0, 8, fixture.Barrier(14, 2)), 0, 12, "◂··▌14····· ", 1},
		{"barrier next in line", fixture.Queue("a/0", 0, 4, fixture.Barrier(14, 0)), 0, 8, "◂▌14··· ", 1},
		{"a barrier's id hides no element behind it", fixture.Queue("a/0", 0, 2, fixture.Barrier(11, 0)), 0, 8, "◂▌11·   ", 1},
		{"two barriers", fixture.Queue("a/0", 0, 9, fixture.Barrier(14, 1), fixture.Barrier(15, 5)), 0, 12, "◂·▌14·▌15·  ", 1},
		{"a barrier's id never hides the next barrier", fixture.Queue("a/0", 0, 5, fixture.Barrier(14, 1), fixture.Barrier(15, 2)), 0, 8, "◂·▌▌15  ", 1},
		{"blocked: the barrier came in, elements wait behind it",
			view.InputView{From: "a/0", Blocked: true, HeldBack: 6, Queue: view.QueueView{Queued: 6}}, 14, 12, "▌14······   ", 1},
		{"long queue in buckets", fixture.Queue("a/0", 0, 100, fixture.Barrier(14, 50)), 0, 11, "◂·····▌14··", 10},
		{"a barrier at the strip's end moves left to show its id whole", fixture.Queue("a/0", 0, 3, fixture.Barrier(14, 40)), 0, 6, "◂··▌14", 1},
		{"an id is whole or absent, never cut", fixture.Queue("a/0", 0, 3, fixture.Barrier(1264, 0)), 0, 4, "◂▌··", 1},
		{"barriers crowded at the end move left, in order", fixture.Queue("a/0", 0, 6, fixture.Barrier(14, 3), fixture.Barrier(15, 5)), 0, 8, "◂·▌14▌15", 1},
		{"an unaligned barrier jumped to the front over the persisted elements",
			fixture.Overtaken("a/0", 0, 6, 3, fixture.Overtaking(17, 3)), 0, 12, "◂▌17«•••··· ", 1},
		{"the elements an unaligned barrier overtook wait, persisted",
			fixture.Overtaken("a/0", 0, 6, 4), 0, 8, "◂••••·· ", 1},
		{"overtaken elements in buckets", fixture.Overtaken("a/0", 0, 100, 25), 0, 11, "◂•••·······", 10},
		{"a narrow strip drops the jumping barrier's id, then its mark",
			fixture.Overtaken("a/0", 0, 6, 3, fixture.Overtaking(1264, 3)), 0, 6, "◂▌«••·", 2},
		{"a later aligned barrier behind an overtaking one",
			fixture.Overtaken("a/0", 0, 8, 2, fixture.Overtaking(17, 2), fixture.Barrier(18, 4)), 0, 14, "◂▌17«••··▌18· ", 1},
		{"a recorded channel", fixture.Recording("a/0", 0, 3, 7), 0, 6, "●···  ", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, scale := renderStrip(st, tc.in, tc.aligning, tc.w, 0)
			if got != tc.want || scale != tc.scale {
				t.Fatalf("got %q (×%d), want %q (×%d)", got, scale, tc.want, tc.scale)
			}
			if common.Width(got) > tc.w {
				t.Fatalf("%d cells, more than %d", common.Width(got), tc.w)
			}
		})
	}
}

func TestStripSuffix(t *testing.T) {
	st := common.NewStyles(lipgloss.DefaultRenderer(), common.DefaultTheme())
	for _, tc := range []struct {
		in          view.InputView
		scale       int64
		long, short string
	}{
		{view.InputView{Blocked: true, HeldBack: 1234}, 1, "BLOCKED 1,234", "BLOCKED 1,234"},
		{fixture.Queue("a/0", 0, 120), 10, "120 ·=10", "120 ·=10"},
		{fixture.Queue("a/0", 0, 0), 3, "0", "0"}, // an empty queue needs no scale
		{fixture.Overtaken("a/0", 0, 2, 16), 1, "2 •2 persisted", "2 •2"},
		{fixture.Overtaken("a/0", 0, 9, 3), 1, "9 •3 persisted", "9 •3"},
		{fixture.Recording("a/0", 0, 12, 1500), 1, "12 REC 1,500 persisted", "12 REC 1,500"},
	} {
		if got := stripSuffix(st, tc.in, tc.scale, true); got != tc.long {
			t.Errorf("long: %q, want %q", got, tc.long)
		}
		if got := stripSuffix(st, tc.in, tc.scale, false); got != tc.short {
			t.Errorf("short: %q, want %q", got, tc.short)
		}
	}
}

func TestLayoutChipsDropsTheDroppableFirst(t *testing.T) {
	st := common.NewStyles(lipgloss.DefaultRenderer(), common.DefaultTheme())
	chips := []chip{{text: "▸0", style: st.Text}, {text: "RUN", style: st.Text}, {text: "2.1k/s", style: st.Text, drop: 1},
		{text: "bp OK", style: st.Text, drop: 2}, {text: "✓14", style: st.Text}}
	for _, tc := range []struct {
		w    int
		want string
	}{
		{40, "▸0 RUN 2.1k/s bp OK ✓14"},
		{20, "▸0 RUN 2.1k/s ✓14"},
		{12, "▸0 RUN ✓14"},
		{8, "▸0 RUN…"},
	} {
		if got := layoutChips(chips, tc.w); got != tc.want {
			t.Errorf("width %d: got %q, want %q", tc.w, got, tc.want)
		}
	}
	// Short forms come in after the drops; pad keeps room for a value
	// that grows.
	align := []chip{{text: "▸0", style: st.Text}, {text: "2.1k/s", style: st.Text, drop: 1},
		{text: "ALIGNING #14 38ms", short: "ALIGN #14 38ms", pad: 1, style: st.Text}}
	for _, tc := range []struct {
		w    int
		want string
	}{
		{28, "▸0 2.1k/s ALIGNING #14 38ms"},
		{27, "▸0 ALIGNING #14 38ms"},
		{21, "▸0 ALIGNING #14 38ms"},
		{20, "▸0 ALIGN #14 38ms"},
	} {
		if got := layoutChips(align, tc.w); got != tc.want {
			t.Errorf("width %d: got %q, want %q", tc.w, got, tc.want)
		}
	}
}

// A blocked channel's held-back count shows whole even at 80 columns, where
// strips are narrow: the strip gives way to it.
func TestBlockedCountShowsWholeAt80Columns(t *testing.T) {
	s := fixture.Aligning()
	j := s.Tasks["join/1"]
	j.Alignment = view.AlignmentView{Checkpoint: 4, Since: s.Now.Add(-fixture.Ms(169))}
	j.Inputs = []view.InputView{
		fixture.Queue("parse-orders/0", 0, 108, fixture.Barrier(4, 1)),
		fixture.Queue("parse-orders/1", 0, 92, fixture.Barrier(4, 2)),
		fixture.Queue("parse-payments/0", 1, 55, fixture.Barrier(4, 0)),
		{From: "parse-payments/1", Input: 1, Blocked: true, HeldBack: 1234, Queue: view.QueueView{Queued: 1234}},
	}
	s.Tasks["join/1"] = j
	g := sampled(s)
	compact, _ := g.Heights()
	g.SetSize(80, compact+1) // what an 80×24 terminal gives the graph
	if v := g.View(); !strings.Contains(v, "BLOCKED 1,234") {
		t.Fatalf("the held-back count is cut:\n%s", v)
	}
}

func TestFormatOffsets(t *testing.T) {
	if got := formatOffsets(map[int32]int64{3: 1201, 2: 1190, 10: 5}); got != "p2:1190 p3:1201 p10:5" {
		t.Errorf("got %q", got)
	}
}

func TestSlowedSubtaskIsMarked(t *testing.T) {
	s := fixture.Slowed()
	g := sampled(s)
	for _, tc := range []struct {
		w    int
		want string
	}{
		{46, "1 RUN SLOW ×10 4s"}, {31, "1 RUN SLOW ×10 4s"}, {20, "1 RUN SLOW ×10"},
	} {
		line := g.coreLine(s.Operators[4], 1, s.Tasks["join/1"], tc.w, g.ctx.PendingCheckpoint())
		if !strings.HasPrefix(line, " "+tc.want) {
			t.Errorf("width %d: %q, want it to start with %q", tc.w, line, tc.want)
		}
	}
	// Over: no mark.
	j := s.Tasks["join/1"]
	j.SlowUntil = s.Now
	if line := g.coreLine(s.Operators[4], 1, j, 46, nil); strings.Contains(line, "SLOW") {
		t.Errorf("the slow fault is over: %q", line)
	}
}

// In at-least-once mode nothing aligns: a subtask whose barriers have not
// all come says it counts them.
func TestAtLeastOnceSubtaskCountsBarriers(t *testing.T) {
	s := fixture.AtLeastOnce()
	j := s.Tasks["join/0"]
	j.Alignment = view.AlignmentView{Checkpoint: 17, Since: s.Now.Add(-1200 * time.Millisecond)}
	s.Tasks["join/0"] = j
	g := sampled(s)
	line := g.coreLine(s.Operators[4], 0, s.Tasks["join/0"], 46, g.ctx.PendingCheckpoint())
	if got := strings.TrimRight(line, " "); !strings.Contains(got, "COUNTING #17 1.2s") || strings.Contains(got, "ALIGN") {
		t.Fatalf("got %q, want COUNTING #17 1.2s", got)
	}
}

// A subtask that takes its checkpoint unaligned says so instead of
// ALIGNING, and says when the aligned-checkpoint timeout switched it.
func TestUnalignedSubtaskIsMarked(t *testing.T) {
	for _, tc := range []struct {
		name string
		snap view.Snapshot
		task string
		w    int
		want string
	}{
		{"unaligned", fixture.Unaligned(), "join/0", 46, "▸0 RUN 3.9k/s bp LOW UNALIGNED #17 38ms"},
		{"unaligned, narrow", fixture.Unaligned(), "join/0", 31, "▸0 RUN bp LOW UNALIGNED #17"},
		{"timed out", fixture.TimedOut(), "join/0", 46, "▸0 RUN bp LOW TIMED OUT → UNALIGNED #14 140ms"},
		{"timed out, narrower", fixture.TimedOut(), "join/0", 38, "▸0 RUN bp LOW TIMED OUT→UNALIGNED #14"},
		{"timed out, narrow", fixture.TimedOut(), "join/0", 31, "▸0 RUN bp LOW →UNALIGNED #14"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := sampled(tc.snap)
			line := g.coreLine(tc.snap.Operators[4], 0, tc.snap.Tasks[tc.task], tc.w, g.ctx.PendingCheckpoint())
			if got := strings.TrimRight(line, " "); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Unaligned, a subtask blocks nothing: a channel is never drawn BLOCKED,
// and the strips show the jump, the persisted elements and the recorded
// channels, with their counts whole at 80 and 120 columns.
func TestUnalignedStrips(t *testing.T) {
	s := fixture.Unaligned()
	j := s.Tasks["join/0"]
	j.Inputs[0].Blocked, j.Inputs[0].HeldBack = true, 6 // a sample taken as the switch happened
	s.Tasks["join/0"] = j
	for _, tc := range []struct {
		w    int
		want []string
	}{
		{120, []string{"◂••••······", "10 •4 persisted", "●············", "12 REC 7 persisted", "◂▌17«•••·····", "8 •3 persisted", "◂▌17«••••••·····", "11 •6 persisted"}},
		{80, []string{"◂••••······", "10 •4 ", "12 REC 7 ", "◂▌17«•••·····", "8 •3 ", "◂▌17«••••••", "11 •6"}},
	} {
		g := sampled(s)
		compact, roomy := g.Heights()
		if tc.w == 80 {
			g.SetSize(tc.w, compact+1)
		} else {
			g.SetSize(tc.w, roomy+1)
		}
		v := g.View()
		for _, want := range tc.want {
			if !strings.Contains(v, want) {
				t.Errorf("%d columns: no %q in\n%s", tc.w, want, v)
			}
		}
		if strings.Contains(v, "BLOCKED") {
			t.Errorf("%d columns: a channel of an unaligned subtask is blocked:\n%s", tc.w, v)
		}
	}
}

// A guided tour's highlight marks a subtask's cell, or with Inputs its
// strips, with » in place of a space (or of the selection's ▸): the
// layout does not move. When only one row's strips fit, the highlighted
// subtask's row shows them.
func TestTourHighlight(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hl     view.Highlight
		roomy  bool
		want   []string
		absent []string
		under  string // what the marker stands in place of
	}{
		{"a cell", view.Highlight{Task: "join/1"}, false, []string{"▸0 RUN", "»1 RUN"}, []string{"»◂"}, " "},
		{"the selected cell", view.Highlight{Task: "join/0"}, false, []string{"»0 RUN"}, []string{"▸0 RUN"}, "▸"},
		{"join/1's strips", view.Highlight{Task: "join/1", Inputs: true}, false,
			[]string{"9         »◂···▌14", "12        »◂·····▌14", "5         »◂···  ", "10        »◂······▌14"}, []string{"»1 RUN"}, " "},
		{"revenue/0's strips, at 80×24", view.Highlight{Task: "revenue/0", Inputs: true}, false,
			[]string{"join/0»◂···", "join/1»◂··"}, []string{"parse-orders/0"}, ""},
		{"revenue/0's strips, roomy", view.Highlight{Task: "revenue/0", Inputs: true}, true,
			[]string{"join/0»◂···", "parse-orders/0 ◂"}, nil, " "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain := sampled(fixture.Running())
			g := sampled(fixture.Touring(fixture.Running(), &view.Tour{Highlight: tc.hl}))
			compact, roomy := g.Heights()
			h := compact + 1
			if tc.roomy {
				h = roomy + 1
			}
			g.SetSize(80, h)
			plain.SetSize(80, h)
			got := g.View()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("no %q in\n%s", w, got)
				}
			}
			for _, w := range tc.absent {
				if strings.Contains(got, w) {
					t.Errorf("%q in\n%s", w, got)
				}
			}
			if tc.under != "" && strings.ReplaceAll(got, "»", tc.under) != plain.View() {
				t.Errorf("the marker moved the layout:\n%s\nwas\n%s", got, plain.View())
			}
		})
	}
}

// The selection starts where alignment happens, join/0, also when the
// first sample comes before the subtasks run and report their inputs
// (it started on orders-source/0 then, and stayed there).
func TestSelectionStartsOnTheFirstSubtaskThatAligns(t *testing.T) {
	s := fixture.Running()
	if g := sampled(s); g.Selected() != "join/0" {
		t.Fatalf("selected %q from a running job's sample, want join/0", g.Selected())
	}
	early := s
	early.Tasks = map[string]view.Task{}
	for name, task := range s.Tasks {
		task.Inputs = nil
		early.Tasks[name] = task
	}
	g := sampled(early)
	if g.Selected() != "join/0" {
		t.Fatalf("selected %q from a sample taken before the subtasks reported their inputs, want join/0", g.Selected())
	}
	g.Update(common.SnapshotMsg{Snapshot: s})
	if g.Selected() != "join/0" {
		t.Fatalf("selected %q once the subtasks reported, want join/0 still", g.Selected())
	}
}

// A barrier of a checkpoint that completed (12 here, with 13 completed
// and 14 pending after it) is still an element of its queue, drawn as
// one: no strip shows ▌12 as if it were under way.
func TestEndedCheckpointsBarriersAreDrawnAsElements(t *testing.T) {
	s := fixture.Running()
	j := s.Tasks["join/0"]
	j.Inputs[0] = fixture.Queue("parse-orders/0", 0, 9, fixture.Barrier(12, 1), fixture.Barrier(14, 4))
	s.Tasks["join/0"] = j
	g := sampled(s)
	g.SetSize(120, 30)
	v := g.View()
	if strings.Contains(v, "▌12") || !strings.Contains(v, "◂····▌14") {
		t.Fatalf("strip with the barrier of completed checkpoint 12:\n%s", v)
	}
}

// An attached job's REST API does not expose its input queues: where a
// run's strips would be, the cell says so, and draws no queue it does not
// know.
func TestAnAttachedJobsQueuesAreSaidNotExposed(t *testing.T) {
	s := fixture.Running()
	s.Job.Remote = "http://127.0.0.1:8081"
	for name, task := range s.Tasks {
		task.Inputs = nil
		s.Tasks[name] = task
	}
	g := sampled(s)
	g.SetSize(160, 40)
	out := g.View()
	if !strings.Contains(out, "queues: not in the REST API") || strings.Contains(out, "◂") {
		t.Fatalf("the attached job's graph:\n%s", out)
	}
	s.Job.Remote = ""
	g = sampled(s)
	g.SetSize(160, 40)
	if strings.Contains(g.View(), "not exposed") {
		t.Fatal("a run's own job says its queues are not exposed")
	}
}
