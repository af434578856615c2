package runtime

// The job master's goroutine: it turns what reaches the master (task
// events, due faults, the coordinator failing the job, the restart timer,
// the end of the run's context, a resubmit) into events of master.Master,
// and carries out the actions the master returns, in order, feeding their
// answers back as events. Every decision is the master's.

import (
	"context"
	"time"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/clock"
	"github.com/faultline-dev/faultline/runtime/master"
	"github.com/faultline-dev/faultline/runtime/spec"
)

// driver runs one master for the run; it lives in Run's goroutine.
type driver struct {
	j    *Job
	m    *master.Master
	opts RunOptions
	res  *Result

	a    *attempt // the latest attempt (kept after its teardown for the final commit)
	live bool     // a's subtasks run
	// startNew starts a subtask a partial restart built, under a's context.
	startNew func(t *task)
	n        int64 // attempts deployed

	restore *checkpoint.Completed // what the next deployment restores
	states  map[string][]*backend.SubtaskState
	olds    []*task // the instances a partial restart cancelled
	news    []*task // ... and their successors, not started yet

	timer   clock.Timer
	elapsed chan struct{} // the restart delay is over
	told    bool          // the end of ctx was told
	pending []master.Event
	faults  map[int]*faultEntry // every fault the master knows, by id
	failAt  time.Duration       // when the failure being decided on happened
	err     error               // what failed the job, at the end
}

// runMaster runs the job from restore until the master ends the run: it
// sets res.Status, or returns the error that failed the job.
func (j *Job) runMaster(ctx context.Context, opts RunOptions, res *Result, restore *checkpoint.Completed, states map[string][]*backend.SubtaskState, reason string) error {
	d := &driver{j: j, opts: opts, res: res, restore: restore, states: states,
		elapsed: make(chan struct{}, 1), faults: map[int]*faultEntry{}}
	d.m = master.New(master.Config{
		Handler: j.handler, Sources: subtasksOf(j.spec, spec.TypeSource), FinalCheckpoint: j.cfg.Checkpoint.Interval > 0,
		SavepointOnExit: opts.SavepointOnExit, WaitToResubmit: opts.WaitToResubmit,
	})
	defer func() {
		if d.timer != nil {
			d.timer.Stop()
		}
	}()
	d.pending = append(d.pending, master.Start{Reason: reason})
	for !d.m.Ended() {
		if len(d.pending) > 0 {
			ev := d.pending[0]
			d.pending = d.pending[1:]
			for _, act := range d.m.Step(ev, j.clk.Now()) {
				d.carryOut(ctx, act)
			}
			continue
		}
		d.await(ctx)
	}
	if d.live {
		// Not expected: every end the master decides on cancels what runs.
		j.logf("the job master ended with attempt %d running; cancelling it", d.n)
		d.cancelAttempt()
	}
	return d.err
}

// await waits for what reaches the master next and adds it to pending.
func (d *driver) await(ctx context.Context) {
	j := d.j
	if !d.told && ctx.Err() != nil {
		d.told = true
		d.pending = append(d.pending, d.canceled())
		return
	}
	var events chan taskEvent
	if d.live {
		events = d.a.events
	}
	var resubmits chan struct{}
	if d.m.Failed() {
		resubmits = j.inbox.resubmits
	}
	var done <-chan struct{}
	if !d.told {
		done = ctx.Done()
	}
	select {
	case ev := <-events:
		d.pending = append(d.pending, d.taskEvent(ev))
	case f := <-j.faultCh:
		d.pending = append(d.pending, master.FaultDue{Fault: *d.fault(f)})
	case e := <-j.inbox.coordFail:
		d.pending = append(d.pending, master.JobFailed{Epoch: e.attempt, Err: e.err})
	case <-d.elapsed:
		d.pending = append(d.pending, d.newest(), master.DelayElapsed{})
	case <-resubmits:
		d.pending = append(d.pending, d.newest(), master.Resubmit{})
	case <-done:
	}
}

// canceled is the end of the run's context as the master's event: by the
// crash fault, or by the user (with a savepoint when the stop asked for
// one, see Job.SavepointWhenStopped).
func (d *driver) canceled() master.Event {
	return master.Canceled{Crashed: d.j.crashed.Load(), Savepoint: d.j.inbox.stopSavepoint.Load()}
}

// newest tells the master the newest checkpoint that completed.
func (d *driver) newest() master.Event {
	return master.CheckpointCompleted{ID: d.j.newestCheckpoint.Load()}
}

// taskEvent is a subtask's report as the master's event.
func (d *driver) taskEvent(ev taskEvent) master.Event {
	t := ev.task
	switch ev.kind {
	case evFailed:
		return master.TaskFailed{Task: t.name, Instance: t.deploys, Err: ev.err, Fault: d.fault(ev.fault)}
	case evFinished:
		return master.TaskFinished{Task: t.name, Instance: t.deploys}
	default:
		return master.SourceAtEnd{Task: t.name, Instance: t.deploys}
	}
}

// fault names f for the master (nil for nil).
func (d *driver) fault(f *faultEntry) *master.Fault {
	if f == nil {
		return nil
	}
	d.faults[f.id] = f
	mf := &master.Fault{ID: f.id}
	if !f.Kind.JobLevel() {
		mf.Task, mf.Timed = f.Task, f.AfterRecords == 0
	}
	return mf
}

// answer feeds the answer of an action back to the master; the end of
// the run's context wins over an error it caused.
func (d *driver) answer(ctx context.Context, err error, failed, ok master.Event) {
	switch {
	case err == nil:
		d.pending = append(d.pending, ok)
	case ctx.Err() != nil:
		if !d.told {
			d.told = true
			d.pending = append(d.pending, d.canceled())
		}
	default:
		d.pending = append(d.pending, failed)
	}
}

// unfired tells the master, as due again, the timed faults delivered to
// instances of scope (nil: every subtask) that were cancelled before they
// fired.
func (d *driver) unfired(scope map[string]bool) {
	for _, f := range d.j.faults {
		if f.AfterRecords == 0 && (scope == nil || scope[f.Task]) && f.delivered.Load() && !f.fired.Load() {
			f.delivered.Store(false)
			d.pending = append(d.pending, master.FaultDue{Fault: *d.fault(f)})
		}
	}
}
