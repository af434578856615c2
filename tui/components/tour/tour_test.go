package tour

import (
	"os"
	"strings"
	"testing"

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

// panel draws tour in a panel w×h and returns its lines, right spaces
// trimmed.
func panel(t *testing.T, tour *view.Tour, w, h int) []string {
	t.Helper()
	ctx := common.NewContext(nil)
	ctx.Snap, ctx.HasSnap = fixture.Touring(fixture.Running(), tour), true
	p := New(ctx)
	p.SetSize(w, h)
	lines := strings.Split(p.View(), "\n")
	if len(lines) != h {
		t.Fatalf("%d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if lw := common.Width(l); lw != w {
			t.Fatalf("line %d is %d wide, want %d: %q", i, lw, w, l)
		}
		lines[i] = strings.TrimRight(l, " ")
	}
	return lines
}

func TestPanelSays(t *testing.T) {
	for _, tc := range []struct {
		name string
		tour *view.Tour
		w, h int
		want []string // lines, in this order (not necessarily next to each other)
	}{
		{"a step at the minimum", fixture.TourStep(), 80, MinHeight, []string{
			"── tour · Barriers and alignment · step 3/9 ───",
			" Checkpoint 14's barriers have reached join/1 on three of its four inputs. A",
			" waiting for: join/1 to align…", "n next · b back · r restart · q quit\n",
		}},
		{"room for the link", fixture.TourStep(), 120, 13, []string{
			"── tour · Barriers and alignment · step 3/9 ──────────────────────────────────── n next · b back · r restart · q quit ──",
			" Checkpoint 14's barriers have reached join/1",
			" https://nightlies.apache.org/flink/flink-docs-stable/docs/concepts/stateful-stream-processing/#barriers",
			" waiting for: join/1 to align…",
		}},
		{"a check held, the key pressed for the learner", fixture.TourHeld(), 80, 8, []string{
			"step 4/9",
			" pressing x then 1 (autoplay)",
			" ✓ join/1 took its snapshot once barrier 14 came on all 4 inputs",
		}},
		{"a check failed", fixture.TourFailed(), 80, 8, []string{
			"step 7/9",
			" n next ", "n next · b back · r restart · q quit\n",
			" ✗ nothing lost, nothing duplicated — 12 records committed twice\n",
		}},
		{"a check failed, and why wraps", func() *view.Tour {
			t := fixture.TourFailed()
			t.Check.Why = "the verifier saw 12 records twice after the restore from checkpoint 13"
			return t
		}(), 80, 8, []string{
			" ✗ nothing lost, nothing duplicated — the verifier saw 12 records twice after",
			"   the restore from checkpoint 13",
		}},
		{"done", fixture.TourDone(), 80, 8, []string{
			"step 9/9",
			"r restart · q quit ──", " tour complete: a check did not hold ✗ · r starts it again, q quits\n",
		}},
		{"done, every check held", func() *view.Tour { t := fixture.TourDone(); t.Passed = true; t.Check.Held = true; return t }(), 80, 8, []string{
			" tour complete: every check held ✓",
			" ✓ nothing lost, nothing duplicated",
		}},
		{"an earlier step", func() *view.Tour { t := fixture.TourStep(); t.Step, t.Earlier = 2, true; return t }(), 120, 13, []string{
			"── tour · Barriers and alignment · step 2/9 (earlier step — n to return) ──",
		}},
		{"waiting and asking at once", func() *view.Tour { t := fixture.TourStep(); t.Key = "c"; return t }(), 120, 13, []string{
			" waiting for: join/1 to align… · press c",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := panel(t, tc.tour, tc.w, tc.h)
			text := strings.Join(lines, "\n") + "\n"
			at := 0
			for _, w := range tc.want {
				i := strings.Index(text[at:], w)
				if i < 0 {
					t.Fatalf("no %q after %d in\n%s", w, at, text)
				}
				at += i + len(w)
			}
			if strings.Contains(text, "**") {
				t.Errorf("the bold markers show:\n%s", text)
			}
		})
	}
}

// At the minimum, the narration keeps its four lines whole beside the
// status: the check that held gives its line up, and the link gives way
// first. A check that did not hold keeps its line.
func TestPanelAtItsMinimum(t *testing.T) {
	lines := panel(t, fixture.TourHeld(), 80, MinHeight)
	want := []string{"── tour", " Checkpoint 14's", " channel that", " it too:", " record before", " pressing x then 1"}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q does not start with %q", i, lines[i], w)
		}
	}
	failed := fixture.TourHeld()
	failed.Check.Held, failed.Check.Why = false, "join/1 never aligned"
	if v := strings.Join(panel(t, failed, 80, MinHeight), "\n"); !strings.Contains(v, "✗ join/1") || !strings.Contains(v, "…") {
		t.Errorf("a check that did not hold gave its line to the narration:\n%s", v)
	}
	if strings.Contains(strings.Join(lines, "\n"), "https://") {
		t.Errorf("the link took a line of the narration:\n%s", strings.Join(lines, "\n"))
	}
}

// No number and no key is cut, however narrow: the panel wraps them.
func TestPanelNeverCutsANumberOrAKey(t *testing.T) {
	for _, w := range []int{30, 40, 80} {
		tour := fixture.TourFailed()
		tour.Title = "A rather long title for a tour about barriers and alignment"
		tour.Check.Why = "the verifier saw 12 records twice after the restore from checkpoint 13"
		text := strings.Join(panel(t, tour, w, 20), "\n")
		flat := strings.Join(strings.Fields(text), " ")
		for _, s := range []string{"step 7/9", "n next", "b back", "r restart", "q quit", "12 records", "checkpoint 13"} {
			if !strings.Contains(flat, s) {
				t.Errorf("width %d: %q is cut:\n%s", w, s, text)
			}
		}
	}
}

func TestMarkedTerms(t *testing.T) {
	plain, bold := lipgloss.NewStyle(), lipgloss.NewStyle().Bold(true)
	for _, tc := range []struct{ in, want string }{
		{"a **barrier** here", "a [barrier] here"},
		{"the **barriers**, then", "the [barriers], then"},
		{"**two words** bold", "[two] [words] bold"},
		{"unclosed **bold to the end", "unclosed [bold] [to] [the] [end]"},
		{"one\n\ntwo", "one | | two"},
	} {
		var got []string
		for _, u := range marked(tc.in, plain, bold) {
			if u == nil {
				got = append(got, "|")
				continue
			}
			var b strings.Builder
			for _, p := range u {
				if p.style.GetBold() {
					b.WriteString("[" + p.text + "]")
				} else {
					b.WriteString(p.text)
				}
			}
			got = append(got, b.String())
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, g, tc.want)
		}
	}
}
