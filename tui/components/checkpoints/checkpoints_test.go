package checkpoints

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

// view draws the history of s in w×h.
func draw(s view.Snapshot, w, h int) string {
	ctx := common.NewContext(nil)
	ctx.Snap, ctx.HasSnap = s, true
	p := New(ctx)
	p.Update(common.SnapshotMsg{Snapshot: s})
	p.SetSize(w, h)
	return p.View()
}

// The row a guided tour points at has » in the selection's column, and
// stays in view while the table follows the newest checkpoint.
func TestTourHighlight(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    int
		id   int64
		want string
	}{
		{"in view", 6, 13, "»13 completed"},
		{"scrolled into view", 4, 12, "»12 completed"}, // two rows: 14 and 13 at first
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fixture.Touring(fixture.Running(), &view.Tour{Highlight: view.Highlight{Checkpoint: tc.id}})
			got := draw(s, 80, tc.h)
			if !strings.Contains(got, tc.want) {
				t.Fatalf("no %q in\n%s", tc.want, got)
			}
			if tc.h == 6 {
				if plain := draw(fixture.Running(), 80, tc.h); strings.ReplaceAll(got, "»", " ") != plain {
					t.Errorf("the marker moved the layout:\n%s\nwas\n%s", got, plain)
				}
			}
		})
	}
}
