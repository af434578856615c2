package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/internal/fixture"
)

// What a tour points at is found on the still frame at both sizes the
// tours are written for, and what the screen cannot show is named.
func TestUnseenNamesWhatATourPointsAtAndTheScreenLacks(t *testing.T) {
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			for _, h := range []view.Highlight{
				{Checkpoint: 13},
				{Task: "join/1"},
				{Task: "join/1", Inputs: true},
				{Verify: true},
				{Restart: true},
				{Header: true},
			} {
				tour := fixture.TourStep()
				tour.Highlight = h
				snap := fixture.Touring(fixture.Running(), tour)
				if got := Unseen(snap, size[0], size[1]); len(got) != 0 {
					t.Errorf("%+v: unseen %v on\n%s", h, got, Frame(snap, size[0], size[1]))
				}
			}
			tour := fixture.TourStep()
			tour.Highlight = view.Highlight{Checkpoint: 13}
			damaged := fixture.Touring(fixture.Running(), tour)
			damaged.Checkpoints.History[1].Damaged = "checksum mismatch in join/1's state"
			if got := Unseen(damaged, size[0], size[1]); len(got) != 0 {
				t.Errorf("a damaged checkpoint's row: unseen %v on\n%s", got, Frame(damaged, size[0], size[1]))
			}
			tour = fixture.TourStep()
			tour.Highlight = view.Highlight{Checkpoint: 7} // not in the history
			if got := Unseen(fixture.Touring(fixture.Running(), tour), size[0], size[1]); !slices.Equal(got, []string{"checkpoint 7's row"}) {
				t.Errorf("a checkpoint not in the history: unseen %v", got)
			}
		})
	}
}

// A still frame is plain text of the terminal's size.
func TestFrameIsPlainTextOfTheTerminalsSize(t *testing.T) {
	f := Frame(fixture.Running(), 80, 24)
	lines := strings.Split(f, "\n")
	if len(lines) != 24 || strings.Contains(f, "\x1b[") {
		t.Fatalf("%d lines, escapes %v:\n%s", len(lines), strings.Contains(f, "\x1b["), f)
	}
	if !strings.Contains(lines[0], "orders ⋈ payments") {
		t.Fatalf("the header:\n%s", f)
	}
}
