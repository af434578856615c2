// Package events is the event log pane: the job's lifecycle events as
// sentences, the routine ones folded, newest at the bottom.
package events

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// maxLogEntries bounds the event log; the oldest entries go first.
const maxLogEntries = 2000

// logEntry is one line of the event log.
type logEntry struct {
	at    time.Duration // since the run started
	text  string
	level common.Level
	// fold is set on a line that sums up routine task_status events.
	fold *taskFold
	// checkpoint is set on a "checkpoint n triggered" line, which that
	// checkpoint's completion or failure replaces when nothing came
	// between them.
	checkpoint int64
	// savepoint is set on a "savepoint n completed" line, which the
	// savepoint_completed event that follows completes with where it was
	// written.
	savepoint int64
}

// taskFold sums up the subtasks that reached one routine status in one
// attempt: "13 tasks RUNNING (attempt 2)".
type taskFold struct {
	status  string
	attempt int64 // -1: not given
	tasks   []string
}

func (f *taskFold) text() string {
	var s string
	if len(f.tasks) <= 3 {
		s = strings.Join(f.tasks, " ")
	} else {
		s = strconv.Itoa(len(f.tasks)) + " tasks"
	}
	s += " " + f.status
	if f.attempt >= 0 {
		s += " (attempt " + strconv.FormatInt(f.attempt, 10) + ")"
	}
	return s
}

type foldKey struct {
	status  string
	attempt int64
}

// eventLog keeps the lifecycle events as lines, folding the routine ones so
// that the log tells the story instead of flooding: DEPLOYING, CREATED and
// CANCELING task statuses are left out, RUNNING, CANCELED and FINISHED are
// summed up per attempt on one line, FAILED ones get a line each.
type eventLog struct {
	entries []logEntry
	folds   map[foldKey]int // index in entries
	closed  bool
}

// skippedStatuses are task statuses the log leaves out.
var skippedStatuses = []string{"CREATED", "DEPLOYING", "INITIALIZING", "CANCELING", "SCHEDULED"}

// add appends one event.
func (l *eventLog) add(s view.Stamped) {
	switch s.Event.(type) {
	case view.TaskLoad, view.VerifyStatus:
		return // the graph and the verify line show them; the log would scroll away
	}
	if ts, ok := s.Event.(view.TaskStatus); ok {
		if slices.Contains(skippedStatuses, ts.Status) {
			return
		}
		if ts.Status != "FAILED" {
			l.fold(s.At, ts)
			return
		}
	}
	text, lvl := describeEvent(s.Event)
	entry := logEntry{at: s.At, text: text, level: lvl}
	switch e := s.Event.(type) {
	case view.CheckpointTriggered:
		entry.checkpoint = e.ID
	case view.CheckpointCompleted, view.CheckpointFailed:
		var id int64
		if c, ok := e.(view.CheckpointCompleted); ok {
			id = c.ID
			if c.Kind == "savepoint" {
				entry.savepoint = c.ID
			}
		} else {
			id = e.(view.CheckpointFailed).ID
		}
		if l.last() != nil && l.last().checkpoint == id {
			*l.last() = entry
			return
		}
	case view.SavepointCompleted:
		if l.last() != nil && l.last().savepoint == e.ID {
			if e.Path != "" {
				l.last().text += ", written to " + e.Path
			}
			l.last().savepoint = 0
			return
		}
	}
	l.push(entry)
}

// fold counts a routine task status into its line, making the line when it
// is the first of its status and attempt.
func (l *eventLog) fold(at time.Duration, ts view.TaskStatus) {
	attempt := ts.Attempt
	if attempt == 0 {
		attempt = -1 // not known
	}
	k := foldKey{ts.Status, attempt}
	if i, ok := l.folds[k]; ok {
		fd := l.entries[i].fold
		if !slices.Contains(fd.tasks, ts.Task) {
			fd.tasks = append(fd.tasks, ts.Task)
		}
		l.entries[i].text = fd.text()
		return
	}
	fd := &taskFold{status: ts.Status, attempt: attempt, tasks: []string{ts.Task}}
	lvl := common.LevelMuted
	if ts.Status == "FINISHED" {
		lvl = common.LevelInfo
	}
	l.push(logEntry{at: at, text: fd.text(), level: lvl, fold: fd})
	if l.folds == nil {
		l.folds = map[foldKey]int{}
	}
	l.folds[k] = len(l.entries) - 1
}

// last is the newest entry, or nil.
func (l *eventLog) last() *logEntry {
	if len(l.entries) == 0 {
		return nil
	}
	return &l.entries[len(l.entries)-1]
}

func (l *eventLog) push(e logEntry) {
	l.entries = append(l.entries, e)
	if len(l.entries) <= maxLogEntries {
		return
	}
	drop := len(l.entries) - maxLogEntries*3/4
	l.entries = append([]logEntry(nil), l.entries[drop:]...)
	for k, i := range l.folds {
		if i < drop {
			delete(l.folds, k)
		} else {
			l.folds[k] = i - drop
		}
	}
}

// close notes that the job stopped emitting events.
func (l *eventLog) close() {
	if l.closed {
		return
	}
	l.closed = true
	var at time.Duration
	if n := len(l.entries); n > 0 {
		at = l.entries[n-1].at
	}
	l.push(logEntry{at: at, text: "event stream ended: the job stopped emitting events", level: common.LevelMuted})
}

// Model is the scrolling event log, newest at the bottom, each line
// stamped with its wall-clock time; on a wide terminal a long sentence
// wraps, on a narrow one it is cut at a word boundary. Focused, ↑/↓ and
// pgup/pgdn scroll; at the bottom, and whenever the focus leaves it, it
// follows new events.
type Model struct {
	ctx           *common.Context
	width, height int
	focused       bool
	log           eventLog
	// back is how many lines the view is scrolled up from the newest.
	back int
	// filter: only the lines holding it show (case aside); typing: the
	// filter is being typed (/), and the keys go to it.
	filter string
	typing bool
}

// Typing reports whether a filter is being typed: every key goes to it.
func (p *Model) Typing() bool { return p.typing }

// StartFilter starts typing a filter (/), from the one there is.
func (p *Model) StartFilter() { p.typing, p.back = true, 0 }

// shown are the lines the filter lets through.
func (p *Model) shown() []logEntry {
	if p.filter == "" {
		return p.log.entries
	}
	f := strings.ToLower(p.filter)
	var out []logEntry
	for _, e := range p.log.entries {
		if strings.Contains(strings.ToLower(e.text), f) {
			out = append(out, e)
		}
	}
	return out
}

// typed takes a key while the filter is typed: enter keeps the filter,
// esc drops it.
func (p *Model) typed(k tea.KeyMsg) {
	switch k.Type {
	case tea.KeyRunes, tea.KeySpace:
		p.filter += string(k.Runes)
	case tea.KeyBackspace:
		if r := []rune(p.filter); len(r) > 0 {
			p.filter = string(r[:len(r)-1])
		}
	case tea.KeyEnter:
		p.typing = false
	case tea.KeyEsc:
		p.typing, p.filter = false, ""
	}
}

// New returns the pane; it draws what ctx holds.
func New(ctx *common.Context) *Model { return &Model{ctx: ctx} }

// Every pane and overlay is a Component.
var _ common.Component = (*Model)(nil)

// Init implements tea.Model.
func (p *Model) Init() tea.Cmd { return nil }

// SetSize implements Component.
func (p *Model) SetSize(w, h int) { p.width, p.height = w, h }

// SetFocused tells the pane whether it has the focus. Losing it goes back
// to following the newest events: a scrolled log must not go on showing
// old events while the job moves on.
func (p *Model) SetFocused(f bool) {
	if p.focused && !f {
		p.back, p.typing = 0, false // a filter being typed is kept as typed so far
	}
	p.focused = f
}

// Back is how many entries the view is scrolled up from the newest.
func (p *Model) Back() int { return p.back }

// ShortHelp implements help.KeyMap.
func (p *Model) ShortHelp() []key.Binding {
	return []key.Binding{p.ctx.Keys.Scroll, p.ctx.Keys.Pages}
}

// FullHelp implements help.KeyMap.
func (p *Model) FullHelp() [][]key.Binding {
	k := p.ctx.Keys
	top := key.NewBinding(key.WithKeys(k.Newest.Keys()...), key.WithHelp(k.Newest.Help().Key, "oldest event"))
	bottom := key.NewBinding(key.WithKeys(k.Oldest.Keys()...), key.WithHelp(k.Oldest.Help().Key, "newest event"))
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, top, bottom, k.Filter}}
}

// Update implements tea.Model: event batches are logged, keys scroll.
func (p *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case common.EventsMsg:
		before := len(p.shown())
		for _, e := range msg.Events {
			p.log.add(e)
		}
		if msg.Closed {
			p.log.close()
		}
		if p.back > 0 {
			// Keep the lines being read where they are.
			p.back += len(p.shown()) - before
		}
	case tea.KeyMsg:
		k := p.ctx.Keys
		page := max(p.height-1, 1)
		switch {
		case p.typing:
			p.typed(msg)
		case msg.Type == tea.KeyEsc && p.filter != "":
			p.filter = ""
		case key.Matches(msg, k.Newest):
			p.back = len(p.shown())
		case key.Matches(msg, k.Oldest):
			p.back = 0
		case key.Matches(msg, k.Up):
			p.back++
		case key.Matches(msg, k.Down):
			p.back--
		case key.Matches(msg, k.PageUp):
			p.back += page
		case key.Matches(msg, k.PageDown):
			p.back -= page
		}
	}
	p.back = max(min(p.back, len(p.shown())-(p.height-1)), 0)
	return p, nil
}

// View implements tea.Model.
func (p *Model) View() string {
	st := p.ctx.Styles
	rows := max(p.height-1, 0)
	entries := p.shown()
	n := len(entries)
	end := max(n-p.back, 0)
	// From the newest shown back, as many entries as fit; the oldest of
	// them may be cut to the lines left.
	started := p.ctx.Snap.Started
	var body []string
	start := end
	for start > 0 && len(body) < rows {
		start--
		body = append(p.entryLines(entries[start], started, min(maxEntryLines, rows-len(body))), body...)
	}
	info := ""
	switch {
	case p.typing:
		info = st.Warning.Render("/" + p.filter + "▏ enter keeps, esc drops")
	case p.filter != "":
		info = st.Warning.Render("/" + p.filter + ": " + strconv.Itoa(n) + " of " + strconv.Itoa(len(p.log.entries)) + " (esc drops)")
	case p.back > 0:
		info = st.Warning.Render("scrolled: " + strconv.Itoa(p.back) + " newer below")
	case start > 0:
		info = st.Muted.Render(strconv.Itoa(start) + " earlier")
	}
	lines := []string{common.Rule(st, "events", info, p.width, p.focused)}
	if n == 0 && p.filter != "" {
		lines = append(lines, st.Muted.Render(" no event holds "+strconv.Quote(p.filter)))
	} else if n == 0 {
		lines = append(lines, st.Muted.Render(" no events yet"))
	}
	lines = append(lines, body...)
	return strings.Join(common.FitLines(lines, p.width, p.height), "\n")
}

// maxEntryLines bounds the lines one event's sentence wraps onto.
const maxEntryLines = 3

// entryLines are an entry's screen lines, at most most: the stamp, then
// the sentence, wrapped under itself on a wide terminal, else cut at a
// word boundary.
func (p *Model) entryLines(e logEntry, started time.Time, most int) []string {
	st := p.ctx.Styles
	stamp := " " + common.WallClock(started.Add(e.at)) + "  "
	w := p.width - common.Width(stamp)
	style := st.Level(e.level)
	if !p.ctx.Wide() {
		return []string{st.Muted.Render(stamp) + style.Render(common.TruncateWords(e.text, w))}
	}
	wrapped := common.Wrap(e.text, w, max(most, 1))
	out := make([]string, len(wrapped))
	for i, l := range wrapped {
		if i == 0 {
			out[i] = st.Muted.Render(stamp) + style.Render(l)
		} else {
			out[i] = strings.Repeat(" ", common.Width(stamp)) + style.Render(l)
		}
	}
	return out
}
