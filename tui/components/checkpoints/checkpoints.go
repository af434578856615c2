// Package checkpoints is the checkpoint history pane (Flink's web UI:
// Checkpoints → History).
package checkpoints

import (
	"slices"
	"strconv"
	"strings"

	"faultline/runtime/view"
	"faultline/tui/common"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// Model is the checkpoint history (Flink's web UI: Checkpoints →
// History), newest first, pending ones included: id, status, acknowledged
// subtasks, trigger time, end-to-end duration, checkpointed size (full and
// incremental) and the longest alignment. Failed ones show why instead of
// their figures. Focused, ↑/↓ select a row and enter opens its detail.
type Model struct {
	ctx           *common.Context
	width, height int
	focused       bool
	// selID is the selected checkpoint; 0 follows the newest.
	selID int64
	top   int // the first row shown
}

// New returns the pane; it draws what ctx holds.
func New(ctx *common.Context) *Model { return &Model{ctx: ctx} }

// Every pane and overlay is a Component.
var _ common.Component = (*Model)(nil)

// Init implements tea.Model.
func (p *Model) Init() tea.Cmd { return nil }

// SetSize implements Component.
func (p *Model) SetSize(w, h int) {
	p.width, p.height = w, h
	p.scroll()
}

// scroll keeps the selected row in view.
func (p *Model) scroll() {
	p.top = scrollTop(p.top, p.selected(), p.rows(), len(p.ctx.Snap.Checkpoints.History))
}

// scrollTop is the first row to show of n so that row sel shows in a window
// of rows rows that was showing from top.
func scrollTop(top, sel, rows, n int) int {
	top = min(max(top, sel-rows+1), sel)
	return max(min(top, n-rows), 0)
}

// SetFocused tells the pane whether it has the focus.
func (p *Model) SetFocused(f bool) { p.focused = f }

// ShortHelp implements help.KeyMap.
func (p *Model) ShortHelp() []key.Binding {
	k := p.ctx.Keys
	return []key.Binding{k.Rows, k.Open}
}

// FullHelp implements help.KeyMap.
func (p *Model) FullHelp() [][]key.Binding {
	k := p.ctx.Keys
	return [][]key.Binding{{k.Up, k.Down, k.Open}}
}

// selected is the index of the selected row in History.
func (p *Model) selected() int {
	h := p.ctx.Snap.Checkpoints.History
	if i := slices.IndexFunc(h, func(c view.Checkpoint) bool { return c.ID == p.selID }); i >= 0 {
		return i
	}
	return 0
}

// SelectedID is the selected checkpoint's id, 0 when History is empty.
func (p *Model) SelectedID() int64 {
	h := p.ctx.Snap.Checkpoints.History
	if len(h) == 0 {
		return 0
	}
	return h[p.selected()].ID
}

// Update implements tea.Model.
func (p *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case common.SnapshotMsg:
		if p.ctx.CheckpointByID(p.selID) == nil {
			p.selID = 0
		}
	case tea.KeyMsg:
		k := p.ctx.Keys
		h := p.ctx.Snap.Checkpoints.History
		switch {
		case key.Matches(msg, k.Up):
			p.selectRow(p.selected() - 1)
		case key.Matches(msg, k.Down):
			p.selectRow(p.selected() + 1)
		case key.Matches(msg, k.PageUp):
			p.selectRow(p.selected() - p.rows())
		case key.Matches(msg, k.PageDown):
			p.selectRow(p.selected() + p.rows())
		case key.Matches(msg, k.Open) && len(h) > 0:
			id := p.SelectedID()
			return p, func() tea.Msg { return common.OpenDetailMsg{ID: id} }
		}
	}
	p.scroll()
	return p, nil
}

// selectRow selects row i, clamped; the top row follows the newest.
func (p *Model) selectRow(i int) {
	h := p.ctx.Snap.Checkpoints.History
	if len(h) == 0 || i <= 0 {
		p.selID = 0
		return
	}
	p.selID = h[min(i, len(h)-1)].ID
}

// rows is how many table rows fit.
func (p *Model) rows() int { return max(p.height-2, 1) }

// cpCol is one column of the table.
type cpCol struct {
	title string
	w     int
	right bool
	cell  func(c *view.Checkpoint) (string, lipgloss.Style)
}

// columns picks the columns that fit in w cells, in the order a reader
// wants them (id, status, acknowledged, duration, sizes, alignment, trigger
// time) and shows them in Flink's order; the rest of the width is the note.
func (p *Model) columns(w int) (cols []cpCol, noteW int) {
	st := p.ctx.Styles
	snap := &p.ctx.Snap
	idW, ackW := 2, 4
	for _, c := range snap.Checkpoints.History {
		idW = max(idW, len(strconv.FormatInt(c.ID, 10)))
		ackW = max(ackW, len(common.AckText(&c)))
	}
	all := []struct {
		prio int
		col  cpCol
	}{
		{0, cpCol{"id", idW, true, func(c *view.Checkpoint) (string, lipgloss.Style) {
			return strconv.FormatInt(c.ID, 10), st.Bold
		}}},
		{1, cpCol{"status", 9, false, func(c *view.Checkpoint) (string, lipgloss.Style) {
			return common.CheckpointWord(st, c)
		}}},
		{2, cpCol{"acks", ackW, true, func(c *view.Checkpoint) (string, lipgloss.Style) {
			return common.AckText(c), st.Text
		}}},
		{7, cpCol{"trigger", 12, false, func(c *view.Checkpoint) (string, lipgloss.Style) {
			return common.WallClock(c.TriggerTime), st.Muted
		}}},
		{3, cpCol{"dur", 6, true, func(c *view.Checkpoint) (string, lipgloss.Style) {
			if c.Status == view.StatusPending {
				return common.HumanDuration(snap.Now.Sub(c.TriggerTime)) + "…", st.Info
			}
			return common.HumanDuration(c.EndTime.Sub(c.TriggerTime)), st.Text
		}}},
		{4, cpCol{"full", 6, true, func(c *view.Checkpoint) (string, lipgloss.Style) {
			return sizeText(c, c.FullBytes), st.Text
		}}},
		{6, cpCol{"incr", 6, true, func(c *view.Checkpoint) (string, lipgloss.Style) {
			return sizeText(c, c.IncrementalBytes), st.Text
		}}},
		{5, cpCol{"align", 5, true, func(c *view.Checkpoint) (string, lipgloss.Style) {
			if c.Status == view.StatusPending && c.MaxAlignment == 0 {
				return "—", st.Muted
			}
			return common.HumanDuration(c.MaxAlignment), st.Text
		}}},
	}
	keep := make([]bool, len(all))
	used := 1 // the selection marker
	for prio := range len(all) {
		for i, c := range all {
			if c.prio == prio && used+c.col.w+1 <= w {
				keep[i] = true
				used += c.col.w + 1
			}
		}
	}
	for i, c := range all {
		if keep[i] {
			cols = append(cols, c.col)
		}
	}
	return cols, w - used
}

// View implements tea.Model.
func (p *Model) View() string {
	st := p.ctx.Styles
	s := p.ctx.Snap.Checkpoints
	info := []string{st.Muted.Render(strconv.Itoa(s.Completed) + " completed")}
	if s.Failed > 0 {
		info = append(info, st.Error.Render(strconv.Itoa(s.Failed)+" failed"))
	}
	lines := []string{common.Rule(st, "checkpoints", strings.Join(info, st.Muted.Render(" · ")), p.width, p.focused)}

	cols, noteW := p.columns(p.width)
	var head strings.Builder
	head.WriteString(" ")
	for _, c := range cols {
		head.WriteString(align(c.title, c.w, c.right) + " ")
	}
	if noteW >= 4 {
		head.WriteString(common.PadRight("", noteW))
	}
	lines = append(lines, st.TableHeader.Render(strings.TrimRight(head.String(), " ")))

	h := s.History
	if len(h) == 0 {
		lines = append(lines, st.Muted.Render(" no checkpoint yet: press c to trigger one"))
		return strings.Join(common.FitLines(lines, p.width, p.height), "\n")
	}
	rows, sel := p.rows(), p.selected()
	top := scrollTop(p.top, sel, rows, len(h))
	for i := top; i < min(len(h), top+rows); i++ {
		lines = append(lines, p.row(&h[i], cols, noteW, p.focused && i == sel))
	}
	return strings.Join(common.FitLines(lines, p.width, p.height), "\n")
}

// row renders one checkpoint.
func (p *Model) row(c *view.Checkpoint, cols []cpCol, noteW int, sel bool) string {
	st := p.ctx.Styles
	var b strings.Builder
	if sel {
		b.WriteString(st.Selected.Render("▸"))
	} else {
		b.WriteString(" ")
	}
	note := common.CheckpointNote(c)
	for i, col := range cols {
		if c.Status == view.StatusFailed && col.title != "id" && col.title != "status" &&
			col.title != "acks" && col.title != "trigger" {
			// A failed checkpoint's figures mean nothing: say why instead.
			rest := 0
			for _, r := range cols[i:] {
				rest += r.w + 1
			}
			b.WriteString(st.Error.Render(common.Truncate(note, rest+noteW-1)))
			return b.String()
		}
		text, style := col.cell(c)
		b.WriteString(style.Render(align(text, col.w, col.right)) + " ")
	}
	if noteW >= 4 && note != "" {
		b.WriteString(st.Muted.Render(common.Truncate(note, noteW)))
	}
	return b.String()
}

// align pads s to w cells, to the right when right is set.
func align(s string, w int, right bool) string {
	if right {
		return common.PadLeft(s, w)
	}
	return common.PadRight(s, w)
}

// sizeText is a size, "—" while nothing was written yet.
func sizeText(c *view.Checkpoint, n int64) string {
	if n == 0 && c.Status == view.StatusPending {
		return "—"
	}
	return common.HumanBytes(n)
}
