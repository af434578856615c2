// Package graph is the job graph pane (Flink: the ExecutionGraph) with the
// queue strips of the subtasks' input channels.
package graph

import (
	"slices"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// Model draws the job graph (Flink: the ExecutionGraph): one row per
// operator in spec order, which is topological, one cell per subtask with
// its status word, records/s, back-pressure and, for sources, the next
// offset of each partition; and under the cells of a subtask with input
// channels, one queue strip per channel with the barriers at their places,
// so that a barrier can be followed hop by hop and alignment seen holding
// channels back.
//
// Strips show for every subtask with input channels when the pane is tall
// enough, else only for the row of the selected subtask; which rows show
// strips does not depend on what the job is doing, so the layout never
// jumps when an alignment starts or ends. Subtasks without strips still say
// "ALIGNING #14 38ms" in their cell.
type Model struct {
	ctx           *common.Context
	width, height int // the height counts the rule line
	focused       bool

	// The selection: operator name and subtask index, kept by name so that
	// it survives new samples; chosen is false until the first sample.
	selOp  string
	selIdx int
	chosen bool
	// shown is what the last View drew, for a mouse click.
	shown shownRows
}

// New returns the pane; it draws what ctx holds.
func New(ctx *common.Context) *Model { return &Model{ctx: ctx} }

// Every pane and overlay is a Component.
var _ common.Component = (*Model)(nil)

// Init implements tea.Model.
func (g *Model) Init() tea.Cmd { return nil }

// SetSize implements Component.
func (g *Model) SetSize(w, h int) { g.width, g.height = w, h }

// SetFocused tells the pane whether it has the focus.
func (g *Model) SetFocused(f bool) { g.focused = f }

// ShortHelp implements help.KeyMap.
func (g *Model) ShortHelp() []key.Binding { return []key.Binding{g.ctx.Keys.Select} }

// FullHelp implements help.KeyMap.
func (g *Model) FullHelp() [][]key.Binding {
	k := g.ctx.Keys
	return [][]key.Binding{{k.Up, k.Down, k.Left, k.Right, k.Fault}}
}

// Selected is the selected subtask, "operator/index", or "".
func (g *Model) Selected() string {
	if !g.chosen {
		return ""
	}
	return common.TaskName(g.selOp, g.selIdx)
}

// Update implements tea.Model: samples keep the selection valid, arrows
// and hjkl move it.
func (g *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case common.SnapshotMsg:
		g.keepSelection()
	case tea.KeyMsg:
		k := g.ctx.Keys
		switch {
		case key.Matches(msg, k.Up):
			g.moveOperator(-1)
		case key.Matches(msg, k.Down):
			g.moveOperator(+1)
		case key.Matches(msg, k.Left):
			g.moveSubtask(-1)
		case key.Matches(msg, k.Right):
			g.moveSubtask(+1)
		}
	}
	return g, nil
}

// keepSelection selects a subtask when there is none (the first one with
// several input channels, where alignment happens, else the first), and
// moves it into range when the job changed. The channels count as their
// edges imply until the subtasks report them (channelLines): the first
// samples of a starting job, taken before its subtasks run, select the
// same subtask as the later ones.
func (g *Model) keepSelection() {
	ops := g.ctx.Snap.Operators
	if len(ops) == 0 {
		return
	}
	if i := g.opIndex(); !g.chosen || i < 0 {
		g.selOp, g.selIdx, g.chosen = ops[0].Name, 0, true
		if op := slices.IndexFunc(ops, func(o view.Operator) bool { return g.channelLines(o) > 1 }); op >= 0 {
			g.selOp = ops[op].Name
			for i := range ops[op].Parallelism {
				if len(g.ctx.Snap.Tasks[common.TaskName(g.selOp, i)].Inputs) > 1 {
					g.selIdx = i
					break
				}
			}
		}
		return
	}
	g.selIdx = min(g.selIdx, max(ops[g.opIndex()].Parallelism-1, 0))
}

func (g *Model) opIndex() int {
	return slices.IndexFunc(g.ctx.Snap.Operators, func(o view.Operator) bool { return o.Name == g.selOp })
}

// moveOperator selects the same subtask index (clamped) in the operator
// above or below, stopping at the first and last operator.
func (g *Model) moveOperator(d int) {
	ops := g.ctx.Snap.Operators
	i := g.opIndex()
	if i < 0 {
		return
	}
	j := min(max(i+d, 0), len(ops)-1)
	g.selOp = ops[j].Name
	g.selIdx = min(g.selIdx, max(ops[j].Parallelism-1, 0))
}

// moveSubtask selects the previous or next subtask in spec order, across
// operators, stopping at the first and last subtask.
func (g *Model) moveSubtask(d int) {
	names := g.ctx.TaskNames()
	i := slices.Index(names, g.Selected())
	if i < 0 {
		return
	}
	j := min(max(i+d, 0), len(names)-1)
	op, idx, _ := strings.Cut(names[j], "/")
	g.selOp = op
	g.selIdx, _ = strconv.Atoi(idx)
}

// channelLines is how many strip lines an operator's row needs: the most
// input channels of any of its subtasks, or what its edges imply before the
// subtasks report them (forward: one channel, any other edge: one per
// upstream subtask).
func (g *Model) channelLines(op view.Operator) int {
	n := 0
	for _, e := range op.Inputs {
		if e.Kind == "forward" {
			n++
			continue
		}
		if i := slices.IndexFunc(g.ctx.Snap.Operators, func(o view.Operator) bool { return o.Name == e.From }); i >= 0 {
			n += g.ctx.Snap.Operators[i].Parallelism
		}
	}
	for i := range op.Parallelism {
		n = max(n, len(g.ctx.Snap.Tasks[common.TaskName(op.Name, i)].Inputs))
	}
	return n
}

// Heights are the pane's body heights (rule line not counted): compact
// shows strips for the selected row only, roomy for every row.
func (g *Model) Heights() (compact, roomy int) {
	ops := g.ctx.Snap.Operators
	if len(ops) == 0 {
		return 1, 1
	}
	most, sum := 0, 0
	for _, op := range ops {
		n := g.channelLines(op)
		most, sum = max(most, n), sum+n
	}
	return len(ops) + most, len(ops) + sum
}
