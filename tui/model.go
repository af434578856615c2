package tui

import (
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"faultline/runtime/view"
	"faultline/tui/common"
	"faultline/tui/components/checkpoints"
	"faultline/tui/components/detail"
	"faultline/tui/components/events"
	"faultline/tui/components/faultmenu"
	"faultline/tui/components/graph"
	"faultline/tui/components/header"
	"faultline/tui/components/helpview"
	"faultline/tui/components/restarts"
	"faultline/tui/components/status"
	"faultline/tui/components/tour"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// The smallest terminal the UI lays out in; below it a screen says so.
const (
	MinWidth  = 80
	MinHeight = 24
)

// pane is a focusable pane; tab cycles through them in this order.
type pane int

const (
	paneGraph pane = iota
	paneCheckpoints
	paneEvents
	paneCount
)

// overlayKind is what covers the panes, if anything.
type overlayKind int

const (
	overlayNone overlayKind = iota
	overlayHelp
	overlayMenu   // the fault menu, drawn over the lower panes
	overlayDetail // the checkpoint detail, in place of the panes
)

// model is the root of the UI. It owns the layout, keeps the shared
// Context, routes messages to the components (keys only to the focused one
// or to the overlay on top) and issues every command to the Controller.
type model struct {
	// menuComing is set while the fault menu's catalogue is on its way;
	// keys that came in the same read as the one that asked for it wait in
	// afterMenu and go to the menu once it is open ("x1" in one read).
	menuComing bool
	afterMenu  []rune

	ctrl    Controller
	events  <-chan view.Stamped
	done    <-chan struct{}
	period  time.Duration
	sampler sampler
	lastSeq int64

	ctx           *common.Context
	keys          common.KeyMap // the same as ctx.Keys
	help          help.Model
	width, height int

	header   *header.Model
	graph    *graph.Model
	cps      *checkpoints.Model
	restarts *restarts.Model
	log      *events.Model
	status   *status.Model
	menu     *faultmenu.Model
	detail   *detail.Model
	helpView *helpview.Model
	tour     *tour.Model // in the events' place while a guided tour runs

	focus   pane
	overlay overlayKind

	// What the user asked for, shown until a sample confirms it.
	tempo        intent[Tempo]
	paused       intent[bool]
	mode         intent[string]
	rate         intent[float64]
	beforeFreeze Tempo // the tempo space returns to
	freezeWarned bool  // the freeze's limit was flashed (reset when the world moves)

	// modeRefused is the mode the job last refused (or did not take):
	// the next press of the mode key goes on from it in the cycle.
	modeRefused string

	eventsClosed bool
}

// modelConfig is what newModel needs besides the job.
type modelConfig struct {
	period   time.Duration
	renderer *lipgloss.Renderer // nil: lipgloss's default
	// done is closed when Run returns, so that the command waiting for
	// events does not outlive it.
	done <-chan struct{}
}

// newModel returns the root model for ctrl and its event stream (stream
// may be nil).
func newModel(ctrl Controller, stream <-chan view.Stamped, cfg modelConfig) *model {
	if cfg.period <= 0 {
		cfg.period = DefaultTickPeriod
	}
	ctx := common.NewContext(cfg.renderer)
	st, keys := ctx.Styles, ctx.Keys
	h := help.New()
	h.ShortSeparator = "  "
	h.Styles = help.Styles{
		ShortKey: st.HelpKey, ShortDesc: st.HelpDesc, ShortSeparator: st.HelpSep, Ellipsis: st.HelpSep,
		FullKey: st.HelpKey, FullDesc: st.HelpDesc, FullSeparator: st.HelpSep,
	}
	return &model{
		ctrl:     ctrl,
		events:   stream,
		done:     cfg.done,
		period:   cfg.period,
		sampler:  sampler{ctrl: ctrl, count: new(atomic.Int64), done: cfg.done, settings: &newest{}},
		ctx:      ctx,
		keys:     keys,
		help:     h,
		header:   header.New(ctx),
		graph:    graph.New(ctx),
		cps:      checkpoints.New(ctx),
		restarts: restarts.New(ctx),
		log:      events.New(ctx),
		status:   status.New(ctx),
		menu:     faultmenu.New(ctx),
		detail:   detail.New(ctx),
		helpView: helpview.New(ctx, h),
		tour:     tour.New(ctx),
	}
}

// Init implements tea.Model: the first sample at once, and the wait for
// events.
func (m *model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.sampler.sample}
	if m.events != nil {
		cmds = append(cmds, waitEvents(m.events, m.done))
	}
	return tea.Batch(cmds...)
}

// Update implements tea.Model. It only sorts messages out; each kind has
// its handler.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.ctx.Width, m.ctx.Height = msg.Width, msg.Height
	case tea.KeyMsg:
		cmd = m.handleKeys(msg)
	case SnapshotMsg:
		cmd = m.handleSnapshot(msg)
	case EventsMsg:
		cmd = m.handleEvents(msg)
	default:
		cmd = m.handleResult(msg)
	}
	m.sync()
	return m, cmd
}

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

// handleSnapshot takes a sample and schedules the next.
func (m *model) handleSnapshot(msg SnapshotMsg) tea.Cmd {
	next := m.sampler.tick(m.period)
	if msg.Seq != 0 {
		if msg.Seq <= m.lastSeq {
			return next // older than what is shown
		}
		m.lastSeq = msg.Seq
	}
	m.ctx.Snap, m.ctx.HasSnap = msg.Snapshot, true
	m.ctx.Modes.Seed(msg.Snapshot.Job.Mode)
	m.observeIntents(msg.Seq)
	m.sync()
	m.header, _ = update(m.header, msg)
	m.graph, _ = update(m.graph, msg)
	m.cps, _ = update(m.cps, msg)
	m.status, _ = update(m.status, msg)
	return next
}

// observeIntents checks the settings the user asked for against a sample,
// and says so when the job did not take one.
func (m *model) observeIntents(seq int64) {
	in, job := m.ctx.Snap.Input, m.ctx.Snap.Job
	if m.tempo.observe(seq, in.Tempo == m.tempo.want) {
		m.flash("tempo: the job still runs "+in.Tempo.String(), common.LevelWarning)
	}
	if m.paused.observe(seq, in.SourcesPaused == m.paused.want) {
		m.flash("pause: the job's sources did not follow", common.LevelWarning)
	}
	if m.mode.observe(seq, job.Mode == m.mode.want) {
		m.modeRefused = m.mode.want
		m.flash("mode: the job still checkpoints "+job.Mode, common.LevelWarning)
	}
	if frozen, ok := common.FrozenFor(&m.ctx.Snap); !ok {
		m.freezeWarned = false
	} else if lim := job.FreezeLimit; lim > 0 && frozen >= lim/2 && !m.freezeWarned {
		m.freezeWarned = true
		m.flash(fmt.Sprintf("frozen for %s: at %s %s and the job fails over; space goes on", common.HumanDuration(frozen.Truncate(time.Second)), common.RoundDuration(lim), job.FreezeLimitWhy), common.LevelWarning)
	}
	// A generator may round the rate it was given.
	if m.rate.observe(seq, math.Abs(in.Rate-m.rate.want) <= 0.01*m.rate.want) {
		m.flash("rate: the generator still writes "+common.HumanRate(in.Rate), common.LevelWarning)
	}
}

// handleEvents logs a batch and waits for the next, unless the stream
// ended; the UI goes on showing the job either way.
func (m *model) handleEvents(msg EventsMsg) tea.Cmd {
	for _, e := range msg.Events {
		m.ctx.Modes.Observe(e.Event)
	}
	m.log, _ = update(m.log, msg)
	if msg.Closed {
		m.eventsClosed = true
		return nil
	}
	return waitEvents(m.events, m.done)
}

// sync writes the shown settings and the selection into the Context, tells
// the panes about the focus and lays them out. The events are not drawn
// during a guided tour: the focus leaves them.
func (m *model) sync() {
	s := &m.ctx.Snap
	if !m.drawn(m.focus) {
		m.focus = paneGraph
	}
	m.ctx.Tempo = m.tempo.value(s.Input.Tempo)
	m.ctx.Paused = m.paused.value(s.Input.SourcesPaused)
	m.ctx.Mode = m.mode.value(s.Job.Mode)
	m.ctx.Rate = m.rate.value(s.Input.Rate)
	m.ctx.Selected = m.graph.Selected()
	m.graph.SetFocused(m.focus == paneGraph)
	m.cps.SetFocused(m.focus == paneCheckpoints)
	m.log.SetFocused(m.focus == paneEvents)
	m.layout()
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
	case overlayDetail:
		if key.Matches(k, m.keys.Up, m.keys.Down, m.keys.PageUp, m.keys.PageDown, m.keys.Back) {
			m.detail, cmd = update(m.detail, k)
			return cmd
		}
		if key.Matches(k, m.keys.NextPane, m.keys.PrevPane, m.keys.Fault, m.keys.Open, m.keys.Left, m.keys.Right) {
			return nil
		}
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

// handleResult takes the results of commands and the requests of
// components.
func (m *model) handleResult(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case FaultsMsg:
		m.menuComing = false
		if m.overlay == overlayNone { // not over what the user opened since
			m.menu.Open(msg.Task, msg.Faults)
			m.overlay = overlayMenu
		}
		if rest := m.afterMenu; len(rest) > 0 {
			m.afterMenu = nil
			return m.handleKeys(tea.KeyMsg{Type: tea.KeyRunes, Runes: rest})
		}
	case common.InjectMsg:
		m.overlay = overlayNone
		m.flash("injecting "+string(msg.Fault)+" "+where(msg.Task)+"…", common.LevelInfo)
		return inject(m.ctrl, msg.Fault, msg.Task)
	case FaultInjectedMsg:
		if msg.Err != nil {
			m.flash("inject "+string(msg.Fault)+" "+where(msg.Task)+": "+msg.Err.Error(), common.LevelError)
		} else {
			m.flash("injected "+string(msg.Fault)+" "+where(msg.Task), common.LevelWarning)
		}
	case CheckpointTriggeredMsg:
		if msg.Err != nil {
			m.flash("checkpoint: "+msg.Err.Error(), common.LevelError)
		} else {
			m.flash("checkpoint "+common.Itoa(msg.ID)+" triggered", common.LevelSuccess)
		}
	case SavepointTriggeredMsg:
		if msg.Err != nil {
			m.flash("savepoint: "+msg.Err.Error(), common.LevelError)
		} else {
			m.flash("savepoint "+common.Itoa(msg.ID)+" triggered", common.LevelSuccess)
		}
	case ModeSetMsg:
		if msg.Err != nil {
			if msg.done.gen == m.mode.gen {
				m.modeRefused = msg.Mode
			}
			m.mode.failed(msg.done)
			m.flash("mode: "+msg.Err.Error(), common.LevelError)
		} else {
			m.mode.done(msg.done)
		}
	case RateSetMsg:
		if msg.Err != nil {
			m.rate.failed(msg.done)
			m.flash("rate: "+msg.Err.Error(), common.LevelError)
		} else {
			m.rate.done(msg.done)
		}
	case SourcesPausedMsg:
		m.paused.done(msg.done)
	case TempoSetMsg:
		m.tempo.done(msg.done)
	case SteppedMsg:
		// The flash already said what a step does.
	case TourKeyMsg:
		// The panel shows the tour's answer with the next sample; a key
		// no tour took means nothing else.
	case RestartsResetMsg:
		m.flash("restart attempts reset: the strategy starts afresh, as for a new job", common.LevelSuccess)
	case common.OpenDetailMsg:
		m.detail.Open(msg.ID)
		m.overlay = overlayDetail
	case common.CloseOverlayMsg:
		m.overlay = overlayNone
	case common.FlashMsg:
		m.flash(msg.Text, msg.Level)
	}
	return nil
}

// flash shows text in the flash.
func (m *model) flash(text string, l common.Level) {
	m.status, _ = update(m.status, common.FlashMsg{Text: text, Level: l})
}

// where names a fault's target in a sentence.
func where(task string) string {
	if task == "" {
		return "into the job"
	}
	return "into " + task
}

// layoutSizes are the heights and widths the panes get.
type layoutSizes struct {
	graphH, midH, eventsH int // each counts its rule line; a tour's panel gets eventsH
	cpW, restartsW        int
	// tourHelpRow is set when the short help's line went to the tour's
	// panel (counted in eventsH).
	tourHelpRow bool
}

// Heights the lower panes keep at least (rule line included), what they
// get before the graph shows every strip, and what the events get before
// the checkpoints get more than wantMidH (a restart's story is a dozen
// lines).
const (
	minMidH, minEventsH     = 5, 4
	roomyMidH, roomyEventsH = 7, 5
	wantMidH, wantEventsH   = 6, 13
)

// sizes splits the terminal: header, job graph, checkpoints beside
// restarts, events, the status line and the help line. The graph gets what
// it needs to show the strips of every subtask when that leaves the lower
// panes room enough, else what it needs for the selected row's strips;
// the rest is shared by the checkpoints and the events, the events first
// up to wantEventsH.
func (m *model) sizes() layoutSizes {
	avail := m.height - 3 // header, status, help
	compact, roomy := m.graph.Heights()
	g := compact + 1
	if roomy+1+roomyMidH+roomyEventsH <= avail {
		g = roomy + 1
	}
	g = max(min(g, avail-minMidH-minEventsH), 2)
	rest := avail - g
	mid := max(minMidH, (rest+1)/2)
	if ev := rest - mid; ev < wantEventsH {
		ev = max(ev, min(wantEventsH, rest-wantMidH))
		mid = rest - ev
	}
	cpW := m.width * 3 / 5
	s := layoutSizes{graphH: g, midH: mid, eventsH: rest - mid, cpW: cpW, restartsW: m.width - cpW - 1}
	if m.ctx.Tour() != nil {
		fitTour(&s)
	}
	return s
}

// tourMidH is the least the checkpoints and restarts keep (rule line
// included) to give a guided tour's panel its rows.
const tourMidH = 4

// fitTour lays out a guided tour: its panel takes the events' place, and
// when that is shorter than tour.MinHeight (80×24 gives the events four
// lines), it takes the short help's line (the panel lists the tour's
// keys), then lines of the checkpoints and restarts down to tourMidH (the
// history keeps its newest rows and the restarts pane its most urgent
// lines), then of the graph. The layout depends on the terminal and the
// job only, never on what a step says.
func fitTour(s *layoutSizes) {
	need := tour.MinHeight - s.eventsH
	if need <= 0 {
		return
	}
	s.tourHelpRow = true
	s.eventsH++
	need--
	take := min(need, max(s.midH-tourMidH, 0))
	s.midH -= take
	s.eventsH += take
	need -= take
	take = min(need, max(s.graphH-2, 0))
	s.graphH -= take
	s.eventsH += take
}

// layout hands every component its size.
func (m *model) layout() {
	if m.width < MinWidth || m.height < MinHeight {
		return
	}
	s := m.sizes()
	m.header.SetSize(m.width, 1)
	m.graph.SetSize(m.width, s.graphH)
	m.cps.SetSize(s.cpW, s.midH)
	m.restarts.SetSize(s.restartsW, s.midH)
	m.log.SetSize(m.width, s.eventsH)
	m.tour.SetSize(m.width, s.eventsH)
	m.status.SetSize(m.width, 1)
	body := m.height - 3
	m.detail.SetSize(m.width, body)
	m.helpView.SetSize(m.width, body)
	m.menu.SetSize(m.width, body)
}

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

// helpLine is the short help of what has the keys now, with "? help  q
// quit" always on the right.
func (m *model) helpLine() string {
	var bindings []key.Binding
	switch m.overlay {
	case overlayMenu:
		bindings = m.menu.ShortHelp()
	case overlayHelp:
		bindings = m.helpView.ShortHelp()
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
		bindings = append(bindings, m.keys.CommandHelp()...)
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

// update hands msg to a component and gives back the component (Update
// returns the tea.Model interface; every component here is a pointer that
// returns itself).
func update[C tea.Model](c C, msg tea.Msg) (C, tea.Cmd) {
	m, cmd := c.Update(msg)
	if next, ok := m.(C); ok {
		return next, cmd
	}
	return c, cmd
}
