package status

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

func TestFlashExpiresWithTheJobsClock(t *testing.T) {
	ctx := common.NewContext(nil)
	ctx.Snap, ctx.HasSnap = fixture.Running(), true
	s := New(ctx)
	s.Update(common.FlashMsg{Text: "checkpoint 15 triggered", Level: common.LevelSuccess})
	if got := s.Flash(); got != "checkpoint 15 triggered" {
		t.Fatalf("flash %q", got)
	}
	ctx.Snap.Now = ctx.Snap.Now.Add(flashFor)
	s.Update(common.SnapshotMsg{Snapshot: ctx.Snap})
	if got := s.Flash(); got != "checkpoint 15 triggered" {
		t.Fatalf("flash %q gone before its time", got)
	}
	ctx.Snap.Now = ctx.Snap.Now.Add(1)
	s.Update(common.SnapshotMsg{Snapshot: ctx.Snap})
	if got := s.Flash(); got != "" {
		t.Fatalf("flash %q still shown", got)
	}
}

func TestVerifyLineSeparatesAtLeastOnceDuplicates(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    view.Verify
		want string
	}{
		{"clean", view.Verify{Available: true, Committed: 100}, "verify  committed 100  dup 0  lost 0 ✓"},
		{"all from at-least-once", view.Verify{Available: true, Committed: 100, Duplicates: 23, DuplicatesAtLeastOnce: 23},
			"verify  committed 100  dup 23 (at-least-once)  lost 0 ✓"},
		{"beyond them", view.Verify{Available: true, Committed: 100, Duplicates: 28, DuplicatesAtLeastOnce: 23},
			"verify  committed 100  dup 5 ✗ DUPLICATES + 23 (at-least-once)  lost 0"},
		{"none from at-least-once", view.Verify{Available: true, Committed: 100, Duplicates: 5},
			"verify  committed 100  dup 5 ✗ DUPLICATES  lost 0"},
		{"lost", view.Verify{Available: true, Committed: 100, Duplicates: 2, DuplicatesAtLeastOnce: 2, Lost: 1},
			"verify  committed 100  dup 2 (at-least-once)  lost 1 ✗ LOST"},
		{"turned off by the job spec", view.Verify{Off: "verify: false in the job spec"}, "verify  off: verify: false in the job spec"},
		{"cannot check", view.Verify{Err: "the output topic is gone"}, "verify  cannot check: the output topic is gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := common.NewContext(nil)
			ctx.Snap, ctx.HasSnap = fixture.Running(), true
			ctx.Snap.Verify = tc.v
			s := New(ctx)
			if got := s.verifyText(false); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestMain(m *testing.M) {
	// The checks compare plain text: no colour, no bold.
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Exit(m.Run())
}

// The paid orders an unaligned checkpoint holds in flight are said next to
// the checkpoint the check covers: not in its output yet, and not lost.
func TestVerifyLineSaysWhatIsInFlight(t *testing.T) {
	ctx := common.NewContext(nil)
	ctx.Snap, ctx.HasSnap = fixture.Running(), true
	ctx.Snap.Verify = view.Verify{Available: true, Committed: 100, AsOf: 11, InFlight: 1177}
	got := New(ctx).verifyText(true)
	if want := "verify  committed 100  dup 0  lost 0 ✓  as of #11 (1,177 in flight)"; !strings.HasPrefix(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// The verify line a guided tour points at starts with », in place of
// its leading space.
func TestTourHighlight(t *testing.T) {
	draw := func(tour *view.Tour) string {
		ctx := common.NewContext(nil)
		ctx.Snap, ctx.HasSnap = fixture.Touring(fixture.Running(), tour), true
		s := New(ctx)
		s.SetSize(80, 1)
		return s.View()
	}
	got := draw(&view.Tour{Highlight: view.Highlight{Verify: true}})
	if !strings.HasPrefix(got, "»verify  committed 18,204") {
		t.Fatalf("no marker: %q", got)
	}
	if plain := draw(nil); strings.Replace(got, "»", " ", 1) != plain {
		t.Errorf("the marker moved the line: %q, was %q", got, plain)
	}
}
