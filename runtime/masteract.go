package runtime

// The job master's actions carried out: deployments, cancellations,
// restores, the coordinator's start and stop, faults, and the events and
// figures they leave for the UI and the report.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/master"
	"github.com/faultline-dev/faultline/runtime/view"
)

// carryOut does what act says.
func (d *driver) carryOut(ctx context.Context, act master.Action) {
	j := d.j
	switch act := act.(type) {
	case master.Deploy:
		d.deploy(ctx, act.Epoch)
	case master.StartCheckpoints:
		j.coord.Start(act.Epoch, d.a.taskIDs())
		for _, name := range act.Finished {
			if t := d.a.lookup(name); t != nil {
				j.coord.TaskFinished(act.Epoch, t.id)
			}
		}
	case master.StopCheckpoints:
		j.coord.Stop(checkpoint.ReasonJobFailover, act.Err)
	case master.SetStatus:
		j.status(act.Status, act.Reason)
	case master.Failure:
		d.failure(act)
	case master.Decided:
		d.decided(act)
	case master.CancelAttempt:
		d.cancelAttempt()
	case master.CancelTasks:
		d.cancelTasks(act)
	case master.Failover:
		d.emitFailover(act.Failed, act.Tasks)
	case master.ScheduleRestart:
		d.scheduleRestart(act)
	case master.PickRestore:
		var err error
		d.restore, d.states, err = j.rs.pickRestore(ctx, true)
		var id int64
		if d.restore != nil {
			id = d.restore.ID
		}
		d.answer(ctx, err, master.RestoreFailed{Err: err}, master.Restored{Checkpoint: id})
	case master.MarkRestored:
		j.markRestored(d.res, d.restore, act.Why, act.Tasks...)
	case master.RestartScheduledNoMore:
		j.ledger.restarts.update(func(v *RestartView) { v.NextRestartAt = time.Time{} })
	case master.ReplaceTasks:
		err := d.replaceTasks(act.Epoch)
		d.answer(ctx, err, master.ReplaceFailed{Err: err}, master.Replaced{})
	default:
		d.carryOutMore(ctx, act)
	}
}

// carryOutMore does the actions carryOut leaves to it.
func (d *driver) carryOutMore(ctx context.Context, act master.Action) {
	j := d.j
	switch act := act.(type) {
	case master.StartTasks:
		for _, t := range d.news {
			d.startNew(t)
		}
		d.olds, d.news = nil, nil
	case master.TaskDone:
		if t := d.a.lookup(act.Task); t != nil {
			j.coord.TaskFinished(act.Epoch, t.id)
		}
	case master.Deliver:
		if f := d.faults[act.Fault.ID]; f != nil && (d.live || f.Kind.JobLevel()) {
			d.deliver(ctx, d.a, f)
		}
	case master.Rearm:
		if f := d.faults[act.Fault.ID]; f != nil {
			f.fired.Store(false)
			if act.Fault.Timed {
				f.delivered.Store(false) // the master delivers it again
			}
		}
	case master.TriggerCheckpoint:
		if _, err := j.coord.Trigger(checkpoint.KindCheckpoint); err != nil {
			j.logf("final checkpoint: %v", err)
		}
	case master.StopWithSavepoint:
		d.res.ExitSavepoint = d.stopWithSavepoint(d.a, d.opts.SavepointTimeout)
	case master.FinalCommit:
		err := j.finalCommit(d.a)
		d.pending = append(d.pending, master.Committed{Err: err})
	case master.GiveUp:
		d.res.GaveUp = act.Reason
		b := j.handler.Backoff()
		j.ledger.restarts.update(func(v *RestartView) {
			v.NextRestartAt, v.GaveUp, v.Status = time.Time{}, act.Reason, b.Status()
		})
	case master.ResetRestarts:
		b := j.handler.Backoff()
		j.ledger.restarts.update(func(v *RestartView) { v.Status, v.GaveUp = b.Status(), "" })
		d.res.Status, d.res.GaveUp = "", ""
	case master.End:
		if act.Err != nil {
			d.err = act.Err
		} else {
			d.res.Status = act.Status
		}
	default:
		panic(fmt.Sprintf("the job master returned an action the driver does not know: %T", act))
	}
}

// deploy builds and starts every subtask at epoch, restoring d.restore.
func (d *driver) deploy(ctx context.Context, epoch int64) {
	d.n++
	a, actx, err := d.j.deploy(ctx, d.n, epoch, d.restore, d.states)
	if err == nil {
		d.a, d.live = a, true
		d.startNew = func(t *task) { d.j.start(actx, t) }
	}
	d.answer(ctx, err, master.DeployFailed{Err: err}, master.Deployed{})
}

// failure records a failure and tells it; checkpointing stops, as a
// failover aborts what is pending (Flink: the failover's abort of pending
// checkpoints).
func (d *driver) failure(f master.Failure) {
	j := d.j
	fi := FailureInfo{At: j.obs.Since(), Task: f.Task, Error: f.Err.Error()}
	var bad *ErrBadRecord
	switch {
	case f.Fault != nil && d.faults[f.Fault.ID] != nil:
		fi.Fault = string(d.faults[f.Fault.ID].Kind)
	case errors.As(f.Err, &bad) && bytes.Equal(bad.Input, PoisonRecord):
		fi.Fault = string(FaultPoison)
	}
	d.failAt = fi.At
	d.res.Failures = append(d.res.Failures, fi)
	failure := view.Failure{At: j.wall.Now(), Task: f.Task, Error: fi.Error, Fault: fi.Fault}
	j.ledger.restarts.update(func(v *RestartView) {
		v.Failures = append([]view.Failure{failure}, v.Failures[:min(len(v.Failures), view.FailureHistory-1)]...)
	})
	j.obs.Emit(view.TaskFailed{Task: f.Task, Error: f.Err.Error(), Attempt: j.epoch.Load(), Fault: fi.Fault})
	j.endStep()
	j.coord.Stop(checkpoint.ReasonJobFailover, fmt.Errorf("job failover: %w", f.Err))
}

// decided records the failure handler's decision for the report and the
// UI.
func (d *driver) decided(dc master.Decided) {
	j := d.j
	giveUp := dc.Decision.GiveUp
	d.res.Restarts = dc.Restarts
	if giveUp == "" {
		d.res.Failovers = append(d.res.Failovers, FailoverInfo{
			At: d.failAt, Strategy: string(j.handler.Failover()), Failed: dc.Failed, Restarted: dc.Restarted,
		})
	} else {
		d.res.GaveUp = giveUp
	}
	j.ledger.restarts.update(func(v *RestartView) {
		v.Status = j.handler.Backoff().Status()
		v.LastFailed, v.LastError = dc.Failed, dc.Err.Error()
		v.GaveUp = giveUp
		v.Restarts = dc.Restarts
		if giveUp == "" {
			v.LastRestarted = dc.Restarted
			v.NextRestartAt = j.clk.Now().Add(dc.Decision.Delay)
		}
	})
}

// scheduleRestart tells the restart and starts its timer.
func (d *driver) scheduleRestart(s master.ScheduleRestart) {
	d.emitRestartScheduled(s.Delay, s.Attempt, s.Tasks)
	if d.timer != nil {
		d.timer.Stop()
	}
	select {
	case <-d.elapsed: // a delay that is over already
	default:
	}
	d.timer = d.j.clk.AfterFunc(s.Delay, func() {
		select {
		case d.elapsed <- struct{}{}:
		default:
		}
	})
}

// cancelAttempt cancels the attempt and waits for all its goroutines.
// What its subtasks reported meanwhile goes to the master (their
// instances are stale now), and so do the timed faults they were given and
// did not fire.
func (d *driver) cancelAttempt() {
	j, a := d.j, d.a
	if !d.live {
		return
	}
	d.live = false
	for _, t := range a.taskList() {
		if s := t.m.Status(); s == TaskRunning || s == TaskDeploying {
			t.setStatus(TaskCanceling, "the attempt is torn down")
		}
	}
	a.stop()
	a.closeBackends()
	j.cur.Lock()
	j.cur.a = nil
	j.cur.Unlock()
	for {
		select {
		case ev := <-a.events:
			d.pending = append(d.pending, d.taskEvent(ev))
			continue
		default:
		}
		break
	}
	d.unfired(nil)
	if j.cfg.AfterTeardown != nil {
		j.cfg.AfterTeardown(a.n, j.live.Load())
	}
}

// cancelTasks cancels the current instances of c.Tasks and waits for them
// (a partial restart); the rest of the attempt runs on.
func (d *driver) cancelTasks(c master.CancelTasks) {
	scope := map[string]bool{}
	d.olds = d.olds[:0]
	for _, name := range c.Tasks {
		d.olds = append(d.olds, d.a.lookup(name))
		scope[name] = true
	}
	for _, t := range d.olds {
		if s := t.m.Status(); s == TaskRunning || s == TaskDeploying {
			t.setStatus(TaskCanceling, c.Why)
		}
		t.abandon()
		t.cancel()
	}
	for _, t := range d.olds {
		t.done.Wait()
	}
	d.unfired(scope)
}

// replaceTasks builds the successors of the cancelled instances at epoch
// from the restored checkpoint and puts them in their place (Flink: the
// scheduler's restartTasks for a failover region); they start later.
func (d *driver) replaceTasks(epoch int64) error {
	j, a := d.j, d.a
	a.epoch.Store(epoch)
	j.epoch.Store(epoch)
	d.news = make([]*task, len(d.olds))
	for i, old := range d.olds {
		t, err := j.newTask(a, old.op, old.id.Index, d.restore, d.states)
		if err != nil {
			for _, n := range d.news[:i] {
				a.closeBackend(n)
			}
			d.news = nil
			return err
		}
		d.news[i] = t
	}
	if j.handler.Failover() == restart.FailoverIndividual {
		for i, old := range d.olds {
			d.takeOver(d.news[i], old, d.restore)
		}
	} else {
		j.wire(d.news)
	}
	a.replace(d.olds, d.news)
	for _, old := range d.olds {
		a.closeBackend(old)
	}
	return nil
}
