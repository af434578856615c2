package attach

import (
	"context"
	"errors"
	"fmt"
	"time"

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
// id is known once the job reports it, so it returns 0.
func (a *Attached) TriggerCheckpoint() (int64, error) {
	return 0, a.call(func(ctx context.Context) error {
		return a.client.Post(ctx, "/jobs/"+a.jobID+"/checkpoints", map[string]any{}, nil)
	})
}

// TriggerSavepoint asks for a savepoint into the job's configured
// savepoint directory (execution.checkpointing.savepoint-dir).
func (a *Attached) TriggerSavepoint() (int64, error) {
	return 0, a.call(func(ctx context.Context) error {
		_, err := a.client.TriggerSavepoint(ctx, a.jobID)
		return err
	})
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
	return a.opts.Control.Send(f)
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
