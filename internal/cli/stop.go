package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/faultline-dev/faultline/internal/clock"
	"github.com/faultline-dev/faultline/internal/supervise"
	"github.com/faultline-dev/faultline/runtime"
)

// How a run stops. A stop signal (Ctrl-C, SIGTERM, SIGHUP), the terminal
// UI quitting, or what stops a run on its own (the state dir removed, its
// disk full, the input writer failed) ends the run's context: a step still
// starting gives up, and the job is cancelled. What a stopped run does
// after that — its subtasks ending, its outputs settled as its last
// checkpoint had them, the output checked — has stopBudget from the stop;
// what is not done by then is left to the next run, which does it anyway
// (it settles the outputs as it restores, and checks the whole output). A
// run that still has not ended stopLimit after a stop signal quits at
// once, as a second stop signal does: faultline ends within 5 s of the
// first, however big its job and wherever the run is.
const (
	stopBudget = 3500 * time.Millisecond
	stopLimit  = 4500 * time.Millisecond
	// exitSavepointTimeout bounds the savepoint of --savepoint-on-exit,
	// which is taken within the stop's budget.
	exitSavepointTimeout = 2 * time.Second
)

// stopCause ends a run's context when a stop signal comes. errors.Is takes
// it for context.Canceled, as a run ends the same way however it was told
// to stop.
type stopCause struct{ sig os.Signal }

func (c stopCause) Error() string        { return "stopped by " + signalName(c.sig) }
func (c stopCause) Is(target error) bool { return target == context.Canceled }

// signalName is the name a user knows a signal by: SIGTERM, SIGINT.
func signalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		if name := unix.SignalName(s); name != "" {
			return name
		}
	}
	return sig.String()
}

// stoppedBy says what a user did that ended ctx, if one did: a stop
// signal, or a stop or cancel through the REST API.
func stoppedBy(ctx context.Context) (string, bool) {
	var c stopCause
	if errors.As(context.Cause(ctx), &c) {
		return c.Error(), true
	}
	var rs restStop
	if errors.As(context.Cause(ctx), &rs) {
		return rs.Error(), true
	}
	return "", false
}

// notifyStop returns a context that a stop signal (Ctrl-C, SIGTERM, SIGHUP)
// ends with a stopCause: the run then stops, settles its outputs and
// verifies them within stopBudget. A second stop signal quits at once,
// without the verification, leaving the state dir as a crash would (the
// next run goes on from its last completed checkpoint), and so does a run
// still going stopLimit after the first. Two copies of one Ctrl-C, the
// terminal's and the one the supervisor passes on, arrive within
// supervise.Again and count once. stop ends the watch.
func notifyStop(parent context.Context, stderr io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stopSignals()...)
	done := make(chan struct{})
	var limit struct {
		sync.Mutex
		t   *time.Timer
		off bool // the watch has ended: arm nothing
	}
	go func() {
		var first time.Time
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				switch {
				case first.IsZero():
					first = time.Now()
					cancel(stopCause{sig})
					limit.Lock()
					if !limit.off {
						limit.t = time.AfterFunc(stopLimit, func() {
							quitNow(stderr, fmt.Sprintf("%s %s ago, and the run has not stopped yet", signalName(sig), stopLimit))
						})
					}
					limit.Unlock()
				case time.Since(first) >= supervise.Again:
					quitNow(stderr, fmt.Sprintf("%s again", sig))
				}
			}
		}
	}()
	return ctx, sync.OnceFunc(func() {
		signal.Stop(sigs)
		close(done)
		limit.Lock()
		limit.off = true
		if limit.t != nil {
			limit.t.Stop()
		}
		limit.Unlock()
		cancel(nil)
	})
}

// quitNow ends the process at once, exit code 1, saying why and what it
// leaves.
func quitNow(stderr io.Writer, why string) {
	fmt.Fprintf(stderr, "faultline: %s: quitting now, without checking the output; the state dir is as a crash leaves it, and the next run goes on from its last completed checkpoint\n", why)
	os.Exit(1)
}

// saidStopped says, in one line on stderr, that a stop signal ended the
// run, and returns err: a stopped run ends with what it got to, and the
// line says why it ended there. resume adds how a headless run goes on.
func saidStopped(ctx context.Context, stderr io.Writer, resume bool, err error) error {
	how, ok := stoppedBy(ctx)
	if !ok {
		return err
	}
	line := "faultline: " + how
	if err == nil && resume {
		line += "; `faultline run --resume` goes on from the last completed checkpoint"
	}
	fmt.Fprintln(stderr, line)
	return err
}

// windDown is the context of what a run does after it stopped (see
// stopBudget): it ends stopBudget after ctx, the run's, ends.
func windDown(ctx context.Context) (context.Context, func()) {
	return runtime.WindDown(ctx, clock.Real{}, stopBudget)
}

// stoppedEarly turns err, the end of what a stopped run still did, into
// the run's error when the stop's budget ran out first: what it did not
// get to do, and that next, the next run, does it.
func stoppedEarly(wind context.Context, err error, what, next string) error {
	if errors.Is(context.Cause(wind), runtime.ErrStopBudget) {
		return exitError{code: 1, err: fmt.Errorf("stopped before %s: a stopped run has %s for that, and it was not enough; %s", what, stopBudget, next)}
	}
	return err
}
