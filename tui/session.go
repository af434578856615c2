package tui

import (
	"context"
	"sync"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
)

// A Session is one screen over several runs of a job, shown in turn: a
// guided tour's runs (a savepoint taken, the job stopped and started again
// from it) stay on the screen the learner is reading, with no drop to the
// shell between them. Each run is Attached with its Controller and its
// events; the screen shows it as Run shows a job, afresh, at the size the
// terminal has. Between two runs it goes on showing the last one, and Note
// says what happens meanwhile.
type Session struct {
	prog *tea.Program
	done chan struct{} // closed once the program has ended
	err  error         // the program's, set before done closes
	once sync.Once
}

// attachMsg hands a Session's next run to the screen.
type attachMsg struct {
	ctrl   Controller
	events <-chan view.Stamped
}

// StartSession opens the screen on the first run, ctrl and its events,
// with opts as Run takes them. The screen stays until the user quits (q or
// ctrl+c: Done closes), ctx ends or Close.
func StartSession(ctx context.Context, ctrl Controller, events <-chan view.Stamped, opts Options) *Session {
	s := &Session{done: make(chan struct{})}
	s.prog = newProgram(ctrl, events, opts, s.done)
	stop := context.AfterFunc(ctx, s.prog.Quit)
	go func() {
		defer close(s.done)
		defer stop()
		_, s.err = s.prog.Run()
	}()
	return s
}

// Attach shows the Session's next run, ctrl and its events, in place of
// the one shown; the panes start afresh, as for a new job. It does nothing
// once the screen has closed.
func (s *Session) Attach(ctrl Controller, events <-chan view.Stamped) {
	s.send(attachMsg{ctrl: ctrl, events: events})
}

// Note flashes text on the screen's status line, as the UI's own messages
// are flashed: what happens between two runs.
func (s *Session) Note(text string) {
	s.send(common.FlashMsg{Text: text, Level: common.LevelInfo})
}

// send hands msg to the program unless it has ended (Program.Send blocks
// until the program runs, and drops a message once it has ended).
func (s *Session) send(msg tea.Msg) {
	select {
	case <-s.done:
	default:
		s.prog.Send(msg)
	}
}

// Done is closed once the screen has closed: the user quit, ctx ended, or
// Close.
func (s *Session) Done() <-chan struct{} { return s.done }

// Close closes the screen, giving the terminal back as it was, and returns
// the program's error, if it had one.
func (s *Session) Close() error {
	s.once.Do(s.prog.Quit)
	<-s.done
	return s.err
}

// attach replaces m with a model of the Session's next run, at m's size:
// m's ticks and its wait for events end, and the new model's begin.
func (m *model) attach(msg attachMsg) (tea.Model, tea.Cmd) {
	close(m.gone)
	next := newModel(msg.ctrl, msg.events, m.cfg)
	next.sampler.run = m.sampler.run + 1
	next.width, next.height = m.width, m.height
	next.ctx.Width, next.ctx.Height = m.width, m.height
	// Until the new run's first sample, the tour's panel stays where it
	// was: the layout does not jump to the events and back.
	next.ctx.Snap.Tour = m.ctx.Snap.Tour
	next.sync()
	return next, next.Init()
}
