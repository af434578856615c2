package cli

import (
	"bytes"
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
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/fixtures/jobs"
	"github.com/faultline-dev/faultline/fixtures/tours"
	"github.com/faultline-dev/faultline/internal/tour"
	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui"
)

// tourOptions are the flags of `faultline tour`.
type tourOptions struct {
	headless, autoplay, loop bool
	noMouse                  bool // --no-mouse
	stateDir                 string
	// listen is the embedded broker's port (--listen), 0 when not given:
	// the tour's job then takes run's default.
	listen int
	// screen is the terminal UI all the tour's runs show on (nil
	// headless).
	screen *tourScreen
}

func newTourCmd() *cobra.Command {
	o := &tourOptions{}
	cmd := &cobra.Command{
		Use:               "tour [NAME | FILE.yaml]",
		ValidArgsFunction: tourNames,
		Short:             "Guided walkthroughs of fault-tolerance concepts, on the live job",
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
	f.BoolVar(&o.noMouse, "no-mouse", false, noMouseHelp)
	f.IntVar(&o.listen, "listen", 0, "port of the embedded broker the tour's job runs on, as run's --listen (default 9092; a free port is used when it is taken)")
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
	fmt.Fprintln(w, "\nThe minutes are by hand, reading each step; --autoplay runs one in about one to two minutes.")
	fmt.Fprintln(w, "faultline tour NAME starts one (--autoplay: unattended; --headless: no screen).")
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

// tourEnd is a headless tour's last line: the tour's verdict, and the
// job's (the exit code and error of a run of it that FAILED where no check
// said it would, or whose output did not verify; the last run's report).
type tourEnd struct {
	Tour      string          `json:"tour"`
	OK        bool            `json:"ok"`
	Steps     int             `json:"steps"`
	Failed    int             `json:"failed"`
	ElapsedMs int64           `json:"elapsed_ms"`
	Error     string          `json:"error,omitempty"`
	JobExit   int             `json:"job_exit,omitempty"`
	JobError  string          `json:"job_error,omitempty"`
	Report    json.RawMessage `json:"report,omitempty"`
}

// tourPass is how one pass of a tour went.
type tourPass struct {
	failed int // checks that did not hold and waits that ran out
	end    tourEnding
	job    *exitError // the job's verdict, when it counts against the tour
}

// verdict is the pass's exit: its failed checks (exit 4), else the job's
// verdict, else none.
func (p tourPass) verdict(name string) error {
	switch {
	case p.failed > 0 && p.job != nil:
		return exitError{code: 4, err: fmt.Errorf("tour %s: %d of its checks did not hold, and %v", name, p.failed, p.job.err)}
	case p.failed > 0:
		return exitError{code: 4, err: fmt.Errorf("tour %s: %d of its checks did not hold", name, p.failed)}
	case p.job != nil:
		return exitError{code: p.job.code, err: fmt.Errorf("tour %s: %v", name, p.job.err)}
	}
	return nil
}

// run runs t until it ends (once, or for ever with --loop).
func (o *tourOptions) run(ctx context.Context, t *tour.Tour, stdout, stderr io.Writer) (err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if !o.headless {
		o.screen = newTourScreen(ctx, stdout, stderr, uiOptions(o.noMouse))
		defer func() {
			if uiErr := o.screen.close(); uiErr != nil && err == nil {
				err = fmt.Errorf("tour %s: terminal UI: %w", t.Name, uiErr)
			}
		}()
		stdout, stderr = o.screen.stdout, o.screen.stderr
	}
	for {
		pass, err := o.once(ctx, t, stdout, stderr)
		switch {
		case err != nil:
			return err
		case ctx.Err() != nil && o.headless:
			return exitError{code: 1, err: fmt.Errorf("tour %s: stopped before its end (%d of its checks did not hold so far)", t.Name, pass.failed)}
		case ctx.Err() == nil && (pass.end == tourAgain || pass.end == tourEnded && o.loop && o.autoplay):
			continue
		}
		return pass.verdict(t.Name)
	}
}

// lastLine is a writer that keeps the last whole line written to it: a
// headless run's report.
type lastLine struct{ partial, last []byte }

func (l *lastLine) Write(p []byte) (int, error) {
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.last = append(l.last[:0], l.partial[:i]...)
		l.partial = l.partial[i+1:]
	}
}

// report is the report in the last line, if it is one.
func (l *lastLine) report() json.RawMessage {
	var r struct {
		Report json.RawMessage `json:"report"`
	}
	if json.Unmarshal(l.last, &r) != nil {
		return nil
	}
	return r.Report
}

// tourEnding is how one pass of a tour ended.
type tourEnding int

const (
	tourEnded tourEnding = iota // every step ran
	tourAgain                   // the learner asked to start again (r)
	tourQuit                    // the learner quit (q)
)

// once runs the tour from its start on a fresh state dir: each of its job
// runs in turn. It says how many checks did not hold, how it ended, and
// the job's verdict where it counts against the tour.
func (o *tourOptions) once(ctx context.Context, t *tour.Tour, stdout, stderr io.Writer) (pass tourPass, err error) {
	dir := o.stateDir
	if dir == "" {
		if note := sweptNote(sweepTourDirs(os.TempDir(), time.Now())); note != "" {
			fmt.Fprintln(stderr, "faultline:", note)
		}
		var release func()
		if dir, release, err = newTourDir(os.TempDir(), t.Name); err != nil {
			return pass, fmt.Errorf("tour %s: a state dir of its own: %w", t.Name, err)
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
	r.Seen = seenAtTourSizes
	var last lastLine
	end := func(p tourPass, why string) {
		if !o.headless {
			return
		}
		e := tourEnd{Tour: t.Name, OK: p.failed == 0 && p.job == nil && why == "", Steps: len(t.Steps), Failed: p.failed,
			ElapsedMs: time.Since(started).Milliseconds(), Error: why, Report: last.report()}
		if p.job != nil {
			e.JobExit, e.JobError = p.job.code, p.job.err.Error()
		}
		enc.Encode(e)
	}
	flags, from, first := t.Run, 0, true
	for from < len(t.Steps) {
		if o.screen != nil && o.screen.ended() {
			// The learner quit between two runs.
			pass.end = tourQuit
			end(pass, "stopped before its end")
			return pass, nil
		}
		step, err := o.runJob(ctx, r, t, dir, flags, from, first, &last, stdout, stderr)
		if step.job != nil {
			pass.job = step.job
		}
		pass.failed = r.Failed()
		switch {
		case err != nil:
			pass.failed++
			end(pass, err.Error())
			return pass, err
		case step.end == tourAgain:
			return tourPass{failed: pass.failed, end: tourAgain}, nil
		case step.end == tourQuit:
			pass.end = tourQuit
			end(pass, "stopped before its end")
			return pass, nil
		}
		if flags, err = r.Expand(step.flags); err != nil {
			pass.failed++
			end(pass, err.Error())
			return pass, err
		}
		from, first = step.next, false
	}
	end(pass, "")
	return pass, nil
}

// tourSizes are the terminal sizes the tours are written for: the
// smallest the UI lays out in, and a projector's usual.
var tourSizes = [][2]int{{tui.MinWidth, tui.MinHeight}, {120, 40}}

// seenAtTourSizes lists what snap's tour points at and a screen of one of
// tourSizes does not show ("checkpoint 5's row at 80x24").
func seenAtTourSizes(snap view.Snapshot) []string {
	var out []string
	for _, size := range tourSizes {
		for _, m := range tui.Unseen(snap, size[0], size[1]) {
			out = append(out, fmt.Sprintf("%s at %dx%d", m, size[0], size[1]))
		}
	}
	return out
}

// tourStep is how one run of a tour's job ended: where the tour goes on,
// with which flags, or how it ended early.
type tourStep struct {
	next  int
	flags []string
	end   tourEnding
	job   *exitError
}

// runJob runs the tour's job once, with flags, the tour in front of it
// from step from on. A run that FAILED where no check said it would, or
// whose output did not verify, is the job's verdict (tourStep.job): the
// tour goes on and its end carries it.
func (o *tourOptions) runJob(ctx context.Context, r *tour.Runner, t *tour.Tour, dir string, flags []string, from int, first bool, last *lastLine, stdout, stderr io.Writer) (tourStep, error) {
	var step tourStep
	var runErr error
	quit, fronted := false, false
	cmd, ro := newRunCmdOptions()
	runFlags, written, err := builtInJobs(flags, dir)
	if err != nil {
		return step, err
	}
	for _, f := range written {
		defer os.Remove(f)
	}
	args := []string{"--state-dir", dir}
	if o.listen != 0 {
		args = append(args, "--listen", strconv.Itoa(o.listen))
	}
	args = append(args, runFlags...)
	if first && o.stateDir != "" {
		args = append(args, "--fresh")
	}
	if err := cmd.ParseFlags(args); err != nil {
		return step, usagef("tour %s: its run flags %q: %v", t.Name, strings.Join(flags, " "), err)
	}
	// A tour's run takes -D and --config from its own flags, never from
	// the environment: it runs as its file says wherever it is played.
	noEnv := func(string) (string, bool) { return "", false }
	if _, err := applyConfig(cmd.Flags(), ro.configFile, ro.defines, noEnv); err != nil {
		return step, usagef("tour %s: its run flags %q: %v", t.Name, strings.Join(flags, " "), err)
	}
	ro.setTTL = cmd.Flags().Changed("state-ttl")
	ro.setRate = cmd.Flags().Changed("rate")
	ro.headless = o.headless
	ro.front = func(ctx context.Context, ctrl *uiController, events <-chan view.Stamped) error {
		fronted = true
		step.next, step.flags, runErr, quit = o.front(ctx, r, ctrl, events, from)
		if !quit && runErr == nil && ctx.Err() == nil {
			return errFrontDone
		}
		return nil
	}
	out := stdout
	if o.headless {
		*last = lastLine{}
		out = last
	}
	err = ro.run(ctx, out, stderr)
	var ee exitError
	switch {
	case err != nil && !(errors.As(err, &ee) && (ee.code == 3 || ee.code == 4)):
		// Anything but the job's own verdict stops the tour.
		return step, err
	case err != nil && !(ee.code == 3 && r.FailedAsClaimed()):
		step.job = &ee
	}
	switch {
	case !fronted:
		return step, fmt.Errorf("tour %s: its job ended before the tour could start on it", t.Name)
	case errors.Is(runErr, tour.ErrRestart):
		step.end = tourAgain
	case quit || ctx.Err() != nil:
		step.end = tourQuit
	case runErr != nil:
		return step, runErr
	}
	return step, nil
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
	// The screen stays up when this run ends: the tour's next run shows on
	// it, and the tour closes it at its end. The run's part of the tour
	// ends when its steps have run, or when the learner quit.
	screenDone := o.screen.show(ctrl, uiEvents)
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	go func() {
		select {
		case <-screenDone:
			stopRun()
		case <-runCtx.Done():
		}
	}()
	next, flags, err = r.Run(runCtx, ctrl, from)
	switch {
	case err != nil && !errors.Is(err, tour.ErrRestart):
		return next, flags, err, true // the learner quit
	case err == nil && next >= len(r.Steps()):
		if !o.autoplay {
			// The panel says the tour is complete: r starts it again,
			// q quits.
			if !r.AwaitRestart(runCtx) {
				return next, flags, nil, true
			}
			err = tour.ErrRestart
			break
		}
		select {
		case <-runCtx.Done():
			return next, flags, nil, true
		case <-time.After(8 * time.Second):
		}
	}
	return next, flags, err, false
}
