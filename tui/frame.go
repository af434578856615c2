package tui

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
)

// Frame is the screen the UI draws for snap at width×height, as plain
// text: what a terminal of that size shows once the sample has arrived
// (with no flash, and nothing the user asked for still on its way).
func Frame(snap view.Snapshot, width, height int) string {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	m := newModel(still{snap}, nil, modelConfig{renderer: r})
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	m.Update(SnapshotMsg{Snapshot: snap})
	return m.View()
}

// Unseen lists what the guided tour in snap points at (its Highlight) and
// the screen of width×height does not show with its marker: "checkpoint
// 5's row", "join/1's input strips", "the verify line". A tour that says
// "look at" something must have it on screen.
func Unseen(snap view.Snapshot, width, height int) []string {
	if snap.Tour == nil || !snap.Tour.Highlight.Any() {
		return nil
	}
	frame, h := Frame(snap, width, height), snap.Tour.Highlight
	mark := regexp.QuoteMeta(common.HighlightMarker)
	var missing []string
	need := func(what, pattern string) {
		if !regexp.MustCompile(pattern).MatchString(frame) {
			missing = append(missing, what)
		}
	}
	if h.Checkpoint != 0 {
		// The row's id, then its status word (common.CheckpointWord):
		// "» 5 completed", "»13 DAMAGED".
		need(fmt.Sprintf("checkpoint %d's row", h.Checkpoint),
			fmt.Sprintf(`%s *%d +(pending|completed|failed|DAMAGED|restored|savepoint)\b`, mark, h.Checkpoint))
	}
	if h.Task != "" {
		_, idx, _ := strings.Cut(h.Task, "/")
		if h.Inputs {
			// The strips' lead: "»◂", "»▌", or "»/0 " on one line.
			need(h.Task+"'s input strips", mark+`[◂▌/]`)
		} else {
			// The subtask's cell: "»1 RUN".
			need(h.Task, fmt.Sprintf(`%s%s +[A-Z]`, mark, regexp.QuoteMeta(idx)))
		}
	}
	if h.Verify {
		need("the verify line", mark+"verify")
	}
	if h.Restart {
		need("the restarts pane", mark+"restarts")
	}
	if h.Header {
		first, _, _ := strings.Cut(frame, "\n")
		if !strings.Contains(first, common.HighlightMarker) {
			missing = append(missing, "the header's status and mode")
		}
	}
	return missing
}

// still is a Controller that is one sample and takes no command.
type still struct{ snap view.Snapshot }

func (s still) Snapshot() Snapshot              { return s.snap }
func (still) Inject(string, string) error       { return errStill }
func (still) TriggerCheckpoint() (int64, error) { return 0, errStill }
func (still) TriggerSavepoint() (int64, error)  { return 0, errStill }
func (still) SetMode(string) error              { return errStill }
func (still) SetSourcesPaused(bool)             {}
func (still) SetTempo(Tempo)                    {}
func (still) Step()                             {}
func (still) ResetRestarts()                    {}
func (still) Resubmit() error                   { return errStill }
func (still) SetRate(float64) error             { return errStill }
func (still) Faults() []FaultChoice             { return nil }
func (still) TourKey(string) bool               { return false }

var errStill = fmt.Errorf("a still frame takes no command")
