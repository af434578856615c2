// Package helpview is the help overlay: every key binding, grouped, the
// glyphs of the job graph explained, and the checkpointing modes.
package helpview

import (
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/tui/common"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// Model lists every key binding, grouped, explains the glyphs and words
// of the screen and the checkpointing modes the mode key goes through,
// and while a guided tour runs, its keys and marks. ↑/↓ scroll it when it
// is taller than the terminal; ? or esc closes it.
type Model struct {
	ctx           *common.Context
	width, height int
	help          help.Model
	top           int // the first line shown
}

// New returns the overlay; it lists ctx's keys with h.
func New(ctx *common.Context, h help.Model) *Model {
	return &Model{ctx: ctx, help: h}
}

// Every pane and overlay is a Component.
var _ common.Component = (*Model)(nil)

// Init implements tea.Model.
func (o *Model) Init() tea.Cmd { return nil }

// SetSize implements Component.
func (o *Model) SetSize(w, h int) { o.width, o.height = w, h }

// ShortHelp implements help.KeyMap.
func (o *Model) ShortHelp() []key.Binding {
	if len(o.lines()) > o.rows() {
		return []key.Binding{o.ctx.Keys.Scroll, o.ctx.Keys.CloseHelp}
	}
	return []key.Binding{o.ctx.Keys.CloseHelp}
}

// FullHelp implements help.KeyMap.
func (o *Model) FullHelp() [][]key.Binding {
	_, groups := o.ctx.Keys.HelpGroups(o.ctx.Tour() != nil, o.ctx.Lifecycle)
	return groups
}

// Update implements tea.Model: ? and esc close it, arrows scroll it.
func (o *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return o, nil
	}
	k := o.ctx.Keys
	if key.Matches(km, k.Help, k.Back) {
		o.top = 0
		return o, func() tea.Msg { return common.CloseOverlayMsg{} }
	}
	o.top = k.ScrollTop(km, o.top, o.rows(), len(o.lines()))
	return o, nil
}

// rows is how many lines show below the rule.
func (o *Model) rows() int { return max(o.height-1, 1) }

// legend explains the glyphs and words of the job graph.
var legend = [][2]string{
	{"▸0", "the selected subtask (index 0 of its operator)"},
	{"RUN bp OK", "status; back-pressure OK ≤10%, LOW ≤50%, HIGH above"},
	{"SLOW ×10 4s", "a slow fault holds the subtask: a tenth of its rate, 4 s left"},
	{"✓14 ○14", "acknowledged / still waiting: pending checkpoint 14"},
	{"ALIGNING #14 38ms", "barrier 14 came in on some inputs 38ms ago"},
	{"COUNTING #14 1.2s", "at-least-once: barrier 14 came in on some inputs 1.2s ago; the subtask counts them and reads on, blocking nothing"},
	{"p0:1203", "a source's next offset to read in partition 0 of its topic"},
	{"◂··▌14···", "input queue: next element leftmost, ▌14 is barrier 14"},
	{"··· 1,264 ·=4", "1,264 elements queued; one · stands for 4 when the queue is longer than the strip"},
	{"▌14··· BLOCKED 6", "14 came in here: 6 elements wait for the other inputs"},
	{"◂▌17«•••···", "unaligned barrier 17 jumped to the front, over the records now behind it (•): they are persisted with checkpoint 17 as channel state, and processed after the snapshot"},
	{"··· 9 •3 persisted", "9 elements queued, the first 3 overtaken by an unaligned barrier and persisted (•3 when narrow)"},
	{"●··· REC 7", "barrier not here yet: what this channel delivers is stored as in-flight data of the unaligned checkpoint, 7 records so far"},
	{"UNALIGNED #17 38ms", "the subtask took its snapshot of 17 at the first barrier, without waiting for the others: nothing is blocked"},
	{"TIMED OUT → UNALIGNED", "the checkpoint grew older than the aligned-checkpoint timeout before it passed this subtask, so it went on unaligned here (→UNALIGNED when narrow)"},
}

// modes explains the checkpointing modes the m key goes through, as the
// header names them.
var modes = [][2]string{
	{"exactly-once · aligned", "a channel that delivered barrier n waits (BLOCKED) until every channel has; with a timeout (\"aligned, timeout 100ms\"), a checkpoint older than it goes on unaligned"},
	{"exactly-once · unaligned", "barriers overtake the records in flight; a subtask snapshots at its first barrier and persists what they overtook: nothing waits, checkpoints grow"},
	{"at-least-once", "barriers are counted, nothing waits or is persisted: a restore reads some records again (the duplicates)"},
}

// legendMore explains the words of the header, the checkpoints and the
// verify line.
var legendMore = [][2]string{
	{"SLOW ½×  FROZEN 12s", "the job's clock runs at half speed (¼ SLOWER) or stands still: checkpoint intervals, timeouts, restart delays and slow faults stretch with it, and durations leave the frozen time out"},
	{"STEPPING", ". runs the frozen world slowly to the next moment: barriers leave a stage or reach an operator that aligns, or a checkpoint completes"},
	{"RESTARTED (attempt 2)", "the job came back from a failure a moment ago, in its 2nd deployment"},
	{"after 37", "records an at-least-once checkpoint's subtasks processed after its barrier, added up: a restore reads them again; a record counts at each operator it passed, so more than the output's duplicates"},
	{"type aligned", "how a checkpoint's barriers were handled: aligned, unaligned, or timed out (the aligned-checkpoint timeout switched it to unaligned)"},
	{"persisted 96KB", "in-flight data a checkpoint stored as channel state: the records its unaligned barriers overtook"},
	{"processed 28KB", "in-flight data processed during its alignments"},
	{"DAMAGED", "a restore could not use this checkpoint and went back to an older one (enter: why)"},
	{"▲ 3 newer", "the checkpoint table holds the selected row; the top row or home/g follow the newest again"},
	{"dup 23 (at-least-once)", "duplicates committed while the job ran at-least-once: expected there, not a fault"},
}

// tourLegend explains the marks of a guided tour, for while one runs.
var tourLegend = [][2]string{
	{"»1 »◂·· »14", "what the step points at: a subtask, its input strips, a checkpoint's row; also »verify, ──»restarts and the header's »status and »mode"},
	{"✓ claim", "the tour's last check held"},
	{"✗ claim — why", "it did not hold, and what was seen instead"},
	{"(earlier step — n to return)", "b showed an earlier step's narration; n goes back to the current step"},
}

// View implements tea.Model.
func (o *Model) View() string {
	st := o.ctx.Styles
	lines := o.lines()
	rows := o.rows()
	info := "? or esc closes"
	top := max(min(o.top, len(lines)-rows), 0)
	if len(lines) > rows {
		info = strconv.Itoa(top+1) + "–" + strconv.Itoa(min(len(lines), top+rows)) + " of " +
			strconv.Itoa(len(lines)) + " · ↑↓ scroll · " + info
	}
	out := []string{common.Rule(st, "help", st.Muted.Render(info), o.width, true)}
	out = append(out, lines[top:]...)
	return strings.Join(common.FitLines(out, o.width, o.height), "\n")
}

// lines is everything the help says, below its rule.
func (o *Model) lines() []string {
	st := o.ctx.Styles
	var lines []string
	titles, groups := o.ctx.Keys.HelpGroups(o.ctx.Tour() != nil, o.ctx.Lifecycle)
	blocks := make([]string, len(groups))
	for i, g := range groups {
		blocks[i] = st.Bold.Render(titles[i]) + "\n" + o.help.FullHelpView([][]key.Binding{g})
	}
	// As many columns as fit, then the next row of columns.
	var row []string
	used := 0
	flush := func() {
		if len(row) > 0 {
			lines = append(lines, common.SplitLines(lipgloss.JoinHorizontal(lipgloss.Top, row...))...)
			lines = append(lines, "")
		}
		row, used = nil, 0
	}
	for _, b := range blocks {
		w := lipgloss.Width(b) + 3
		if used+w > o.width-1 && len(row) > 0 {
			flush()
		}
		row = append(row, padBlock(b, w))
		used += w
	}
	flush()

	lines = append(lines, st.Bold.Render("checkpointing modes, in the order m goes through them"))
	lines = append(lines, o.legendLines(modes)...)
	lines = append(lines, "", st.Bold.Render("reading the job graph"))
	lines = append(lines, o.legendLines(legend)...)
	lines = append(lines, "", st.Bold.Render("reading the rest"))
	lines = append(lines, o.legendLines(legendMore)...)
	if o.ctx.Tour() != nil {
		lines = append(lines, "", st.Bold.Render("reading a guided tour"))
		lines = append(lines, o.legendLines(tourLegend)...)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, " ") {
			lines[i] = " " + l
		}
	}
	return lines
}

// legendLines lays a legend out in two columns, the explanations wrapped.
func (o *Model) legendLines(entries [][2]string) []string {
	st := o.ctx.Styles
	glyphW := 0
	for _, l := range entries {
		glyphW = max(glyphW, common.Width(l[0]))
	}
	var out []string
	for _, l := range entries {
		for i, t := range common.Wrap(l[1], o.width-glyphW-4, 0) {
			glyph := ""
			if i == 0 {
				glyph = l[0]
			}
			out = append(out, " "+st.HelpKey.Render(common.PadRight(glyph, glyphW))+"  "+st.HelpDesc.Render(t))
		}
	}
	return out
}

// padBlock pads every line of a block to w cells.
func padBlock(b string, w int) string {
	ls := common.SplitLines(b)
	for i, l := range ls {
		ls[i] = common.PadRight(l, w)
	}
	return strings.Join(ls, "\n")
}
