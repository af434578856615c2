// Package checkpoints is the checkpoint history pane (Flink's web UI:
// Checkpoints → History).
package checkpoints

import (
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
)

// Model is the checkpoint history (Flink's web UI: Checkpoints →
// History), newest first, pending ones included: id, status, acknowledged
// subtasks, trigger time, end-to-end duration, checkpointed size (full and
// incremental), the longest alignment and, once the history holds an
// at-least-once checkpoint, the records it processed after its barrier
// (an at-least-once checkpoint aligns nothing); once it holds in-flight
// data or the job may take an unaligned checkpoint, how its barriers were
// handled (aligned, unaligned, or timed out: switched to unaligned by the
// aligned-checkpoint timeout) and Flink's persisted and processed
// in-flight data. Failed and damaged ones
// show why instead of their figures, wrapped on a wide terminal. Focused,
// ↑/↓ select a row and enter opens its detail; the table follows the
// newest checkpoint until a row below it is selected, says "▲ 3 newer"
// while it does not, and follows again from the top row or on home/g.
type Model struct {
	ctx           *common.Context
	width, height int
	focused       bool
	// selID is the selected checkpoint; 0 follows the newest.
	selID int64
	// shownIDs are the checkpoints the last View drew, by line (0: no
	// checkpoint's line), for a mouse click.
	shownIDs []int64
	top      int // the first row shown
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
	cols, noteW := p.columns(p.width)
	p.top = p.topRow(cols, noteW)
}

// topRow is the first row to show: the selected row stays in view or,
// while the table follows the newest, the newest and, below it when it
// must be, the row a guided tour points at.
func (p *Model) topRow(cols []cpCol, noteW int) int {
	top, keep := p.top, p.selected()
	if id := p.ctx.Highlight().Checkpoint; id != 0 && p.Following() {
		h := p.ctx.Snap.Checkpoints.History
		if i := slices.IndexFunc(h, func(c view.Checkpoint) bool { return c.ID == id }); i >= 0 {
			top, keep = 0, i
		}
	}
	return scrollTop(top, keep, p.rows(), p.heights(cols, noteW))
}

// scrollTop is the first row to show so that row sel shows whole in a
// window of rows lines that was showing from top, given each row's
// height in lines, and no line is left empty while older rows could fill
// it.
func scrollTop(top, sel, rows int, heights []int) int {
	n := len(heights)
	if n == 0 {
		return 0
	}
	sel = min(max(sel, 0), n-1)
	top = min(max(top, 0), sel)
	sum := func(from, to int) int { // heights[from:to]
		s := 0
		for _, h := range heights[from:to] {
			s += h
		}
		return s
	}
	for top < sel && sum(top, sel+1) > rows {
		top++
	}
	for top > 0 && sum(top-1, n) <= rows {
		top--
	}
	return top
}

// SetFocused tells the pane whether it has the focus.
func (p *Model) SetFocused(f bool) { p.focused = f }

// ShortHelp implements help.KeyMap.
func (p *Model) ShortHelp() []key.Binding {
	k := p.ctx.Keys
	return []key.Binding{k.Rows, k.Open, k.Overview, k.Newest}
}

// FullHelp implements help.KeyMap.
func (p *Model) FullHelp() [][]key.Binding {
	k := p.ctx.Keys
	return [][]key.Binding{{k.Up, k.Down, k.Newest, k.Open}}
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

// Following reports whether the table follows the newest checkpoint.
func (p *Model) Following() bool { return p.selID == 0 || p.selected() == 0 }

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
		case key.Matches(msg, k.Newest):
			p.selectRow(0)
		case key.Matches(msg, k.Oldest):
			p.selectRow(len(h) - 1)
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

// rows is how many table lines fit.
func (p *Model) rows() int { return max(p.height-2, 1) }

// cpCol is one column of the table.
type cpCol struct {
	title string
	w     int
	right bool
	// cell is the text of checkpoint c, whose records past the barrier
	// are counted when alo is set (an at-least-once checkpoint).
	cell func(c *view.Checkpoint, alo bool) (string, lipgloss.Style)
}

// Columns whose cells a failed or damaged checkpoint's reason replaces.
var figureCols = []string{"dur", "full", "incr", "align", "after", "type", "persisted", "processed"}

// rankedCol is a column of the table with its rank: lower stays longer
// on a narrow screen.
type rankedCol struct {
	prio int
	col  cpCol
}

// columns picks the columns that fit in w cells, in the order a reader
// wants them (id, status, acknowledged, duration, the alignment's kind and
// the persisted in-flight data, sizes, alignment, processed in-flight data
// and records after the barrier, trigger time) and shows them in Flink's
// order; the rest of the width is the note.
func (p *Model) columns(w int) (cols []cpCol, noteW int) {
	cw := p.columnWidths()
	pr := columnPriorities(p.ctx.Mode)
	all := p.baseColumns(cw, pr)
	if cw.after > 0 {
		all = append(all, p.afterColumn(cw.after, pr))
	}
	if cw.inFlight {
		all = append(all, p.inFlightColumns(pr)...)
	}
	return fitColumns(all, w)
}

// colWidths are the widths of the columns that depend on the history,
// and whether the in-flight columns show.
type colWidths struct {
	id, ack int
	after   int // 0: no at-least-once checkpoint, no "after" column
	// inFlight is set once a checkpoint has something to say of its
	// kind and in-flight data, or the job may take an unaligned one.
	inFlight bool
}

// columnWidths measures the history for the columns whose width or
// presence depends on it.
func (p *Model) columnWidths() colWidths {
	snap := &p.ctx.Snap
	cw := colWidths{id: 2, ack: 4}
	cw.inFlight = strings.Contains(p.ctx.Mode, "unaligned") || snap.Job.AlignedTimeout > 0
	for i := range snap.Checkpoints.History {
		c := &snap.Checkpoints.History[i]
		cw.id = max(cw.id, len(strconv.FormatInt(c.ID, 10)))
		cw.ack = max(cw.ack, len(common.AckText(c)))
		if p.ctx.CheckpointMode(c) == common.AtLeastOnce {
			cw.after = max(cw.after, 5, len(common.Thousands(common.AfterBarrier(c))))
		}
		cw.inFlight = cw.inFlight || common.InFlight(c)
	}
	return cw
}

// baseColumns are the columns every table may show: id, status,
// acknowledged, trigger time, duration, sizes and alignment.
func (p *Model) baseColumns(cw colWidths, pr priorities) []rankedCol {
	st := p.ctx.Styles
	snap := &p.ctx.Snap
	return []rankedCol{
		{0, cpCol{"id", cw.id, true, func(c *view.Checkpoint, _ bool) (string, lipgloss.Style) {
			return strconv.FormatInt(c.ID, 10), st.Bold
		}}},
		{1, cpCol{"status", 9, false, func(c *view.Checkpoint, _ bool) (string, lipgloss.Style) {
			return common.CheckpointWord(st, c)
		}}},
		{2, cpCol{"acks", cw.ack, true, func(c *view.Checkpoint, _ bool) (string, lipgloss.Style) {
			return common.AckText(c), st.Text
		}}},
		{7, cpCol{"trigger", 12, false, func(c *view.Checkpoint, _ bool) (string, lipgloss.Style) {
			return common.WallClock(c.TriggerTime), st.Muted
		}}},
		{3, cpCol{"dur", 6, true, func(c *view.Checkpoint, _ bool) (string, lipgloss.Style) {
			if c.Status == view.StatusPending {
				return common.HumanDuration(common.CheckpointDuration(snap, c)) + "…", st.Info
			}
			return common.HumanDuration(common.CheckpointDuration(snap, c)), st.Text
		}}},
		{5, cpCol{"full", 6, true, func(c *view.Checkpoint, _ bool) (string, lipgloss.Style) {
			return sizeText(c, c.FullBytes), st.Text
		}}},
		{6, cpCol{"incr", 6, true, func(c *view.Checkpoint, _ bool) (string, lipgloss.Style) {
			return sizeText(c, c.IncrementalBytes), st.Text
		}}},
		{pr.align, cpCol{"align", 5, true, func(c *view.Checkpoint, alo bool) (string, lipgloss.Style) {
			if alo || (c.Status == view.StatusPending && c.MaxAlignment == 0) {
				return "—", st.Muted // at-least-once aligns nothing
			}
			return common.HumanDuration(c.MaxAlignment), st.Text
		}}},
	}
}

// afterColumn is the column of the records an at-least-once checkpoint
// processed after its barrier, w cells wide.
func (p *Model) afterColumn(w int, pr priorities) rankedCol {
	st := p.ctx.Styles
	return rankedCol{pr.after, cpCol{"after", w, true, func(c *view.Checkpoint, alo bool) (string, lipgloss.Style) {
		if !alo {
			return "", st.Muted
		}
		return common.Thousands(common.AfterBarrier(c)), st.Warning
	}}}
}

// inFlightColumns are the columns of how a checkpoint handled its
// barriers and of its persisted and processed in-flight data.
func (p *Model) inFlightColumns(pr priorities) []rankedCol {
	st := p.ctx.Styles
	// inFlightText is a size of in-flight data: "—" for an at-least-once
	// checkpoint, which stores none, and while nothing came in yet.
	inFlightText := func(c *view.Checkpoint, alo bool, n int64) (string, lipgloss.Style) {
		if alo {
			return "—", st.Muted
		}
		return sizeText(c, n), st.Text
	}
	return []rankedCol{
		// Flink's checkpoint type: aligned or unaligned, and here
		// whether the aligned-checkpoint timeout switched it.
		{pr.kind, cpCol{"type", 9, false, func(c *view.Checkpoint, _ bool) (string, lipgloss.Style) {
			kind := common.AlignmentKind(c, p.ctx.CheckpointMode(c))
			if kind == "" {
				return "—", st.Muted
			}
			return kind, common.KindStyle(st, kind)
		}}},
		// Flink's persisted in-flight data: the records stored as
		// channel state; processed in-flight data: those processed
		// during alignments.
		{pr.kind, cpCol{"persisted", 9, true, func(c *view.Checkpoint, alo bool) (string, lipgloss.Style) {
			return inFlightText(c, alo, c.PersistedInFlight)
		}}},
		{pr.processed, cpCol{"processed", 9, true, func(c *view.Checkpoint, alo bool) (string, lipgloss.Style) {
			return inFlightText(c, alo, c.ProcessedInFlight)
		}}},
	}
}

// fitColumns keeps, rank by rank, the columns of all that fit in w cells
// beside the selection marker, in all's order, and the cells left over.
func fitColumns(all []rankedCol, w int) (cols []cpCol, noteW int) {
	keep := make([]bool, len(all))
	used := 1 // the selection marker
	for prio := range 8 {
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
	var info []string
	if sel := p.selected(); p.selID != 0 && sel > 0 {
		// The selection holds the table: newer rows came above it.
		info = append(info, st.Warning.Render("▲ "+strconv.Itoa(sel)+" newer"))
	}
	info = append(info, st.Muted.Render(strconv.Itoa(s.Completed)+" completed"))
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
	lines = append(lines, st.TableHeader.Render(strings.TrimRight(head.String(), " ")))

	h := s.History
	if len(h) == 0 {
		lines = append(lines, st.Muted.Render(" no checkpoint yet: press c to trigger one"))
		return strings.Join(common.FitLines(lines, p.width, p.height), "\n")
	}
	sel := p.selected()
	top := p.topRow(cols, noteW)
	p.shownIDs = p.shownIDs[:0]
	for range lines {
		p.shownIDs = append(p.shownIDs, 0)
	}
	for i := top; i < len(h) && len(lines) < p.height; i++ {
		lines = append(lines, p.row(&h[i], cols, noteW, p.focused && i == sel, p.height-len(lines))...)
		for len(p.shownIDs) < len(lines) {
			p.shownIDs = append(p.shownIDs, h[i].ID)
		}
	}
	return strings.Join(common.FitLines(lines, p.width, p.height), "\n")
}

// SelectAt selects the checkpoint drawn on line y of the pane (a mouse
// click) and reports whether one is there.
func (p *Model) SelectAt(y int) bool {
	if y < 0 || y >= len(p.shownIDs) || p.shownIDs[y] == 0 {
		return false
	}
	p.selID = p.shownIDs[y]
	if p.selected() == 0 {
		p.selID = 0 // the newest: follow new ones again
	}
	return true
}

// heights are the lines each row of the history takes.
func (p *Model) heights(cols []cpCol, noteW int) []int {
	h := p.ctx.Snap.Checkpoints.History
	out := make([]int, len(h))
	for i := range h {
		out[i] = 1
		if common.Unusable(&h[i]) {
			_, w := reasonAt(cols, noteW)
			out[i] = len(p.reason(&h[i], w, maxReasonLines))
		}
	}
	return out
}

// maxReasonLines bounds the lines a failed or damaged checkpoint's reason
// wraps onto.
const maxReasonLines = 3

// reason is a failed or damaged checkpoint's reason in lines of w cells:
// wrapped on a wide terminal (at most most lines), else one line cut at a
// word boundary.
func (p *Model) reason(c *view.Checkpoint, w, most int) []string {
	note := common.CheckpointNote(c)
	if p.ctx.Wide() {
		return common.Wrap(note, w, min(max(most, 1), maxReasonLines))
	}
	return []string{common.TruncateWords(note, w)}
}

// reasonAt is where a failed or damaged checkpoint's reason starts (the
// cells before it) and how wide it can be: in place of the figures.
func reasonAt(cols []cpCol, noteW int) (at, w int) {
	at = 1
	for _, c := range cols {
		if slices.Contains(figureCols, c.title) {
			break
		}
		at += c.w + 1
	}
	total := 1 + noteW
	for _, c := range cols {
		total += c.w + 1
	}
	return at, max(total-at, 1)
}

// row renders one checkpoint, on more than one line (at most most) when a
// failed or damaged checkpoint's reason wraps.
func (p *Model) row(c *view.Checkpoint, cols []cpCol, noteW int, sel bool, most int) []string {
	st := p.ctx.Styles
	var b strings.Builder
	marked := c.ID == p.ctx.Highlight().Checkpoint
	switch {
	case marked:
		// The row a guided tour points at: its marker takes the
		// selection's column.
		b.WriteString(st.Highlight.Render(common.HighlightMarker))
	case sel:
		b.WriteString(st.Selected.Render("▸"))
	default:
		b.WriteString(" ")
	}
	alo := p.ctx.CheckpointMode(c) == common.AtLeastOnce
	for _, col := range cols {
		if common.Unusable(c) && slices.Contains(figureCols, col.title) {
			// A failed or damaged checkpoint's figures mean nothing for a
			// restore: say why instead.
			at, w := reasonAt(cols, noteW)
			reason := p.reason(c, w, most)
			out := []string{b.String() + st.Error.Render(reason[0])}
			for _, r := range reason[1:] {
				out = append(out, strings.Repeat(" ", at)+st.Error.Render(r))
			}
			return out
		}
		text, style := col.cell(c, alo)
		if marked && col.title == "id" {
			style = st.Highlight
		}
		b.WriteString(style.Render(align(text, col.w, col.right)) + " ")
	}
	if note := common.CheckpointNote(c); noteW >= 4 && note != "" {
		b.WriteString(st.Muted.Render(common.TruncateWords(note, noteW)))
	}
	return []string{b.String()}
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

// priorities are the ranks of the columns that matter more in one mode
// than another (lower stays longer on a narrow screen): aligned, the
// alignment time is the lesson; unaligned, the checkpoint's type and what
// it persisted; at-least-once, the records processed after the barrier.
type priorities struct{ align, after, kind, processed int }

func columnPriorities(mode string) priorities {
	switch {
	case strings.Contains(mode, "unaligned"):
		return priorities{align: 5, after: 6, kind: 4, processed: 5}
	case strings.HasPrefix(mode, "at-least-once"):
		return priorities{align: 5, after: 3, kind: 5, processed: 6}
	}
	return priorities{align: 3, after: 5, kind: 4, processed: 5}
}
