package common

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// KeyMap is every key binding of the UI (keys are data: matched with
// key.Matches, listed by bubbles/help). Faults are injected on plain letters
// behind a confirmation, never on control chords.
type KeyMap struct {
	// Moving: the selected subtask in the graph (up/down between operators,
	// left/right between subtasks in spec order, both clamped at the ends),
	// the selected row of the checkpoints table, the event log's scroll.
	Up, Down, Left, Right key.Binding
	PageUp, PageDown      key.Binding
	// Newest selects the newest checkpoint, and the table follows new
	// ones again; in the event log it goes to the oldest line kept (the
	// top). Oldest selects the oldest checkpoint; in the log it goes back
	// to the newest line (the bottom), following new ones again.
	Newest, Oldest key.Binding
	// Filter types a filter for the event log (/); only the lines holding
	// it show.
	Filter key.Binding
	// Select, Rows, Scroll, Pages, Choose, PickHelp, Rate and CloseHelp
	// only stand for several keys at once in the short help line, and
	// ShortStep for Step there.
	Select, Rows, Scroll, Pages, Choose, PickHelp, Rate, CloseHelp, ShortStep, CloseOverview key.Binding

	NextPane, PrevPane key.Binding
	Open               key.Binding // the checkpoint detail
	Overview           key.Binding // the checkpoints' summary and configuration
	Back               key.Binding // close an overlay or menu

	Fault      key.Binding // the fault menu for the selected subtask
	Pick       key.Binding // a fault menu entry by its number
	Yes, No    key.Binding // the injection's confirmation
	Checkpoint key.Binding
	Savepoint  key.Binding
	// Stop and Cancel end an attached job (a Lifecycle Controller's);
	// ScaleUp and ScaleDown rescale its operator (a Rescaler's).
	Stop, Cancel, ScaleUp, ScaleDown key.Binding
	Mode                             key.Binding // exactly-once → exactly-once unaligned → at-least-once → …
	Pause                            key.Binding // sources
	Slow                             key.Binding // normal → slow → slower → normal
	Freeze                           key.Binding
	Step                             key.Binding
	// ResetRestarts makes the restart strategy forget its failures.
	ResetRestarts key.Binding
	RateUp        key.Binding
	RateDown      key.Binding

	// The guided tour's keys (Controller.TourKey), in the main mode
	// only: n inside the fault confirmation still cancels.
	TourNext, TourBack, TourRestart key.Binding

	Help      key.Binding
	Quit      key.Binding
	ForceQuit key.Binding
}

// DefaultKeyMap returns faultline's bindings.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:            key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:          key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Left:          key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/h", "previous subtask")),
		Right:         key.NewBinding(key.WithKeys("right", "l"), key.WithHelp("→/l", "next subtask")),
		PageUp:        key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "page up")),
		PageDown:      key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "page down")),
		Newest:        key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("home/g", "newest checkpoint")),
		Oldest:        key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("end/G", "oldest checkpoint")),
		Filter:        key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter the events")),
		Select:        key.NewBinding(key.WithKeys("up", "down", "left", "right"), key.WithHelp("↑↓←→", "select")),
		Rows:          key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑↓", "row")),
		Scroll:        key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑↓", "scroll")),
		Pages:         key.NewBinding(key.WithKeys("pgup", "pgdown"), key.WithHelp("pgup/pgdn", "page")),
		Choose:        key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑↓", "choose")),
		PickHelp:      key.NewBinding(key.WithKeys("enter", "1", "9"), key.WithHelp("enter/1-9", "pick")),
		Rate:          key.NewBinding(key.WithKeys("+", "-"), key.WithHelp("+/-", "rate")),
		CloseHelp:     key.NewBinding(key.WithKeys("?", "esc"), key.WithHelp("?/esc", "close help")),
		CloseOverview: key.NewBinding(key.WithKeys("i", "esc"), key.WithHelp("i/esc", "close")),
		ShortStep:     key.NewBinding(key.WithKeys("."), key.WithHelp(".", "step")),

		NextPane: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		PrevPane: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous pane")),
		Open:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "checkpoint detail")),
		Overview: key.NewBinding(key.WithKeys("i"), key.WithHelp("i", "summary, config")),
		Back:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close")),

		Fault:      key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "fault")),
		Pick:       key.NewBinding(key.WithKeys("1", "2", "3", "4", "5", "6", "7", "8", "9"), key.WithHelp("1-9", "pick")),
		Yes:        key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "inject")),
		No:         key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n/esc", "cancel")),
		Checkpoint: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "checkpoint")),
		Savepoint:  key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "savepoint")),
		Stop:       key.NewBinding(key.WithKeys("S"), key.WithHelp("S S", "stop with a savepoint")),
		Cancel:     key.NewBinding(key.WithKeys("C"), key.WithHelp("C C", "cancel the job")),
		ScaleUp:    key.NewBinding(key.WithKeys(">"), key.WithHelp(">", "one more subtask of the operator")),
		ScaleDown:  key.NewBinding(key.WithKeys("<"), key.WithHelp("<", "one subtask fewer")),
		Mode:       key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "mode")),
		Pause:      key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause")),
		Slow:       key.NewBinding(key.WithKeys("z"), key.WithHelp("z", "slow")),
		Freeze:     key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "freeze")),
		Step:       key.NewBinding(key.WithKeys("."), key.WithHelp(".", "step to the next moment")),

		ResetRestarts: key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "reset restart attempts")),
		RateUp:        key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "rate ×1.5")),
		RateDown:      key.NewBinding(key.WithKeys("-", "_"), key.WithHelp("-", "rate ÷1.5")),

		TourNext:    key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "next")),
		TourBack:    key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "back")),
		TourRestart: key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "restart")),

		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:      key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQuit: key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
	}
}

// CommandHelp is the short help of the commands that work from every pane,
// most useful first (the line is cut at the terminal's width).
func (k KeyMap) CommandHelp() []key.Binding {
	return []key.Binding{k.Fault, k.Checkpoint, k.Freeze, k.ShortStep, k.Slow, k.Pause, k.Mode, k.Savepoint, k.Rate, k.NextPane}
}

// FailedHelp is the short help once the job FAILED: nothing runs to
// inject into, checkpoint or freeze; R resubmits it.
func (k KeyMap) FailedHelp() []key.Binding {
	return []key.Binding{key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "resubmit from the newest checkpoint")), k.NextPane}
}

// HelpGroups are the columns of the full help overlay; tour adds the
// guided tour's keys, for while one runs, and lifecycle the keys that end
// an attached job.
func (k KeyMap) HelpGroups(tour, lifecycle bool) (titles []string, groups [][]key.Binding) {
	titles = []string{"move", "fault tolerance", "tempo, input, general"}
	groups = [][]key.Binding{
		{k.Up, k.Down, k.Left, k.Right, k.PageUp, k.PageDown, k.Newest, k.Oldest, k.Filter, k.NextPane, k.PrevPane, k.Open, k.Overview, k.Back},
		{k.Fault, k.Pick, k.Yes, k.No, k.Checkpoint, k.Savepoint, k.Mode, k.ResetRestarts},
		{k.Freeze, k.Step, k.Slow, k.Pause, k.RateUp, k.RateDown, k.Help, k.Quit, k.ForceQuit},
	}
	if lifecycle {
		groups[1] = append(groups[1], k.Stop, k.Cancel, k.ScaleUp, k.ScaleDown)
	}
	if tour {
		titles = append(titles, "tour")
		groups = append(groups, k.TourHelp())
	}
	return titles, groups
}

// TourHelp is the guided tour's keys, as the tour panel and the help list
// them.
func (k KeyMap) TourHelp() []key.Binding {
	return []key.Binding{k.TourNext, k.TourBack, k.TourRestart}
}

// ScrollTop moves top, the first of total lines shown rows at a time, as the
// arrow and page keys in km say (the overlays' scrolling), and keeps it
// in range.
func (k KeyMap) ScrollTop(km tea.KeyMsg, top, rows, total int) int {
	switch {
	case key.Matches(km, k.Up):
		top--
	case key.Matches(km, k.Down):
		top++
	case key.Matches(km, k.PageUp):
		top -= rows
	case key.Matches(km, k.PageDown):
		top += rows
	}
	return max(min(top, total-rows), 0)
}
