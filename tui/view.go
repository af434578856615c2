package tui

import (
	"strings"

	"github.com/faultline-dev/faultline/tui/common"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// View implements tea.Model.
func (m *model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	if m.width < MinWidth || m.height < MinHeight {
		return m.tooSmall()
	}
	var body []string
	withHelp := true
	switch m.overlay {
	case overlayHelp:
		body = common.SplitLines(m.helpView.View())
	case overlayDetail:
		body = common.SplitLines(m.detail.View())
	case overlayOverview:
		body = common.SplitLines(m.overview.View())
	default:
		s := m.sizes()
		body = m.panes()
		if s.tourHelpRow {
			// The tour's panel has the help's line, but for the menu's
			// keys while it is open.
			if withHelp = m.overlay == overlayMenu; withHelp {
				body = body[:len(body)-1]
			}
		}
		if m.overlay == overlayMenu {
			box := common.SplitLines(m.menu.View())
			y := max(s.graphH, len(body)-len(box))
			body = overlay(body, box, max((m.width-common.Width(box[0]))/2, 0), min(y, max(len(body)-len(box), 0)))
		}
	}
	lines := append([]string{m.header.View()}, body...)
	lines = append(lines, m.status.View())
	if withHelp {
		lines = append(lines, m.helpLine())
	}
	return strings.Join(common.FitLines(lines, m.width, m.height), "\n")
}

// panes draws the job graph, the checkpoints beside the restarts, and the
// events, or during a guided tour its panel.
func (m *model) panes() []string {
	st := m.ctx.Styles
	s := m.sizes()
	lines := common.SplitLines(m.graph.View())
	sep := make([]string, s.midH)
	sep[0] = st.Rule.Render("┬")
	for i := 1; i < len(sep); i++ {
		sep[i] = st.Rule.Render("│")
	}
	lines = append(lines, joinSideBySide(common.SplitLines(m.cps.View()), common.SplitLines(m.restarts.View()), sep)...)
	if m.ctx.Tour() != nil {
		return append(lines, common.SplitLines(m.tour.View())...)
	}
	return append(lines, common.SplitLines(m.log.View())...)
}

// helpLine is the short help of what has the keys now, with "? help  q
// quit" always on the right.
func (m *model) helpLine() string {
	var bindings []key.Binding
	switch m.overlay {
	case overlayMenu:
		bindings = m.menu.ShortHelp()
	case overlayHelp:
		bindings = m.helpView.ShortHelp()
	case overlayOverview:
		bindings = m.overview.ShortHelp()
	case overlayDetail:
		bindings = append(m.detail.ShortHelp(), m.keys.Checkpoint, m.keys.Freeze, m.keys.ShortStep)
	default:
		switch m.focus {
		case paneGraph:
			bindings = m.graph.ShortHelp()
		case paneCheckpoints:
			bindings = m.cps.ShortHelp()
		case paneEvents:
			bindings = m.log.ShortHelp()
		}
		if m.ctx.Snap.Job.Status == "FAILED" {
			bindings = append(bindings, m.keys.FailedHelp()...)
		} else {
			bindings = append(bindings, m.available(m.keys.CommandHelp())...)
		}
	}
	h := m.help
	right := h.ShortHelpView([]key.Binding{m.keys.Help, m.keys.Quit})
	leftW := max(m.width-common.Width(right)-4, 0) // a space before, two between, one after
	h.Width = leftW
	left := common.Truncate(h.ShortHelpView(bindings), leftW)
	return " " + common.PadRight(left, leftW) + "  " + right + " "
}

// tooSmall is the screen for a terminal below the minimum size.
func (m *model) tooSmall() string {
	st := m.ctx.Styles
	text := st.Warning.Render("terminal too small: need at least "+common.Itoa(MinWidth)+"×"+common.Itoa(MinHeight)+
		", have "+common.Itoa(int64(m.width))+"×"+common.Itoa(int64(m.height))) + "\n" +
		st.Muted.Render("enlarge the window, or press q to quit")
	return fitBlock(lipgloss.Place(m.width, m.height, lipgloss.Center, lipgloss.Center, text), m.width, m.height)
}

// available are the bindings the Controller can do (all, unless it is
// Limited), and S and C for one that ends jobs.
func (m *model) available(bs []key.Binding) []key.Binding {
	if _, ok := m.ctrl.(Limited); !ok {
		return bs
	}
	var out []key.Binding
	for _, b := range bs {
		k := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(b.Keys()[0])}
		if b.Keys()[0] == " " {
			k = tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
		}
		if a, ok := m.limitedAction(k); ok && m.ctrl.(Limited).Unavailable(a) != "" {
			continue
		}
		out = append(out, b)
	}
	if m.ctx.Lifecycle {
		out = append(out, m.keys.Stop, m.keys.Cancel)
	}
	if _, ok := m.ctrl.(Rescaler); ok {
		out = append(out, m.keys.ScaleUp)
	}
	return out
}
