package tui

import (
	"strings"

	"faultline/tui/common"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// helpOverlay lists every key binding, grouped, and explains the glyphs of
// the job graph. ? or esc closes it.
type helpOverlay struct {
	ctx           *common.Context
	width, height int
	help          help.Model
}

func newHelpOverlay(ctx *common.Context, h help.Model) *helpOverlay {
	return &helpOverlay{ctx: ctx, help: h}
}

// Init implements tea.Model.
func (o *helpOverlay) Init() tea.Cmd { return nil }

// SetSize implements Component.
func (o *helpOverlay) SetSize(w, h int) { o.width, o.height = w, h }

// ShortHelp implements help.KeyMap.
func (o *helpOverlay) ShortHelp() []key.Binding { return []key.Binding{o.ctx.Keys.CloseHelp} }

// FullHelp implements help.KeyMap.
func (o *helpOverlay) FullHelp() [][]key.Binding {
	_, groups := o.ctx.Keys.HelpGroups()
	return groups
}

// Update implements tea.Model: ? and esc close it.
func (o *helpOverlay) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
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
func (o *helpOverlay) View() string {
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
