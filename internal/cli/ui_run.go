package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka/live"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui"
)

// isTerminal reports whether w is a terminal the UI can draw on (see
// terminalOf).
func isTerminal(w io.Writer) bool {
	_, ok := terminalOf(w)
	return ok
}

func isTerminalFile(f *os.File) bool { return term.IsTerminal(f.Fd()) }

// crashFunc is what the crash fault does: SIGKILL to this process. In front
// of the terminal UI it first gives the terminal back as it found it (out
// of the alternate screen, cursor shown, line mode), since nothing runs
// after a SIGKILL to do that.
func (o *runOptions) crashFunc(stdout, stderr io.Writer) func() {
	var restore func()
	if f, ok := terminalOf(stdout); ok && !o.headless {
		if st, err := term.GetState(os.Stdin.Fd()); err == nil {
			restore = func() {
				fmt.Fprint(f, "\x1b[?1049l\x1b[?25h")
				term.Restore(os.Stdin.Fd(), st)
			}
		}
	}
	if h, ok := stderr.(*heldOutput); ok {
		stderr = h.w // a tour's screen holds it: the crash ends the screen
	}
	return func() {
		if restore != nil {
			restore()
			fmt.Fprintln(stderr, "faultline: the crash fault kills this process now (SIGKILL); run faultline again to resume from its last checkpoint")
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}

// jobTitle is the job as the header names it: "orders ⋈ payments" for a
// job that joins two sources, the job's name otherwise.
func jobTitle(j *spec.Job) string {
	var topics []string
	for _, op := range j.Operators {
		if op.Type == spec.TypeSource {
			topics = append(topics, op.Topic)
		}
	}
	for _, op := range j.Operators {
		if op.Type == orders.TypeJoin && len(topics) == 2 {
			return topics[0] + " ⋈ " + topics[1]
		}
	}
	return j.Name
}

// runUI runs the job with the terminal UI in front of it: the job and the
// live verifier in goroutines of their own, the UI in this one. When the
// user quits (or ctx ends) the run is stopped, as a stop signal stops it
// (see stopBudget), and runUI returns once the job has stopped and settled
// its outputs.
func (r *runState) runUI(ctx context.Context, ctrl *uiController, verifier *live.LiveVerifier, opts runtime.RunOptions) (*runtime.Result, error) {
	o, job, stdout, logger := r.o, r.job, r.stdout, r.logger
	jobCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.endJob.Store(&cancel)
	type ran struct {
		res *runtime.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := job.Run(jobCtx, opts)
		done <- ran{res, err}
	}()
	liveDone := r.startLive(jobCtx, verifier)
	// A terminal that goes away (a closed window, a dropped SSH
	// connection) stops the run as q does; without the watch, the job ran
	// on with nobody to see it, holding the state dir and the port.
	uiCtx, stopUI := context.WithCancel(ctx)
	defer stopUI()
	if !o.headless {
		go watchTerminal(uiCtx, stdout, time.Second, func() {
			logger.Printf("the terminal went away: stopping the job")
			stopUI()
		})
	}
	var uiErr error
	if o.front != nil {
		uiErr = o.front(uiCtx, ctrl, r.events)
	} else {
		uiErr = tui.Run(uiCtx, ctrl, r.events, uiOptions(o.noMouse))
	}
	switch {
	case o.headless || job.Crashed():
	case r.p.job.VerifyOff:
		fmt.Fprintln(stdout, "faultline: stopping the job…")
	default:
		fmt.Fprintln(stdout, "faultline: stopping the job and checking its output…")
	}
	if errors.Is(uiErr, errFrontDone) {
		// A tour ended its run: nobody asked to stop, and its verdict
		// waits for the whole output to be checked, however slow the
		// machine. A stop signal from here on still bounds it.
		uiErr = nil
	} else {
		// The stop's budget counts from here, as from a stop signal.
		r.stopRun(nil)
	}
	cancel()
	ended := <-done
	<-liveDone
	if uiErr != nil {
		r.log.Error("the terminal UI failed", "err", uiErr)
		if ended.err == nil {
			ended.err = fmt.Errorf("terminal UI: %w", uiErr)
		}
	}
	return ended.res, ended.err
}

// startLive runs the live verifier, when there is one, until ctx ends; the
// channel it returns closes once it has stopped.
func (r *runState) startLive(ctx context.Context, verifier *live.LiveVerifier) <-chan struct{} {
	done := make(chan struct{})
	if verifier == nil {
		close(done)
		return done
	}
	// The live verifier knows the generator's topic names; the job
	// reports offsets by the Kafka topics its sources read.
	logical := map[string]string{}
	for gen, actual := range r.p.logicalTopics() {
		logical[actual] = gen
	}
	committed := func() (int64, checkpoint.Offsets, []string, bool) {
		id, offs, inFlight, ok := r.job.CommittedCheckpoint()
		if !ok {
			return 0, nil, nil, false
		}
		out := checkpoint.Offsets{}
		for topic, parts := range offs {
			if gen, known := logical[topic]; known {
				out[gen] = parts
			}
		}
		return id, out, inFlight, true
	}
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		if err := verifier.Run(ctx, committed); err != nil {
			r.log.Warn("the live verification stopped", "err", err)
		}
	}()
	go func() {
		defer close(done)
		r.tellVerifyStatus(ctx, verifier)
		<-ran
	}()
	return done
}

// tellVerifyStatus emits the live verification's line as a verify_status
// event each time it changed, looking once a second, until ctx ends: the
// session's record holds it for a replay.
func (r *runState) tellVerifyStatus(ctx context.Context, verifier *live.LiveVerifier) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last view.VerifyStatus
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s := verifier.Status()
		vs := view.VerifyStatus{Committed: s.Committed, Duplicates: s.Duplicates, DuplicatesAtLeastOnce: s.DuplicatesAtLeastOnce,
			Lost: s.Lost, AsOf: s.AsOf, InFlight: s.InFlight, NotJoined: s.NotJoined, Error: s.Err}
		if s.Available && vs != last {
			r.obs.Emit(vs)
			last = vs
		}
	}
}

// watchTerminal calls gone, once, when w stops being a terminal (a hung-up
// terminal answers no terminal request), checking every interval until ctx
// ends.
func watchTerminal(ctx context.Context, w io.Writer, interval time.Duration, gone func()) {
	watchFor(ctx, interval, func() bool { return !isTerminal(w) }, gone)
}

// printSummary tells, after the UI has closed, how the run ended, and what
// the next run meets: with badWhat, a bad record ahead of the last
// checkpoint, and badAdvice what to do about it. stateDir is "" for a
// tour's run, whose state dir goes with the tour.
func printSummary(w io.Writer, r runtime.Report, stateDir, badWhat, badAdvice string) {
	v := r.Verify
	verdict := "✓ exactly once"
	switch {
	case v.Lost > 0:
		verdict = fmt.Sprintf("✗ %d lost", v.Lost)
	case v.Duplicates > 0 && v.Guarantee == "at-least-once":
		verdict = fmt.Sprintf("%d duplicates (at-least-once: none lost)", v.Duplicates)
	case v.Duplicates > v.DuplicatesAtLeastOnce:
		verdict = fmt.Sprintf("✗ %d duplicates", v.Duplicates-v.DuplicatesAtLeastOnce)
	case v.Duplicates > 0:
		verdict = fmt.Sprintf("✓ exactly once outside the at-least-once periods, whose %d duplicates are their price", v.Duplicates)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "faultline: job %s %s after %s\n", r.Job, r.Status, (time.Duration(r.ElapsedMs) * time.Millisecond).Round(100*time.Millisecond))
	fmt.Fprintf(&b, "  input %d records · checkpoints %d completed, %s, last %d · restarts %d\n",
		r.RecordsIn, r.Checkpoints.Completed, failedText(r.Checkpoints), r.Checkpoints.LastCompleted, r.Restarts)
	dups := strconv.Itoa(v.Duplicates)
	if v.DuplicatesAtLeastOnce > 0 {
		dups += fmt.Sprintf(" (%d from at-least-once periods)", v.DuplicatesAtLeastOnce)
	}
	switch {
	case v.Off != "":
		fmt.Fprintf(&b, "  verify: off: %s; nothing was checked\n", v.Off)
	case v.NotDone != "":
		fmt.Fprintf(&b, "  verify: not done, the output could not be read: %s\n", v.NotDone)
	default:
		fmt.Fprintf(&b, "  verify: committed %d of %d expected, %s duplicates, %d lost — %s\n", v.Committed, v.Expected, dups, v.Lost, verdict)
	}
	if r.LostByFailover > 0 {
		fmt.Fprintf(&b, "  individual failover lost %d records\n", r.LostByFailover)
	}
	if r.GaveUp != "" {
		fmt.Fprintf(&b, "  gave up: %s\n", r.GaveUp)
	}
	if r.Savepoint > 0 && stateDir != "" {
		fmt.Fprintf(&b, "  savepoint %d taken as it stopped: faultline run --from-savepoint %d --state-dir %s starts from it\n", r.Savepoint, r.Savepoint, stateDir)
	}
	switch {
	case stateDir == "":
	case dirGone(checkpointDir(stateDir)):
		fmt.Fprintf(&b, "  state dir %s is gone, and its checkpoints with it\n", stateDir)
	case badWhat != "":
		fmt.Fprintf(&b, "  state dir %s: %s:\n", stateDir, badWhat)
		fmt.Fprintf(&b, "  %s\n", strings.Replace(badAdvice, "; ", ";\n  ", 1))
	default:
		fmt.Fprintf(&b, "  state dir %s (run faultline again to go on from its last checkpoint)\n", stateDir)
	}
	fmt.Fprint(w, b.String())
}

// failedText is "0 failed", or the failed checkpoints with why: "1 failed
// (aborted as the job stopped)", "3 failed (2 expired, 1 aborted as the
// job restarted or stopped)".
func failedText(c runtime.ReportCheckpoints) string {
	text := fmt.Sprintf("%d failed", c.Failed)
	if c.Failed == 0 || len(c.FailedBy) == 0 {
		return text
	}
	reasons := slices.Sorted(maps.Keys(c.FailedBy))
	var why []string
	for _, r := range reasons {
		name := r
		if r == "job failover" {
			name = "aborted as the job restarted or stopped"
		}
		if len(reasons) == 1 && c.FailedBy[r] == c.Failed {
			why = append(why, name)
		} else {
			why = append(why, fmt.Sprintf("%d %s", c.FailedBy[r], name))
		}
	}
	return text + " (" + strings.Join(why, ", ") + ")"
}

// themeEnv names the terminal UI's colour theme: default, or
// high-contrast for a projector (NO_COLOR drops colour altogether).
const themeEnv = "FAULTLINE_THEME"

// checkTheme refuses a theme the UI does not know (exit 2).
func checkTheme() error {
	if err := tui.CheckTheme(os.Getenv(themeEnv)); err != nil {
		return usagef("%s: %v", themeEnv, err)
	}
	return nil
}

// noMouseHelp is --no-mouse's help.
const noMouseHelp = "leave the mouse to the terminal (its own selection and scrollback): no clicks, no wheel in the terminal UI"

// uiOptions are the terminal UI's options: the theme ($FAULTLINE_THEME)
// and the mouse.
func uiOptions(noMouse bool) tui.Options {
	return tui.Options{Theme: os.Getenv(themeEnv), NoMouse: noMouse}
}
