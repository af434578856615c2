package tui

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
	"github.com/faultline-dev/faultline/tui/components/checkpoints"
	"github.com/faultline-dev/faultline/tui/components/detail"
	"github.com/faultline-dev/faultline/tui/components/events"
	"github.com/faultline-dev/faultline/tui/components/faultmenu"
	"github.com/faultline-dev/faultline/tui/components/graph"
	"github.com/faultline-dev/faultline/tui/components/header"
	"github.com/faultline-dev/faultline/tui/components/helpview"
	"github.com/faultline-dev/faultline/tui/components/overview"
	"github.com/faultline-dev/faultline/tui/components/restarts"
	"github.com/faultline-dev/faultline/tui/components/status"
	"github.com/faultline-dev/faultline/tui/components/tour"

	"github.com/charmbracelet/bubbles/help"
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
	overlayMenu     // the fault menu, drawn over the lower panes
	overlayDetail   // the checkpoint detail, in place of the panes
	overlayOverview // the checkpoints' summary and configuration, in place of the panes
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
	cfg     modelConfig
	sampler sampler
	lastSeq int64
	// gone is closed when a Session's next run replaces this one, whose
	// number of the Session's runs is sampler.run.
	gone chan struct{}

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
	overview *overview.Model
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

	// armed is the key that ends the job (S or C) pressed once: pressed
	// again next, it ends the job; any other key disarms it.
	armed string

	// modeRefused is the mode the job last refused (or did not take):
	// the next press of the mode key goes on from it in the cycle.
	modeRefused string

	eventsClosed bool
}

// modelConfig is what newModel needs besides the job.
type modelConfig struct {
	period   time.Duration
	renderer *lipgloss.Renderer // nil: lipgloss's default
	theme    common.Theme
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
	if cfg.theme.Primary == nil {
		cfg.theme = common.DefaultTheme()
	}
	ctx := common.NewContextWith(cfg.renderer, cfg.theme)
	_, ctx.Lifecycle = ctrl.(Lifecycle)
	st, keys := ctx.Styles, ctx.Keys
	h := help.New()
	h.ShortSeparator = "  "
	h.Styles = help.Styles{
		ShortKey: st.HelpKey, ShortDesc: st.HelpDesc, ShortSeparator: st.HelpSep, Ellipsis: st.HelpSep,
		FullKey: st.HelpKey, FullDesc: st.HelpDesc, FullSeparator: st.HelpSep,
	}
	gone := make(chan struct{})
	return &model{
		ctrl:     ctrl,
		events:   stream,
		cfg:      cfg,
		gone:     gone,
		sampler:  sampler{ctrl: ctrl, count: new(atomic.Int64), done: cfg.done, gone: gone, settings: &newest{}},
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
		overview: overview.New(ctx),
		tour:     tour.New(ctx),
	}
}

// Init implements tea.Model: the first sample at once, and the wait for
// events.
func (m *model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.sampler.sample}
	if m.events != nil {
		cmds = append(cmds, waitEvents(m.events, m.sampler))
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
	case tea.MouseMsg:
		cmd = m.handleMouse(msg)
	case SnapshotMsg:
		if msg.Run != m.sampler.run {
			return m, nil // of a run this one replaced: its ticks end
		}
		cmd = m.handleSnapshot(msg)
	case EventsMsg:
		if msg.Run != m.sampler.run {
			return m, nil
		}
		cmd = m.handleEvents(msg)
	case attachMsg:
		return m.attach(msg)
	default:
		cmd = m.handleResult(msg)
	}
	m.sync()
	return m, cmd
}

// handleSnapshot takes a sample and schedules the next.
func (m *model) handleSnapshot(msg SnapshotMsg) tea.Cmd {
	next := m.sampler.tick(m.cfg.period)
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
	return waitEvents(m.events, m.sampler)
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
		m.answered(msg.Err, "checkpoint", triggeredText("checkpoint", msg.ID))
	case SavepointTriggeredMsg:
		m.answered(msg.Err, "savepoint", triggeredText("savepoint", msg.ID))
	case RescaledMsg:
		m.answered(msg.Err, msg.What, msg.What+" asked for: the scheduler rescales when it decides")
	case JobEndRequestedMsg:
		m.answered(msg.Err, msg.What, msg.What+" asked for: the job says when it is done")
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
	case ResubmittedMsg:
		if msg.Err != nil {
			m.flash("resubmit: "+msg.Err.Error(), common.LevelError)
		}
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

// answered flashes a command's answer: what failed and why, or ok.
func (m *model) answered(err error, what, ok string) {
	if err != nil {
		m.flash(what+": "+err.Error(), common.LevelError)
		return
	}
	m.flash(ok, common.LevelSuccess)
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
