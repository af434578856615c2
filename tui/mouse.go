package tui

import tea "github.com/charmbracelet/bubbletea"

// The mouse, as in k9s and lazygit: a click focuses the pane under it and
// selects the subtask or the checkpoint it is on; the wheel scrolls the
// pane under it (or the overlay on top). Options.NoMouse turns it off.

// wheelLines is how far one notch of the wheel scrolls the event log.
const wheelLines = 3

// handleMouse handles a mouse message.
func (m *model) handleMouse(msg tea.MouseMsg) tea.Cmd {
	wheel := msg.Button == tea.MouseButtonWheelUp || msg.Button == tea.MouseButtonWheelDown
	click := msg.Button == tea.MouseButtonLeft && msg.Action == tea.MouseActionPress
	if !wheel && !click {
		return nil
	}
	dir := "down"
	if msg.Button == tea.MouseButtonWheelUp {
		dir = "up"
	}
	if m.overlay != overlayNone {
		if wheel && m.overlay != overlayMenu {
			return m.handleKey(arrow(dir))
		}
		return nil
	}
	p, x, y, ok := m.paneAt(msg.X, msg.Y)
	if !ok || (p == paneCheckpoints && x >= m.sizes().cpW) {
		return nil // the restarts pane beside the checkpoints: nothing to select
	}
	m.focus = p
	m.sync()
	switch {
	case wheel && p == paneEvents:
		var cmd tea.Cmd
		for range wheelLines {
			m.log, cmd = update(m.log, arrow(dir))
		}
		return cmd
	case wheel:
		return m.handleKey(arrow(dir))
	case p == paneGraph:
		m.graph.SelectAt(x, y-1) // under the pane's rule
	case p == paneCheckpoints:
		m.cps.SelectAt(y)
	}
	return nil
}

// arrow is the up or down key.
func arrow(dir string) tea.KeyMsg {
	if dir == "up" {
		return tea.KeyMsg{Type: tea.KeyUp}
	}
	return tea.KeyMsg{Type: tea.KeyDown}
}

// paneAt is the pane at screen cell (x, y), with the cell in the pane's
// own lines; ok is false over the header, the status and help lines, and
// a guided tour's panel.
func (m *model) paneAt(x, y int) (p pane, px, py int, ok bool) {
	if m.width < MinWidth || m.height < MinHeight {
		return 0, 0, 0, false
	}
	s := m.sizes()
	graphTop := 1
	midTop := graphTop + s.graphH
	eventsTop := midTop + s.midH
	switch {
	case y >= graphTop && y < midTop:
		return paneGraph, x, y - graphTop, true
	case y >= midTop && y < eventsTop:
		return paneCheckpoints, x, y - midTop, true
	case y >= eventsTop && y < eventsTop+s.eventsH && m.ctx.Tour() == nil:
		return paneEvents, x, y - eventsTop, true
	}
	return 0, 0, 0, false
}
