package tui

import (
	"fmt"
	"slices"

	"faultline/runtime/view"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
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
	Snap    Snapshot
	HasSnap bool

	// The settings the user changes from the keyboard, as the UI shows them:
	// what was asked for, until a Snapshot taken after the command shows
	// it (or, a few samples later, shows that the job did not take it).
	Tempo  Tempo
	Paused bool
	Mode   string
	Rate   float64

	// Selected is the subtask selected in the graph ("" before the first
	// sample): the fault menu acts on it, the checkpoint detail marks it.
	Selected string
}

// pendingCheckpoint returns the newest pending checkpoint in History, the
// one whose acknowledgements the graph shows, or nil.
func (c *Context) pendingCheckpoint() *view.Checkpoint {
	for i := range c.Snap.Checkpoints.History {
		if c.Snap.Checkpoints.History[i].Status == view.StatusPending {
			return &c.Snap.Checkpoints.History[i]
		}
	}
	return nil
}

// checkpointByID returns the checkpoint id from History, or nil.
func (c *Context) checkpointByID(id int64) *view.Checkpoint {
	for i := range c.Snap.Checkpoints.History {
		if c.Snap.Checkpoints.History[i].ID == id {
			return &c.Snap.Checkpoints.History[i]
		}
	}
	return nil
}

// taskNames lists every subtask in spec order: operators in order, then
// subtask index.
func (c *Context) taskNames() []string {
	var out []string
	for _, op := range c.Snap.Operators {
		for i := range op.Parallelism {
			out = append(out, taskName(op.Name, i))
		}
	}
	return out
}

// taskName names a subtask as Flink does: "operator/index".
func taskName(op string, index int) string { return fmt.Sprintf("%s/%d", op, index) }

// acked reports whether task acknowledged cp, and whether cp still waits
// for it.
func acked(cp *view.Checkpoint, task string) (done, waiting bool) {
	if _, ok := cp.AckedTasks[task]; ok {
		return true, false
	}
	return false, slices.Contains(cp.WaitingFor, task)
}

// update hands msg to a component and gives back the component (Update
// returns the tea.Model interface; every component here is a pointer that
// returns itself).
func update[C tea.Model](c C, msg tea.Msg) (C, tea.Cmd) {
	m, cmd := c.Update(msg)
	if next, ok := m.(C); ok {
		return next, cmd
	}
	return c, cmd
}

// noKeys is embedded by components without key bindings of their own.
type noKeys struct{}

// ShortHelp implements help.KeyMap.
func (noKeys) ShortHelp() []key.Binding { return nil }

// FullHelp implements help.KeyMap.
func (noKeys) FullHelp() [][]key.Binding { return nil }

// Every pane and overlay is a Component.
var (
	_ Component = (*headerBar)(nil)
	_ Component = (*graphPane)(nil)
	_ Component = (*checkpointsPane)(nil)
	_ Component = (*restartsPane)(nil)
	_ Component = (*eventsPane)(nil)
	_ Component = (*statusLine)(nil)
	_ Component = (*faultMenu)(nil)
	_ Component = (*checkpointDetail)(nil)
	_ Component = (*helpOverlay)(nil)
)
