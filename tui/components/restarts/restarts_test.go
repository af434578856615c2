package restarts

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

func TestRestartBudget(t *testing.T) {
	for _, tc := range []struct {
		r    view.Restart
		job  string
		want string
	}{
		{view.Restart{Strategy: "fixed-delay"}, "RUNNING", "attempts 0/0"},
		{view.Restart{Strategy: "none"}, "RUNNING", "no restarts"},
		{view.Restart{Strategy: "exponential-delay"}, "RUNNING", "attempts 0 (unlimited)"},
		{view.Restart{Strategy: "fixed-delay", Status: view.RestartStatus{Attempts: 1, MaxAttempts: 10, NextDelay: time.Second}}, "RUNNING", "attempts 1/10 · delay 1s"},
		{view.Restart{Strategy: "exponential-delay", Status: view.RestartStatus{Attempts: 2, NextDelay: 2 * time.Second}}, "RUNNING", "attempts 2 (unlimited) · last delay 2s"},
		{view.Restart{Strategy: "exponential-delay", Status: view.RestartStatus{Attempts: 2, NextDelay: 2 * time.Second}}, "RESTARTING", "attempts 2 (unlimited) · delay 2s"},
	} {
		if got := restartBudget(tc.r, tc.job); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.r.Strategy, got, tc.want)
		}
	}
}

// The pane a guided tour points at says so in its rule, in place of the
// space before its title.
func TestTourHighlight(t *testing.T) {
	draw := func(tour *view.Tour) string {
		ctx := common.NewContext(nil)
		ctx.Snap, ctx.HasSnap = fixture.Touring(fixture.Running(), tour), true
		p := New(ctx)
		p.SetSize(31, 5)
		return p.View()
	}
	got := draw(&view.Tour{Highlight: view.Highlight{Restart: true}})
	if !strings.HasPrefix(got, "──»restarts ───") {
		t.Fatalf("no marker:\n%s", got)
	}
	if plain := draw(nil); strings.Replace(got, "»", " ", 1) != plain {
		t.Errorf("the marker moved the layout:\n%s\nwas\n%s", got, plain)
	}
}

// A job started from a savepoint says so, not "checkpoint".
func TestRestoredFromASavepointSaysSo(t *testing.T) {
	draw := func(savepoint bool) string {
		ctx := common.NewContext(nil)
		ctx.Snap, ctx.HasSnap = fixture.Running(), true
		ctx.Snap.Checkpoints.Restored, ctx.Snap.Checkpoints.RestoredSavepoint = []int64{13}, savepoint
		p := New(ctx)
		p.SetSize(48, 8)
		return p.View()
	}
	if got := draw(true); !strings.Contains(got, "restored from savepoint 13") {
		t.Fatalf("a restore from savepoint 13:\n%s", got)
	}
	if got := draw(false); !strings.Contains(got, "restored from checkpoint 13") {
		t.Fatalf("a restore from checkpoint 13:\n%s", got)
	}
}

// However short the pane, the strategy's name shows once: on its own line,
// shortened, or in the budget's line when its own went for room.
func TestTheStrategyIsNamedOnce(t *testing.T) {
	for h := 3; h <= 8; h++ {
		ctx := common.NewContext(nil)
		ctx.Snap, ctx.HasSnap = fixture.Running(), true
		p := New(ctx)
		p.SetSize(31, h)
		if n := strings.Count(p.View(), ctx.Snap.Restart.Strategy); n > 1 {
			t.Errorf("height %d: the strategy named %d times:\n%s", h, n, p.View())
		}
	}
}
