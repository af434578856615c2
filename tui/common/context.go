// Package common is what the UI's components share (gh-dash's
// internal/tui/context, soft-serve's pkg/ui/common): the Component
// interface and the Context every component reads, the theme and the
// styles built from it, the key bindings, the formatting and layout
// helpers, and the messages the components handle and send. It imports
// nothing of faultline but runtime/view, and no component.
package common

import (
	"fmt"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// Component is what every pane and overlay is (soft-serve's
// common.Component): a Bubble Tea model that lists its keys for the help
// line and is told its size by the root model, which owns the layout and
// routes messages; only the focused component gets key messages.
type Component interface {
	tea.Model
	help.KeyMap
	SetSize(width, height int)
}

// Context is what every component shares (gh-dash's ProgramContext): the
// styles built once from the theme, the latest sample of the job, and the
// settings as the user asked for them. Components read it in View; only the
// root model writes it, in Update.
type Context struct {
	Styles *Styles
	Keys   KeyMap

	// Snap is the latest Snapshot; HasSnap is false until the first.
	Snap    view.Snapshot
	HasSnap bool

	// The settings the user changes from the keyboard, as the UI shows them:
	// what was asked for, until a Snapshot taken after the command shows
	// it (or, a few samples later, shows that the job did not take it).
	Tempo  view.Tempo
	Paused bool
	Mode   string
	Rate   float64

	// Selected is the subtask selected in the graph ("" before the first
	// sample): the fault menu acts on it, the checkpoint detail marks it.
	Selected string

	// Modes knows which checkpointing mode each checkpoint was taken in.
	Modes ModeLog

	// Lifecycle is set when the job can be stopped and cancelled from the
	// keys (an attached job: see tui.Lifecycle).
	Lifecycle bool

	// Width and Height are the terminal's: from WideWidth columns on, the
	// panes wrap what they would otherwise cut.
	Width, Height int
}

// WideWidth is the terminal width from which no text that carries a
// number is cut: the panes wrap it instead. Narrower terminals get short
// forms, cut at word boundaries.
const WideWidth = 120

// Wide reports whether the terminal is WideWidth columns or more.
func (c *Context) Wide() bool { return c.Width >= WideWidth }

// CheckpointMode is the mode checkpoint cp was taken in ("" when not
// known; see ModeLog.Mode).
func (c *Context) CheckpointMode(cp *view.Checkpoint) string {
	return c.Modes.Mode(cp, c.Snap.Job.Mode)
}

// NewContext returns the Context of a UI with faultline's theme and keys,
// its styles built for the terminal r writes to (nil: lipgloss's default
// renderer), before the first sample.
func NewContext(r *lipgloss.Renderer) *Context {
	return NewContextWith(r, DefaultTheme())
}

// NewContextWith is NewContext in theme t.
func NewContextWith(r *lipgloss.Renderer, t Theme) *Context {
	return &Context{Styles: NewStyles(r, t), Keys: DefaultKeyMap()}
}

// PendingCheckpoint returns the newest pending checkpoint in History, the
// one whose acknowledgements the graph shows, or nil.
func (c *Context) PendingCheckpoint() *view.Checkpoint {
	for i := range c.Snap.Checkpoints.History {
		if c.Snap.Checkpoints.History[i].Status == view.StatusPending {
			return &c.Snap.Checkpoints.History[i]
		}
	}
	return nil
}

// CheckpointByID returns the checkpoint id from History, or nil.
func (c *Context) CheckpointByID(id int64) *view.Checkpoint {
	for i := range c.Snap.Checkpoints.History {
		if c.Snap.Checkpoints.History[i].ID == id {
			return &c.Snap.Checkpoints.History[i]
		}
	}
	return nil
}

// TaskNames lists every subtask in spec order: operators in order, then
// subtask index.
func (c *Context) TaskNames() []string {
	var out []string
	for _, op := range c.Snap.Operators {
		for i := range op.Parallelism {
			out = append(out, TaskName(op.Name, i))
		}
	}
	return out
}

// TaskName names a subtask as Flink does: "operator/index".
func TaskName(op string, index int) string { return fmt.Sprintf("%s/%d", op, index) }

// Tour is the guided tour running on the job (`faultline tour NAME`), nil
// outside a tour.
func (c *Context) Tour() *view.Tour { return c.Snap.Tour }

// Highlight is the part of the screen the tour's step points at; the zero
// Highlight (nothing) outside a tour.
func (c *Context) Highlight() view.Highlight {
	if c.Snap.Tour == nil {
		return view.Highlight{}
	}
	return c.Snap.Tour.Highlight
}

// HighlightMarker goes before what a guided tour points at (»join/1's
// cell, its strips, a checkpoint's row, the verify line, the restarts
// pane's title, the header's status and mode). It always takes the place
// of a space or a marker already there, so that the layout never shifts,
// and shows in a capture without colours; the Highlight style adds
// reverse video.
const HighlightMarker = "»"

// NoKeys is embedded by components without key bindings of their own.
type NoKeys struct{}

// ShortHelp implements help.KeyMap.
func (NoKeys) ShortHelp() []key.Binding { return nil }

// FullHelp implements help.KeyMap.
func (NoKeys) FullHelp() [][]key.Binding { return nil }

// FrozenFor is how long the world has been frozen, as of the snapshot.
func FrozenFor(snap *view.Snapshot) (time.Duration, bool) {
	if snap.Input.FrozenSince.IsZero() {
		return 0, false
	}
	return max(snap.Now.Sub(snap.Input.FrozenSince), 0), true
}

// JobNow is the job's clock as of the snapshot (Snapshot.JobNow), on which
// alignments, slow faults and restart delays are timed; a snapshot that
// carries none (a drawn fixture) reads the wall clock's.
func JobNow(snap *view.Snapshot) time.Time {
	if snap.JobNow.IsZero() {
		return snap.Now
	}
	return snap.JobNow
}

// CheckpointDuration is c's end-to-end time on the job's clock (so far,
// while pending); a checkpoint that carries none reads the wall clock's.
func CheckpointDuration(snap *view.Snapshot, c *view.Checkpoint) time.Duration {
	switch {
	case c.Duration > 0:
		return c.Duration
	case c.Status == view.StatusPending:
		return max(snap.Now.Sub(c.TriggerTime), 0)
	}
	return c.EndTime.Sub(c.TriggerTime)
}

// FrozenNote is ", 11s frozen" style text for a figure that leaves out
// frozen time d, "" when there was none worth saying (under a second).
func FrozenNote(d time.Duration) string {
	if d < time.Second {
		return ""
	}
	return HumanDuration(d.Truncate(time.Second)) + " frozen"
}
