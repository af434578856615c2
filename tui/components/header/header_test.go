package header

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

// When a guided tour points at the header, its status and its mode are
// marked, each in place of a space before it.
func TestTourHighlight(t *testing.T) {
	for _, w := range []int{80, 120} {
		draw := func(tour *view.Tour) string {
			ctx := common.NewContext(nil)
			ctx.Snap, ctx.HasSnap = fixture.Touring(fixture.Running(), tour), true
			ctx.Mode = ctx.Snap.Job.Mode
			h := New(ctx)
			h.SetSize(w, 1)
			return h.View()
		}
		got := draw(&view.Tour{Highlight: view.Highlight{Header: true}})
		if !strings.Contains(got, "payments »RUNNING »exactly-once · aligned") {
			t.Fatalf("%d: no markers: %q", w, got)
		}
		if plain := draw(nil); strings.ReplaceAll(got, "»", " ") != plain {
			t.Errorf("%d: the markers moved the line: %q, was %q", w, got, plain)
		}
	}
}

// A run on another state backend or checkpoint storage than the default
// heap and filesystem says its classic name, as Flink's docs taught them.
func TestHeaderNamesTheClassicBackend(t *testing.T) {
	for _, tc := range []struct{ backend, storage, want string }{
		{"heap", "filesystem", ""},
		{"heap", "jobmanager", "MemoryStateBackend"},
		{"badger", "filesystem", "RocksDBStateBackend"},
		{"badger", "jobmanager", "badger · jobmanager storage"},
	} {
		ctx := common.NewContext(nil)
		ctx.Snap, ctx.HasSnap = fixture.Running(), true
		ctx.Snap.Job.StateBackend, ctx.Snap.Job.CheckpointStorage = tc.backend, tc.storage
		ctx.Mode = ctx.Snap.Job.Mode
		h := New(ctx)
		h.SetSize(120, 1)
		got := h.View()
		for _, name := range []string{"MemoryStateBackend", "RocksDBStateBackend", "FsStateBackend", "jobmanager storage"} {
			if strings.Contains(got, name) != (name == tc.want || tc.want != "" && strings.Contains(tc.want, name)) {
				t.Errorf("%s + %s: header %q, want %q", tc.backend, tc.storage, got, tc.want)
			}
		}
	}
}
