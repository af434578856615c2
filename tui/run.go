package tui

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// DefaultTickPeriod is how often the UI samples the job by default.
const DefaultTickPeriod = 200 * time.Millisecond

// Options configure Run.
type Options struct {
	// Input and Output are the terminal; when nil, Bubble Tea's own
	// (os.Stdin, or the controlling terminal when stdin is not one, and
	// os.Stdout). Tests and a pty drive the UI through them.
	Input  io.Reader
	Output io.Writer
	// TickPeriod is how often the Controller is sampled (DefaultTickPeriod
	// when 0).
	TickPeriod time.Duration
	// NoAltScreen draws in the normal screen instead of the alternate one.
	NoAltScreen bool
	// Theme is the colour theme's name: "" or "default", "high-contrast"
	// (for a projector). The caller checks it with CheckTheme.
	Theme string
	// NoMouse leaves the mouse to the terminal (its own selection and
	// scrollback): no clicks, no wheel.
	NoMouse bool
}

// CheckTheme reports whether name is a theme Run knows, and says which
// there are when it is not.
func CheckTheme(name string) error {
	if _, ok := common.ThemeNamed(name); !ok {
		return fmt.Errorf("theme %q: want default or high-contrast", name)
	}
	return nil
}

// Run shows the job in the terminal until the user quits (q or ctrl+c) or
// ctx is done; both return nil. It samples ctrl every TickPeriod and reads
// events in batches, never blocking the job; when events is closed it goes
// on showing the job's final state until the user quits.
//
// Signals are the caller's to turn into the end of ctx: Bubble Tea's own
// handler is off, since a SIGTERM that it and the caller both take can
// leave Bubble Tea's shutdown waiting forever for its handler, which sends
// to an event loop that already stopped (charmbracelet/bubbletea#1806).
// The end of ctx quits the program as q does, not by Bubble Tea's
// WithContext, whose kill closes the input reader while it still reads.
func Run(ctx context.Context, ctrl Controller, events <-chan view.Stamped, opts Options) error {
	done := make(chan struct{})
	defer close(done)
	prog := newProgram(ctrl, events, opts, done)
	defer context.AfterFunc(ctx, prog.Quit)()
	_, err := prog.Run()
	return err
}

// newProgram is the program that shows ctrl and its events as opts say;
// done is to be closed once it has ended.
func newProgram(ctrl Controller, events <-chan view.Stamped, opts Options, done <-chan struct{}) *tea.Program {
	popts := []tea.ProgramOption{tea.WithoutSignalHandler()}
	// Left alone, Bubble Tea reads os.Stdin, or the controlling terminal
	// when stdin is not one, and writes os.Stdout.
	if opts.Input != nil {
		popts = append(popts, tea.WithInput(opts.Input))
	}
	r := lipgloss.DefaultRenderer()
	if opts.Output != nil && opts.Output != io.Writer(os.Stdout) {
		popts = append(popts, tea.WithOutput(opts.Output))
		r = lipgloss.NewRenderer(opts.Output)
	}
	theme, _ := common.ThemeNamed(opts.Theme)
	m := newModel(ctrl, events, modelConfig{period: opts.TickPeriod, renderer: r, done: done, theme: theme})
	if !opts.NoAltScreen {
		popts = append(popts, tea.WithAltScreen())
	}
	if !opts.NoMouse {
		popts = append(popts, tea.WithMouseCellMotion())
	}
	return tea.NewProgram(m, popts...)
}
