package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui"
)

// tourScreen is the one terminal UI a tour shows all its runs on: the
// first run opens it, each later one is attached to it, and it closes when
// the tour ends. While it is up, what the runs write to stdout and stderr
// (a stop's "checking its output…", a run's summary, a taken port) would
// draw over it: the runs write to its heldOutputs instead, which flash
// each line on the screen and keep it for the terminal once the screen has
// closed.
type tourScreen struct {
	ctx  context.Context // the tour's: the screen closes when it ends
	opts tui.Options
	// session is nil until the first run; the command's goroutine sets
	// it, under mu, which the runs' output reads it under.
	session        *tui.Session
	mu             sync.Mutex
	held           []heldLine // written while the screen was up, oldest first
	closed         bool
	stdout, stderr *heldOutput
}

// heldLine is what a run wrote while the screen was up, and where to.
type heldLine struct {
	w io.Writer
	p []byte
}

// newTourScreen is the screen for a tour, until ctx ends, whose output
// goes to stdout and stderr, stdout being the terminal.
func newTourScreen(ctx context.Context, stdout, stderr io.Writer, opts tui.Options) *tourScreen {
	s := &tourScreen{ctx: ctx, opts: opts}
	term, _ := terminalOf(stdout)
	s.stdout = &heldOutput{screen: s, w: stdout, term: term}
	s.stderr = &heldOutput{screen: s, w: stderr, term: term}
	return s
}

// show puts a run on the screen, ctrl and its events: the first opens it
// (until the learner quits, the tour's ctx ends or close), a later one
// replaces the run shown. It returns what closes when the screen has
// closed.
func (s *tourScreen) show(ctrl *uiController, events <-chan view.Stamped) (done <-chan struct{}) {
	if s.session != nil {
		s.session.Attach(ctrl, events)
		return s.session.Done()
	}
	session := tui.StartSession(s.ctx, ctrl, events, s.opts)
	s.mu.Lock()
	s.session = session // the runs' output reads it under mu
	s.mu.Unlock()
	return session.Done()
}

// ended reports whether the screen was open and has closed (the learner
// quit).
func (s *tourScreen) ended() bool {
	if s.session == nil {
		return false
	}
	select {
	case <-s.session.Done():
		return true
	default:
		return false
	}
}

// close closes the screen and writes what the runs wrote meanwhile to the
// terminal; what they write from then on goes straight there.
func (s *tourScreen) close() error {
	var err error
	if s.session != nil {
		err = s.session.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.held {
		l.w.Write(l.p)
	}
	s.held, s.closed = nil, true
	return err
}

// heldOutput is a run's stdout or stderr while a tourScreen is up: each
// whole line written flashes on the screen, and all of it is kept until
// the screen closes (then written to w, as everything from then on is).
// term is the terminal beneath, for what asks whether there is one.
type heldOutput struct {
	screen  *tourScreen
	w       io.Writer
	term    *os.File
	partial []byte // the start of a line not yet ended, for the flash
}

func (h *heldOutput) Write(p []byte) (int, error) {
	s := h.screen
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return h.w.Write(p)
	}
	s.held = append(s.held, heldLine{w: h.w, p: bytes.Clone(p)})
	h.partial = append(h.partial, p...)
	var lines []string
	for {
		i := bytes.IndexByte(h.partial, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(h.partial[:i])); line != "" {
			lines = append(lines, strings.TrimPrefix(line, "faultline: "))
		}
		h.partial = h.partial[i+1:]
	}
	session := s.session
	s.mu.Unlock()
	for _, l := range lines {
		if session != nil {
			session.Note(l)
		}
	}
	return len(p), nil
}

// terminalOf is the terminal w writes to, if it is one: w itself, or the
// terminal beneath a tour screen's held output.
func terminalOf(w io.Writer) (*os.File, bool) {
	var f *os.File
	switch w := w.(type) {
	case *os.File:
		f = w
	case *heldOutput:
		f = w.term
	}
	if f == nil {
		return nil, false
	}
	return f, isTerminalFile(f)
}
