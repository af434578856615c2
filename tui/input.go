package tui

import (
	"math"
	"strings"

	"github.com/faultline-dev/faultline/tui/common"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// Bounds and step of the input rate keys.
const (
	minRate    = 10
	maxRate    = 10_000_000
	rateFactor = 1.5
	// defaultRate is what + and - start from when the job reports none.
	defaultRate = 1000
)

// handleKeys handles a key message. Bubble Tea v1 delivers the runes read
// in one go as one message (keys pressed fast, or pasted: "csm"), which no
// binding matches; each rune is a key of its own, handled in order.
func (m *model) handleKeys(msg tea.KeyMsg) tea.Cmd {
	if msg.Type != tea.KeyRunes || len(msg.Runes) < 2 {
		return m.handleKey(msg)
	}
	var cmds []tea.Cmd
	for i, r := range msg.Runes {
		cmds = append(cmds, m.handleKey(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}))
		m.sync()
		if m.menuComing {
			m.afterMenu = append(m.afterMenu, msg.Runes[i+1:]...)
			break
		}
	}
	return tea.Sequence(cmds...)
}

// handleKey routes a key: ctrl+c always quits; an overlay takes the keys it
// knows; then the commands that work from every pane; the rest goes to the
// focused pane.
func (m *model) handleKey(k tea.KeyMsg) tea.Cmd {
	var cmd tea.Cmd
	switch m.overlay {
	case overlayMenu:
		if key.Matches(k, m.keys.ForceQuit) {
			return tea.Quit
		}
		m.menu, cmd = update(m.menu, k)
		return cmd
	case overlayHelp:
		if key.Matches(k, m.keys.Quit, m.keys.ForceQuit) {
			return tea.Quit
		}
		m.helpView, cmd = update(m.helpView, k)
		return cmd
	case overlayOverview:
		if key.Matches(k, m.keys.Quit, m.keys.ForceQuit) {
			return tea.Quit
		}
		m.overview, cmd = update(m.overview, k)
		return cmd
	case overlayDetail:
		if key.Matches(k, m.keys.Up, m.keys.Down, m.keys.PageUp, m.keys.PageDown, m.keys.Back) {
			m.detail, cmd = update(m.detail, k)
			return cmd
		}
		if key.Matches(k, m.keys.NextPane, m.keys.PrevPane, m.keys.Fault, m.keys.Open, m.keys.Left, m.keys.Right) {
			return nil
		}
	}
	if m.log.Typing() && !key.Matches(k, m.keys.ForceQuit) {
		m.log, cmd = update(m.log, k)
		return cmd
	}
	if cmd, ok := m.commandKey(k); ok {
		return cmd
	}
	switch m.focus {
	case paneGraph:
		m.graph, cmd = update(m.graph, k)
	case paneCheckpoints:
		m.cps, cmd = update(m.cps, k)
	case paneEvents:
		m.log, cmd = update(m.log, k)
	}
	return cmd
}

// commandKey handles the keys that work from every pane: quitting, help,
// focus, and the commands to the job. ok is false for any other key.
func (m *model) commandKey(k tea.KeyMsg) (cmd tea.Cmd, ok bool) {
	keys := m.keys
	armed := m.armed
	m.armed = ""
	if a, limited := m.limitedAction(k); limited {
		if why := m.ctrl.(Limited).Unavailable(a); why != "" {
			m.flash(why, common.LevelWarning)
			return nil, true
		}
	}
	switch {
	case key.Matches(k, keys.Quit, keys.ForceQuit):
		return tea.Quit, true
	case key.Matches(k, keys.Help):
		m.overlay = overlayHelp
	case key.Matches(k, keys.Overview):
		m.overlay = overlayOverview
	case key.Matches(k, keys.Filter):
		if m.drawn(paneEvents) {
			m.focus = paneEvents
			m.log.StartFilter()
		}
	case key.Matches(k, keys.NextPane):
		m.cycleFocus(+1)
	case key.Matches(k, keys.PrevPane):
		m.cycleFocus(-1)
	case key.Matches(k, keys.Fault):
		task := m.graph.Selected()
		if task == "" {
			m.flash("no subtask selected yet", common.LevelWarning)
			return nil, true
		}
		m.menuComing = true
		return fetchFaults(m.ctrl, task), true
	case key.Matches(k, keys.Checkpoint):
		m.flash("triggering a checkpoint…", common.LevelInfo)
		return triggerCheckpoint(m.ctrl), true
	case key.Matches(k, keys.Savepoint):
		m.flash("triggering a savepoint…", common.LevelInfo)
		return triggerSavepoint(m.ctrl), true
	case key.Matches(k, keys.Stop, keys.Cancel):
		return m.endJob(k.String(), armed), true
	case key.Matches(k, keys.ScaleUp, keys.ScaleDown):
		return m.rescale(key.Matches(k, keys.ScaleUp)), true
	case key.Matches(k, keys.Mode):
		return m.cycleMode(), true
	case key.Matches(k, keys.Pause):
		return m.togglePause(), true
	case key.Matches(k, keys.Slow):
		return m.cycleSlow(), true
	case key.Matches(k, keys.Freeze):
		return m.toggleFreeze(), true
	case key.Matches(k, keys.Step):
		return m.step(), true
	case key.Matches(k, keys.ResetRestarts):
		if m.ctx.Snap.Job.Status == "FAILED" {
			m.flash("resubmitting: a new job from the newest checkpoint, its restart strategy afresh…", common.LevelInfo)
			return resubmit(m.ctrl), true
		}
		return resetRestarts(m.ctrl), true
	case key.Matches(k, keys.RateUp):
		return m.changeRate(rateFactor), true
	case key.Matches(k, keys.RateDown):
		return m.changeRate(1 / rateFactor), true
	case key.Matches(k, keys.TourNext):
		return tourKey(m.ctrl, "n"), true
	case key.Matches(k, keys.TourBack):
		return tourKey(m.ctrl, "b"), true
	case key.Matches(k, keys.TourRestart):
		return tourKey(m.ctrl, "r"), true
	default:
		return nil, false
	}
	return nil, true
}

// limitedAction is the Action of key k when the Controller is Limited and
// k asks for one.
func (m *model) limitedAction(k tea.KeyMsg) (Action, bool) {
	if _, ok := m.ctrl.(Limited); !ok {
		return "", false
	}
	keys := m.keys
	switch {
	case key.Matches(k, keys.Mode):
		return ActionMode, true
	case key.Matches(k, keys.Pause):
		return ActionPause, true
	case key.Matches(k, keys.Slow, keys.Freeze, keys.Step):
		return ActionTempo, true
	case key.Matches(k, keys.RateUp, keys.RateDown):
		return ActionRate, true
	case key.Matches(k, keys.ResetRestarts):
		return ActionRestarts, true
	}
	return "", false
}

// endJob stops the job with a savepoint (S) or cancels it (C) when the
// same key was pressed just before; else it arms the key and says what a
// second press does.
func (m *model) endJob(k, armed string) tea.Cmd {
	l, ok := m.ctrl.(Lifecycle)
	if !ok {
		m.flash("this job ends with q (with a savepoint first under --savepoint-on-exit)", common.LevelWarning)
		return nil
	}
	what := map[string]string{"S": "stop the job with a savepoint", "C": "cancel the job"}[k]
	if armed != k {
		m.armed = k
		m.flash("press "+k+" again to "+what, common.LevelWarning)
		return nil
	}
	m.flash(what+"…", common.LevelInfo)
	return endJob(l, k == "S")
}

// rescale asks for one subtask more (up) or fewer of the selected
// subtask's operator.
func (m *model) rescale(up bool) tea.Cmd {
	r, ok := m.ctrl.(Rescaler)
	if !ok {
		m.flash("this job's parallelism is its job spec's (rescale an attached Flink job with > and <)", common.LevelWarning)
		return nil
	}
	task := m.graph.Selected()
	op, _, found := strings.Cut(task, "/")
	if !found {
		m.flash("no subtask selected yet", common.LevelWarning)
		return nil
	}
	delta, what := 1, "one more subtask of "+op
	if !up {
		delta, what = -1, "one subtask fewer of "+op
	}
	m.flash("asking for "+what+"…", common.LevelInfo)
	return func() tea.Msg { return RescaledMsg{What: what, Err: r.Rescale(op, delta)} }
}

// drawn reports whether pane p is on the screen: the events are not
// during a guided tour (they are kept, and come back after it).
func (m *model) drawn(p pane) bool { return p != paneEvents || m.ctx.Tour() == nil }

// cycleFocus moves the focus to the next pane on the screen in direction
// d (tab: +1, shift+tab: -1).
func (m *model) cycleFocus(d int) {
	for range paneCount {
		m.focus = pane((int(m.focus) + d + int(paneCount)) % int(paneCount))
		if m.drawn(m.focus) {
			return
		}
	}
}

// cycleMode asks for the next checkpointing mode, for the checkpoints
// triggered from now on: exactly-once with aligned barriers, then
// exactly-once unaligned (barriers overtake the records in flight, which
// are stored with the checkpoint), then at-least-once (barriers counted,
// nothing blocked), then aligned again (Flink: CheckpointingMode and
// execution.checkpointing.unaligned). After a mode the job refused, it
// goes on from that mode, so that a job that cannot take one is not asked
// for it again and again.
func (m *model) cycleMode() tea.Cmd {
	from := m.ctx.Mode
	if m.modeRefused != "" {
		from, m.modeRefused = m.modeRefused, ""
	}
	next := common.NextMode(from)
	gen := m.mode.request(next)
	m.flash("mode "+next+" from the next checkpoint", common.LevelInfo)
	return setMode(m.sampler, next, gen)
}

// togglePause stops or resumes the sources; barriers and checkpoints go on.
func (m *model) togglePause() tea.Cmd {
	next := !m.ctx.Paused
	gen := m.paused.request(next)
	if next {
		m.flash("sources paused: no new records; barriers and checkpoints go on", common.LevelWarning)
	} else {
		m.flash("sources resumed", common.LevelInfo)
	}
	return setPaused(m.sampler, next, gen)
}

// cycleSlow goes normal → slow → slower → normal; from frozen it moves on
// from the tempo before the freeze.
func (m *model) cycleSlow() tea.Cmd {
	base := m.ctx.Tempo
	if base == TempoFrozen {
		base = m.beforeFreeze
	}
	next := map[Tempo]Tempo{TempoNormal: TempoSlow, TempoSlow: TempoSlower, TempoSlower: TempoNormal}[base]
	return m.setTempo(next, false)
}

// toggleFreeze stops the world, or lets it go on at the tempo it had.
func (m *model) toggleFreeze() tea.Cmd {
	if m.ctx.Tempo == TempoFrozen {
		return m.setTempo(m.beforeFreeze, false)
	}
	m.beforeFreeze = m.ctx.Tempo
	return m.setTempo(TempoFrozen, false)
}

// step lets the frozen world run slowly to the next moment a person can
// see (barriers leave a stage, reach an operator that aligns, a checkpoint
// completes), then freezes it again; when the world is not frozen it
// freezes it first.
func (m *model) step() tea.Cmd {
	if m.ctx.Tempo != TempoFrozen {
		m.beforeFreeze = m.ctx.Tempo
		return m.setTempo(TempoFrozen, true)
	}
	m.flash("step: the world runs slowly to the next moment, then stands still again", common.LevelInfo)
	return step(m.ctrl)
}

// setTempo asks for tempo t, then a step when step is set.
func (m *model) setTempo(t Tempo, step bool) tea.Cmd {
	gen := m.tempo.request(t)
	switch {
	case step:
		m.flash("frozen, then a step to the next moment: . steps again, space resumes", common.LevelInfo)
	case t == TempoFrozen:
		m.flash("frozen: . steps to the next moment, space resumes", common.LevelInfo)
	case t == TempoSlow:
		m.flash("slow motion: a short pause before every batch", common.LevelInfo)
	case t == TempoSlower:
		m.flash("slower motion: a long pause before every batch", common.LevelInfo)
	default:
		m.flash("full speed", common.LevelInfo)
	}
	return setTempo(m.sampler, t, step, gen)
}

// changeRate multiplies the input rate by f, within bounds.
func (m *model) changeRate(f float64) tea.Cmd {
	cur := m.ctx.Rate
	if cur <= 0 {
		cur = defaultRate
	}
	next := math.Round(min(max(cur*f, minRate), maxRate))
	gen := m.rate.request(next)
	m.flash("generator rate "+common.Thousands(int64(next))+" records/s", common.LevelInfo)
	return setRate(m.sampler, next, gen)
}
