package tour

import (
	"context"
	"time"

	"github.com/faultline-dev/faultline/runtime/fault"
	"github.com/faultline-dev/faultline/runtime/view"
)

// This file holds the key steps: what the tour asks the learner to press,
// what it does for them, and how it knows the key took effect.

// press asks for keys and waits for what they do; autoplay and headless
// do it themselves, and so does n interactively.
func (r *Runner) press(ctx context.Context, d Driver, p *Press, res *StepResult) error {
	until := p.Until
	if until == nil {
		until = p.Do.effect()
	}
	r.mu.Lock()
	since, ids := r.seq, len(r.done)
	r.mu.Unlock()
	res.Text = p.Keys
	r.setPanel(func(pn *view.Tour) { pn.Key = p.Keys })
	defer r.setPanel(func(pn *view.Tour) { pn.Key, pn.Hint = "", "" })
	if r.mode != Interactive {
		if r.mode == Autoplay {
			if err := r.pause(ctx, 2*time.Second); err != nil {
				return err
			}
		}
		if acted, err := r.actOnceRunning(ctx, d, p.Do, res); !acted {
			return err
		}
	}
	for {
		timeout := until.timeout()
		if r.mode == Interactive {
			timeout = 10 * time.Minute // the learner takes the time it takes
		}
		ok, detail, err := r.until(ctx, d, timeout, func(s view.Snapshot) (bool, string) {
			if hint := r.wrongAction(p.Do, since); hint != "" {
				r.setPanel(func(pn *view.Tour) { pn.Hint = hint })
			}
			return r.holds(until, s, since, ids)
		}, true)
		if err != nil || ok && detail != "skipped (n)" {
			res.OK, res.Detail = ok, detail
			return err
		}
		if !ok {
			res.OK, res.Detail = false, "timed out waiting for "+until.says()
			return nil
		}
		// n: the tour presses the keys for the learner, once the job
		// runs (n right after a run starts would find nothing to act on).
		if acted, err := r.actOnceRunning(ctx, d, p.Do, res); !acted {
			return err
		}
	}
}

// actOnceRunning does a once the job runs, as its keys would; an action
// the job refuses fails res. It reports whether a was done.
func (r *Runner) actOnceRunning(ctx context.Context, d Driver, a Action, res *StepResult) (bool, error) {
	if err := r.running(ctx, d); err != nil {
		return false, err
	}
	if err := act(d, a); err != nil {
		res.OK, res.Detail = false, err.Error()
		return false, nil
	}
	return true, nil
}

// wrongAction is a hint when the learner injected a fault since event
// since that is not the one a asks for (another subtask, another
// fault), "" otherwise.
func (r *Runner) wrongAction(a Action, since int64) string {
	if a.Inject == "" {
		return ""
	}
	r.mu.Lock()
	e, ok := r.seenSince("fault_injected", nil, since)
	r.mu.Unlock()
	if !ok {
		return ""
	}
	fi, _ := e.ev.(view.FaultInjected)
	fault, task := fi.Fault, fi.Task
	if fault == a.Inject && (a.Task == "" || task == a.Task) {
		return ""
	}
	got := fault
	if task != "" {
		got += " into " + task
	}
	want := a.Inject
	if a.Task != "" {
		want += " into " + a.Task
	}
	return "that was " + got + "; this step asks for " + want + ": try again, or n and the tour does it"
}

// running waits (at most 30 s) until the job runs: a key pressed while it
// starts or restarts would find nothing to act on.
func (r *Runner) running(ctx context.Context, d Driver) error {
	_, _, err := r.until(ctx, d, defaultTimeout, func(s view.Snapshot) (bool, string) { return s.Job.Status == "RUNNING", "" }, false)
	return err
}

// effect is the moment that shows an action took effect.
func (a Action) effect() *Cond {
	switch {
	case a.Inject != "" && !fault.Kind(a.Inject).JobLevel():
		// The fault must hit the subtask the tour names.
		return &Cond{Event: "fault_injected", Where: map[string]string{"fault": a.Inject, "task": a.Task}, Says: "the " + a.Inject + " fault in " + a.Task}
	case a.Inject != "":
		return &Cond{Event: "fault_injected", Where: map[string]string{"fault": a.Inject}, Says: "the " + a.Inject + " fault"}
	case a.Mode != "":
		return &Cond{Event: "mode_changed", Where: map[string]string{"mode": a.Mode}, Says: "the mode to change"}
	case a.Checkpoint:
		return &Cond{Event: "checkpoint_triggered", Says: "a checkpoint"}
	case a.Savepoint:
		return &Cond{Event: "savepoint_completed", Says: "the savepoint"}
	case a.ResetRestarts:
		return &Cond{Event: "restarts_reset", Says: "the restart attempts to reset"}
	}
	return &Cond{JobStatus: "RUNNING", Says: "the job"}
}

// act does a on the job.
func act(d Driver, a Action) error {
	switch {
	case a.Inject != "":
		return d.InjectFor(a.Inject, a.Task, a.For)
	case a.Mode != "":
		return d.SetMode(a.Mode)
	case a.Checkpoint:
		_, err := d.TriggerCheckpoint()
		return err
	case a.Savepoint:
		_, err := d.TriggerSavepoint()
		return err
	case a.ResetRestarts:
		d.ResetRestarts()
	case a.Rate > 0:
		return d.SetRate(a.Rate)
	}
	return nil
}
