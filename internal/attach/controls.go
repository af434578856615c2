package attach

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/internal/rest"
	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui"
)

// What the keys do to an attached job: what Flink's REST API allows
// (POST …/checkpoints, …/savepoints, …/stop, PATCH …?mode=cancel), the
// faults a control topic carries, and, for the rest, why not.

// requestTimeout bounds one request a key sends.
const requestTimeout = 10 * time.Second

var _ tui.Controller = (*Attached)(nil)
var _ tui.Limited = (*Attached)(nil)
var _ tui.Lifecycle = (*Attached)(nil)

// noRESTCounterpart is why a key that has no REST counterpart does nothing.
func noRESTCounterpart(what string) string {
	return what + ": not available on an attached job (Flink's REST API has no counterpart)"
}

// Unavailable says why an action cannot be done on an attached job.
func (a *Attached) Unavailable(action tui.Action) string {
	switch action {
	case tui.ActionMode:
		return noRESTCounterpart("the checkpointing mode is the job's configuration (execution.checkpointing.mode); it")
	case tui.ActionPause:
		return noRESTCounterpart("pausing the sources")
	case tui.ActionTempo:
		return noRESTCounterpart("slow motion, freeze and step")
	case tui.ActionRate:
		return noRESTCounterpart("the input rate")
	case tui.ActionRestarts:
		return noRESTCounterpart("resetting the restart strategy")
	}
	return ""
}

func (a *Attached) call(f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	return f(ctx)
}

// TriggerCheckpoint asks for a checkpoint now (Flink 1.19 and later); its
// id is known once the job reports it, so it returns 0. Flink takes the
// request before it tries: a checkpoint it then cannot take (a subtask not
// running yet) is told in the events.
func (a *Attached) TriggerCheckpoint() (int64, error) {
	return 0, a.trigger("the checkpoint asked for with c", a.client.TriggerCheckpoint, a.client.CheckpointStatus)
}

// TriggerSavepoint asks for a savepoint into the job's configured
// savepoint directory (execution.checkpointing.savepoint-dir); one that
// fails is told in the events.
func (a *Attached) TriggerSavepoint() (int64, error) {
	return 0, a.trigger("the savepoint asked for with s", a.client.TriggerSavepoint, a.client.SavepointStatus)
}

// trigger starts an asynchronous operation of the job and follows it
// under its trigger id in the background.
func (a *Attached) trigger(what string, start func(ctx context.Context, jobID string) (string, error),
	status func(ctx context.Context, jobID, tid string) (rest.Savepoint, error)) error {
	var tid string
	err := a.call(func(ctx context.Context) (err error) {
		tid, err = start(ctx, a.jobID)
		return err
	})
	if err == nil {
		go a.follow(what, func(ctx context.Context) (rest.Savepoint, error) { return status(ctx, a.jobID, tid) })
	}
	return err
}

// followFor bounds how long an operation asked for is followed.
const followFor = 10 * time.Minute

// follow asks how an operation asked for stands every half second until it
// is done, and tells its failure in the events.
func (a *Attached) follow(what string, status func(ctx context.Context) (rest.Savepoint, error)) {
	for end := time.Now().Add(followFor); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		var op rest.Savepoint
		err := a.call(func(ctx context.Context) (err error) {
			op, err = status(ctx)
			return err
		})
		switch {
		case err != nil && notFound(err):
			return // the API let it go, or the job is gone
		case err != nil || !op.Done:
			continue
		case op.Failure != "":
			a.notice(what+" failed: "+firstLine(op.Failure), "")
		}
		return
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// StopWithSavepoint stops the job with a savepoint (Flink's stop).
func (a *Attached) StopWithSavepoint() error {
	return a.call(func(ctx context.Context) error {
		_, err := a.client.StopWithSavepoint(ctx, a.jobID)
		return err
	})
}

// Cancel cancels the job.
func (a *Attached) Cancel() error {
	return a.call(func(ctx context.Context) error { return a.client.Terminate(ctx, a.jobID, "cancel") })
}

// Faults are what the control topic carries, when there is one.
func (a *Attached) Faults() []tui.FaultChoice {
	why := ""
	if a.opts.Control == nil {
		why = "no control topic: attach with --brokers (and --control-topic) to a job that reads one"
	}
	return []tui.FaultChoice{
		{Kind: "panic", Description: "the subtask throws at its next record (through the control topic)", Available: why == "", Why: why},
		{Kind: "slow", Description: fmt.Sprintf("the subtask handles 1/%d of its rate for %s (through the control topic)", slowFactor, slowDuration),
			Available: why == "", Why: why},
	}
}

// Inject writes fault for task into the control topic; the job's hook
// acts at the task's next record.
func (a *Attached) Inject(fault, task string) error {
	if a.opts.Control == nil {
		return errors.New("no control topic: attach with --brokers (and --control-topic) to a job that reads one")
	}
	f := ControlFault{Fault: fault, Task: controlTask(task), ID: fmt.Sprintf("attach-%d", time.Now().UnixNano())}
	switch fault {
	case "panic":
	case "slow":
		f.Factor, f.DurationMs = slowFactor, slowDuration.Milliseconds()
	default:
		return fmt.Errorf("%s: the control topic carries panic and slow", fault)
	}
	if err := a.opts.Control.Send(f); err != nil {
		return err
	}
	a.notice(fmt.Sprintf("%s for %s written to the control topic %s", fault, f.Task, a.opts.Control.Topic),
		"the job's fault hook acts at the subtask's next record: a subtask that reads nothing takes it when records come")
	return nil
}

// The rest of the keys have no REST counterpart; the UI asks Unavailable
// first, so these are not called from the keys.

func (a *Attached) SetMode(string) error { return errors.New(a.Unavailable(tui.ActionMode)) }
func (a *Attached) SetTempo(view.Tempo)  {}
func (a *Attached) Step()                {}
func (a *Attached) ResetRestarts()       {}
func (a *Attached) SetSourcesPaused(bool) {
}
func (a *Attached) SetRate(float64) error { return errors.New(a.Unavailable(tui.ActionRate)) }
func (a *Attached) Resubmit() error       { return errors.New(a.Unavailable(tui.ActionRestarts)) }
func (a *Attached) TourKey(string) bool   { return false }
