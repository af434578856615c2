// Package helpview is the help overlay: every key binding, grouped, and the
// glyphs of the job graph explained.
package helpview

import (
	"strings"

	"faultline/tui/common"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// Model lists every key binding, grouped, and explains the glyphs of
// the job graph. ? or esc closes it.
type Model struct {
	ctx           *common.Context
	width, height int
	help          help.Model
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
func (o *Model) ShortHelp() []key.Binding { return []key.Binding{o.ctx.Keys.CloseHelp} }

// FullHelp implements help.KeyMap.
func (o *Model) FullHelp() [][]key.Binding {
	_, groups := o.ctx.Keys.HelpGroups()
	return groups
}

// Update implements tea.Model: ? and esc close it.
func (o *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if km, ok := msg.(tea.KeyMsg); ok && key.Matches(km, o.ctx.Keys.Help, o.ctx.Keys.Back) {
		return o, func() tea.Msg { return common.CloseOverlayMsg{} }
	}
	return o, nil
}

// legend explains the glyphs and words of the job graph.
var legend = [][2]string{
	{"▸0", "the selected subtask (index 0 of its operator)"},
	{"RUN bp OK", "status; back-pressure OK ≤10%, LOW ≤50%, HIGH above"},
	{"✓14 ○14", "acknowledged / still waiting: pending checkpoint 14"},
	{"ALIGNING #14 38ms", "barrier 14 came in on some inputs 38ms ago"},
	{"◂··▌14···", "input queue: next element leftmost, ▌14 is barrier 14"},
	{"▌14··· BLOCKED 6", "14 came in here: 6 elements wait for the other inputs"},
}

// View implements tea.Model.
func (o *Model) View() string {
	st := o.ctx.Styles
	lines := []string{common.Rule(st, "help", st.Muted.Render("? or esc closes"), o.width, true)}

	titles, groups := o.ctx.Keys.HelpGroups()
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

	lines = append(lines, st.Bold.Render("reading the job graph"))
	glyphW := 0
	for _, l := range legend {
		glyphW = max(glyphW, common.Width(l[0]))
	}
	for _, l := range legend {
		lines = append(lines, " "+st.HelpKey.Render(common.PadRight(l[0], glyphW))+"  "+st.HelpDesc.Render(l[1]))
	}
	for i, l := range lines[1:] {
		if !strings.HasPrefix(l, " ") {
			lines[i+1] = " " + l
		}
	}
	return strings.Join(common.FitLines(lines, o.width, o.height), "\n")
}

// padBlock pads every line of a block to w cells.
func padBlock(b string, w int) string {
	ls := common.SplitLines(b)
	for i, l := range ls {
		ls[i] = common.PadRight(l, w)
	}
	return strings.Join(ls, "\n")
}
