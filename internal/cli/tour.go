package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"faultline/fixtures/jobs"
	"faultline/fixtures/tours"
	"faultline/internal/tour"
	"faultline/runtime/view"
	"faultline/tui"
)

// tourOptions are the flags of `faultline tour`.
type tourOptions struct {
	headless, autoplay, loop bool
	stateDir                 string
}

func newTourCmd() *cobra.Command {
	o := &tourOptions{}
	cmd := &cobra.Command{
		Use:   "tour [NAME | FILE.yaml]",
		Short: "Guided walkthroughs of fault-tolerance concepts, on the live job",
		Long: `Without a name, lists the tours with one line each and their length.

faultline tour NAME opens the terminal UI with the tour's narration beside
the job: it tells what happens, waits for the moment that matters, points at
it, asks for the key that breaks something, and checks what it promised.
Keys: n next, b back to the previous explanation, r restart the tour, q quit.

--autoplay runs it unattended (--loop starts it again at the end);
--headless runs its steps and checks without a screen, printing each step as
a JSON line. Each tour runs on a fresh state dir of its own, deleted at the
end, unless --state-dir names one (emptied first).

Exit codes: 0 every check held; 1 the tour could not run, or a headless tour
was stopped before its end; 2 unknown tour or a malformed tour file; 4 a check
did not hold.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return listTours(cmd.OutOrStdout())
			}
			t, err := findTour(args[0])
			if err != nil {
				return err
			}
			if !o.headless && !isTerminal(cmd.OutOrStdout()) {
				o.headless = true
			}
			return o.run(cmd.Context(), t, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.headless, "headless", false, "no terminal UI: run the steps and checks, print each step as a JSON line (also when stdout is not a terminal)")
	f.BoolVar(&o.autoplay, "autoplay", false, "run unattended: the tour reads on and presses the keys itself")
	f.BoolVar(&o.loop, "loop", false, "with --autoplay: start the tour again when it ends, until q or Ctrl-C")
	f.StringVar(&o.stateDir, "state-dir", "", "run the tour in this folder, emptied first (default: a fresh folder of its own, deleted at the end)")
	return cmd
}

// allTours reads the tours built into the program.
func allTours() ([]*tour.Tour, error) {
	names, err := fs.Glob(tours.FS, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*tour.Tour
	for _, n := range names {
		data, err := tours.FS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		t, err := tour.Parse(path.Join("fixtures/tours", n), data)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// findTour is the tour called name, or the tour file name.
func findTour(name string) (*tour.Tour, error) {
	if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
		t, err := tour.Load(name)
		if err != nil {
			return nil, usageError{err}
		}
		return t, nil
	}
	all, err := allTours()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range all {
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	return nil, usagef("no tour called %q (the tours: %s; faultline tour lists them)", name, strings.Join(names, ", "))
}

func listTours(w io.Writer) error {
	all, err := allTours()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range all {
		fmt.Fprintf(tw, "%s\t%d min\t%s\n", t.Name, t.Minutes, t.Summary)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nfaultline tour NAME starts one (--autoplay: unattended; --headless: no screen).")
	return nil
}

// builtInJobs finds a --job file of fixtures/jobs that is not there (a
// tour run outside the source tree) in the program's own copy, written
// next to the tour's state dir.
func builtInJobs(flags []string, stateDir string) (out, written []string, err error) {
	out = append([]string(nil), flags...)
	for i := 0; i+1 < len(out); i++ {
		if out[i] != "--job" || !strings.HasPrefix(out[i+1], "fixtures/jobs/") {
			continue
		}
		if _, err := os.Stat(out[i+1]); err == nil {
			continue
		}
		data, err := jobs.FS.ReadFile(path.Base(out[i+1]))
		if err != nil {
			return nil, written, fmt.Errorf("the tour's job %s: %w", out[i+1], err)
		}
		file := filepath.Clean(stateDir) + "-" + path.Base(out[i+1])
		if err := os.WriteFile(file, data, 0o644); err != nil {
			return nil, written, err
		}
		out[i+1], written = file, append(written, file)
	}
	return out, written, nil
}

// tourEnd is a headless tour's last line.
type tourEnd struct {
	Tour      string `json:"tour"`
	OK        bool   `json:"ok"`
	Steps     int    `json:"steps"`
	Failed    int    `json:"failed"`
	ElapsedMs int64  `json:"elapsed_ms"`
	Error     string `json:"error,omitempty"`
}

// run runs t until it ends (once, or for ever with --loop).
func (o *tourOptions) run(ctx context.Context, t *tour.Tour, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	for {
		failed, end, err := o.once(ctx, t, stdout, stderr)
		switch {
		case err != nil:
			return err
		case ctx.Err() != nil && o.headless:
			return exitError{code: 1, err: fmt.Errorf("tour %s: stopped before its end (%d of its checks did not hold so far)", t.Name, failed)}
		case ctx.Err() != nil || end == tourQuit:
			return nil
		case end == tourAgain || o.loop && o.autoplay:
			continue
		case failed > 0:
			return exitError{code: 4, err: fmt.Errorf("tour %s: %d of its checks did not hold", t.Name, failed)}
		}
		return nil
	}
}

// tourEnding is how one pass of a tour ended.
type tourEnding int

const (
	tourEnded tourEnding = iota // every step ran
	tourAgain                   // the learner asked to start again (r)
	tourQuit                    // the learner quit (q)
)

// once runs the tour from its start on a fresh state dir: each of its job
// runs in turn. It returns how many checks did not hold, and how it ended.
func (o *tourOptions) once(ctx context.Context, t *tour.Tour, stdout, stderr io.Writer) (failed int, end tourEnding, err error) {
	dir := o.stateDir
	if dir == "" {
		if note := sweptNote(sweepTourDirs(os.TempDir(), time.Now())); note != "" {
			fmt.Fprintln(stderr, "faultline:", note)
		}
		var release func()
		if dir, release, err = newTourDir(os.TempDir(), t.Name); err != nil {
			return 0, tourEnded, fmt.Errorf("tour %s: a state dir of its own: %w", t.Name, err)
		}
		defer release()
	}
	mode := tour.Interactive
	switch {
	case o.headless:
		mode = tour.Headless
	case o.autoplay:
		mode = tour.Autoplay
	}
	enc := json.NewEncoder(stdout)
	var report func(tour.StepResult)
	if o.headless {
		report = func(r tour.StepResult) { enc.Encode(r) }
	}
	started := time.Now()
	r := tour.NewRunner(t, mode, report)
	flags, from := t.Run, 0
	first := true
	for from < len(t.Steps) {
		var next int
		var nextFlags []string
		var runErr error
		quit, fronted := false, false
		cmd, ro := newRunCmdOptions()
		runFlags, written, err := builtInJobs(flags, dir)
		if err != nil {
			return 0, tourEnded, err
		}
		for _, f := range written {
			defer os.Remove(f)
		}
		args := append([]string{"--state-dir", dir}, runFlags...)
		if first && o.stateDir != "" {
			args = append(args, "--fresh")
		}
		if err := cmd.ParseFlags(args); err != nil {
			return 0, tourEnded, usagef("tour %s: its run flags %q: %v", t.Name, strings.Join(flags, " "), err)
		}
		ro.setTTL = cmd.Flags().Changed("state-ttl")
		ro.setRate = cmd.Flags().Changed("rate")
		ro.headless = o.headless
		ro.front = func(ctx context.Context, ctrl *uiController, events <-chan view.Stamped) error {
			fronted = true
			next, nextFlags, runErr, quit = o.front(ctx, r, ctrl, events, from)
			return nil
		}
		out := stdout
		if o.headless {
			out = io.Discard
		}
		err = ro.run(ctx, out, stderr)
		var ee exitError
		if err != nil && !(errors.As(err, &ee) && (ee.code == 3 || ee.code == 4)) {
			// The job FAILED or its output did not verify: a tour may
			// show just that, and its checks judge it. Anything else
			// stops the tour.
			if o.headless {
				enc.Encode(tourEnd{Tour: t.Name, Steps: len(t.Steps), Failed: r.Failed() + 1, ElapsedMs: time.Since(started).Milliseconds(), Error: err.Error()})
			}
			return 0, tourEnded, err
		}
		switch {
		case !fronted:
			return 0, tourEnded, fmt.Errorf("tour %s: its job ended before the tour could start on it", t.Name)
		case errors.Is(runErr, tour.ErrRestart):
			return r.Failed(), tourAgain, nil
		case quit || ctx.Err() != nil:
			if o.headless {
				enc.Encode(tourEnd{Tour: t.Name, Steps: len(t.Steps), Failed: r.Failed(), ElapsedMs: time.Since(started).Milliseconds(), Error: "stopped before its end"})
			}
			return r.Failed(), tourQuit, nil
		case runErr != nil:
			return 0, tourEnded, runErr
		}
		flags, from, first = r.Expand(nextFlags), next, false
	}
	if o.headless {
		enc.Encode(tourEnd{Tour: t.Name, OK: r.Failed() == 0, Steps: len(t.Steps), Failed: r.Failed(), ElapsedMs: time.Since(started).Milliseconds()})
	}
	return r.Failed(), tourEnded, nil
}

// front stands in front of one run of the tour's job: headless, it runs
// the steps; otherwise the terminal UI shows the job with the tour's panel
// while the steps run. It returns where the tour goes on and whether the
// learner quit.
func (o *tourOptions) front(ctx context.Context, r *tour.Runner, ctrl *uiController, events <-chan view.Stamped, from int) (next int, flags []string, err error, quit bool) {
	r.NewRun()
	if o.headless {
		go func() {
			for e := range events {
				r.Feed(e)
			}
		}()
		next, flags, err = r.Run(ctx, ctrl, from)
		return next, flags, err, false
	}
	ctrl.tour = r
	uiEvents := make(chan view.Stamped, 8192)
	go func() {
		defer close(uiEvents)
		for e := range events {
			r.Feed(e)
			select {
			case uiEvents <- e:
			default: // the UI counts what it misses no more than the job's own drops
			}
		}
	}()
	uiCtx, stopUI := context.WithCancel(ctx)
	defer stopUI()
	ran := make(chan struct{})
	var byTour atomic.Bool // the tour, not the learner, closed the UI
	go func() {
		defer close(ran)
		next, flags, err = r.Run(uiCtx, ctrl, from)
		switch {
		case err != nil && !errors.Is(err, tour.ErrRestart):
			return // the learner quit
		case err == nil && next >= len(r.Steps()):
			if !o.autoplay {
				return // the panel says the tour is complete; q quits
			}
			select {
			case <-uiCtx.Done():
				return
			case <-time.After(8 * time.Second):
			}
		}
		byTour.Store(true)
		stopUI()
	}()
	uiErr := tui.Run(uiCtx, ctrl, uiEvents, tui.Options{})
	stopUI()
	<-ran
	if uiErr != nil {
		return next, flags, uiErr, true
	}
	return next, flags, err, !byTour.Load()
}
