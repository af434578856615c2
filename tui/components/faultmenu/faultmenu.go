// Package faultmenu is the fault injection menu: the run's fault catalogue,
// a choice and its confirmation.
package faultmenu

import (
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// Model is the fault injection menu: the fault catalogue
// (tui.Controller.Faults) for the subtask selected when it opened, chosen with
// ↑/↓ and enter or by number, then confirmed with y. Task faults act on the
// selected subtask, job-level ones on the job; unavailable ones are shown
// with why, and cannot be chosen.
type Model struct {
	ctx           *common.Context
	width, height int

	task       string
	faults     []view.FaultChoice
	cursor     int
	confirming bool
	note       string // why the last pick was refused
}

// New returns the menu; it draws what ctx holds.
func New(ctx *common.Context) *Model { return &Model{ctx: ctx} }

// Every pane and overlay is a Component.
var _ common.Component = (*Model)(nil)

// Open shows the catalogue for task, the cursor on the first available
// fault.
func (m *Model) Open(task string, faults []view.FaultChoice) {
	m.task, m.faults, m.confirming, m.note = task, faults, false, ""
	m.cursor = -1
	m.move(+1)
}

// Confirming reports whether the menu asks for the confirmation.
func (m *Model) Confirming() bool { return m.confirming }

// Choice is the fault under the cursor.
func (m *Model) Choice() (view.FaultChoice, bool) {
	if m.cursor < 0 || m.cursor >= len(m.faults) {
		return view.FaultChoice{}, false
	}
	return m.faults[m.cursor], true
}

// target is where the chosen fault acts: the subtask, or "" for the job.
func (m *Model) target(f view.FaultChoice) string {
	if f.JobLevel {
		return ""
	}
	return m.task
}

// Init implements tea.Model.
func (m *Model) Init() tea.Cmd { return nil }

// SetSize implements Component.
func (m *Model) SetSize(w, h int) { m.width, m.height = w, h }

// ShortHelp implements help.KeyMap.
func (m *Model) ShortHelp() []key.Binding {
	k := m.ctx.Keys
	if m.confirming {
		return []key.Binding{k.Yes, k.No}
	}
	return []key.Binding{k.Choose, k.PickHelp, k.Back}
}

// FullHelp implements help.KeyMap.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.ctx.Keys
	return [][]key.Binding{{k.Up, k.Down, k.Open, k.Pick, k.Yes, k.No, k.Back}}
}

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return m, nil
	}
	k := m.ctx.Keys
	closeMenu := func() tea.Msg { return common.CloseOverlayMsg{} }
	if m.confirming {
		switch {
		case key.Matches(km, k.Yes):
			f, _ := m.Choice()
			target := m.target(f)
			return m, func() tea.Msg { return common.InjectMsg{Fault: f.Kind, Task: target} }
		case key.Matches(km, k.No), key.Matches(km, k.Quit):
			return m, tea.Batch(closeMenu, func() tea.Msg { return common.FlashMsg{Text: "fault injection cancelled", Level: common.LevelMuted} })
		}
		return m, nil
	}
	switch {
	case key.Matches(km, k.Back), key.Matches(km, k.Quit):
		return m, closeMenu
	case key.Matches(km, k.Up):
		m.move(-1)
	case key.Matches(km, k.Down):
		m.move(+1)
	case key.Matches(km, k.Open):
		m.choose(m.cursor)
	case key.Matches(km, k.Pick):
		if n, err := strconv.Atoi(km.String()); err == nil {
			m.choose(n - 1)
		}
	}
	return m, nil
}

// move puts the cursor on the next available fault in direction d, if any.
func (m *Model) move(d int) {
	for i := m.cursor + d; i >= 0 && i < len(m.faults); i += d {
		if m.faults[i].Available {
			m.cursor, m.note = i, ""
			return
		}
	}
}

// choose asks for the confirmation of fault i, unless it is unavailable.
func (m *Model) choose(i int) {
	if i < 0 || i >= len(m.faults) {
		return
	}
	f := m.faults[i]
	if !f.Available {
		m.note = string(f.Kind) + " is not available"
		if f.Why != "" {
			m.note += ": " + f.Why
		}
		return
	}
	m.cursor, m.confirming, m.note = i, true, ""
}

// maxInner is the widest the menu's text gets.
const maxInner = 110

// View implements tea.Model: the menu as a box, as wide as it needs up to
// the width it was given.
func (m *Model) View() string {
	st := m.ctx.Styles
	// As wide as the descriptions need, up to the width there is: a
	// description says the fault's figures (a tenth of its rate, 30 s).
	inner := max(min(m.width-4, maxInner), 20)
	var lines []string
	if m.confirming {
		f, _ := m.Choice()
		where := "into " + m.task
		if f.JobLevel || m.task == "" {
			where = "into the job"
		}
		lines = append(lines, st.BoxTitle.Render("inject "+string(f.Kind)+" "+where+"?"))
		for _, l := range common.Wrap(f.Description, inner, 3) {
			lines = append(lines, st.Muted.Render(l))
		}
		lines = append(lines, "",
			st.HelpKey.Render("y")+st.HelpDesc.Render(" inject")+"   "+st.HelpKey.Render("n/esc")+st.HelpDesc.Render(" cancel"),
		)
	} else {
		title := "inject a fault"
		if m.task != "" {
			title += " · selected " + m.task
		}
		lines = append(lines, st.BoxTitle.Render(title))
		kindW := 0
		for _, f := range m.faults {
			kindW = max(kindW, common.Width(string(f.Kind)))
		}
		if len(m.faults) == 0 {
			lines = append(lines, st.Muted.Render("no faults in this run's catalogue"))
		}
		for i, f := range m.faults {
			num := " "
			if i < 9 {
				num = strconv.Itoa(i + 1)
			}
			desc := f.Description
			if f.JobLevel {
				desc = "(job) " + desc
			}
			marker := " "
			if i == m.cursor {
				marker = "▸"
			}
			switch {
			case !f.Available:
				why := "unavailable"
				if f.Why != "" {
					why += ": " + f.Why
				}
				lines = append(lines, st.Disabled.Render(common.TruncateWords(marker+num+" "+common.PadRight(string(f.Kind), kindW)+"  "+why, inner)))
			case i == m.cursor:
				lines = append(lines, st.Selected.Render(marker+num+" "+common.PadRight(string(f.Kind), kindW))+"  "+common.TruncateWords(desc, inner-kindW-5))
			default:
				lines = append(lines, marker+num+" "+common.PadRight(string(f.Kind), kindW)+"  "+st.Muted.Render(common.TruncateWords(desc, inner-kindW-5)))
			}
		}
		if m.note != "" {
			lines = append(lines, st.Warning.Render(m.note))
		} else {
			lines = append(lines, "")
		}
		lines = append(lines, st.HelpKey.Render("↑↓")+st.HelpDesc.Render(" choose  ")+
			st.HelpKey.Render("enter/1-9")+st.HelpDesc.Render(" pick  ")+st.HelpKey.Render("esc")+st.HelpDesc.Render(" cancel"))
	}
	w := 0
	for _, l := range lines {
		w = max(w, common.Width(l))
	}
	w = min(w, inner)
	for i, l := range lines {
		lines[i] = common.PadRight(l, w)
	}
	return st.Box.Render(strings.Join(lines, "\n"))
}
