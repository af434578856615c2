package runtime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"faultline/backend"
	"faultline/checkpoint"
	"faultline/internal/clock"
	"faultline/restart"
	"faultline/runtime/view"
)

// RunOptions say where a run starts.
type RunOptions struct {
	// Resume starts from the newest valid retained checkpoint of this job
	// in the store, when there is one.
	Resume bool
	// FromSavepoint starts from that savepoint (Flink: run -s), also at
	// other parallelisms than it was taken with.
	FromSavepoint int64
	// AllowNonRestoredState lets a savepoint hold state of operators the
	// job no longer has (Flink: --allowNonRestoredState).
	AllowNonRestoredState bool
	// SavepointOnExit takes a savepoint when the run is stopped (ctx ends)
	// before cancelling the job (Flink: stop with savepoint).
	SavepointOnExit bool
	// WaitToResubmit keeps a run whose restart strategy gave up (FAILED)
	// going until ctx ends, for a Resubmit: a new job from the newest
	// checkpoint, as flink run -s would start (the terminal UI's R).
	WaitToResubmit bool
	// SavepointTimeout bounds that savepoint (default 30s).
	SavepointTimeout time.Duration
	// StopBudget bounds what a run does once ctx has ended: its subtasks
	// ending aside, settling its outputs as the last checkpoint had them.
	// What is not done when it is up is left to the next run, which
	// settles the outputs as it restores (0: no bound).
	StopBudget time.Duration
	// SkipCommitted says that the sinks' outputs hold what earlier runs
	// committed (a run that goes on from its state dir): a start with no
	// checkpoint to restore (every one deleted or lost, or a fresh start
	// past damaged ones) reads the input again from its beginning, and the
	// sinks skip, once each, the records their committed output already
	// holds, as after a fallback past a damaged checkpoint.
	SkipCommitted bool
}

// Run runs the job until it finishes, fails for good, or ctx ends
// (CANCELED).
func (j *Job) Run(ctx context.Context, opts RunOptions) (*Result, error) {
	start := j.wall.Now()
	res := &Result{}
	j.skipCommitted = opts.SkipCommitted
	j.status(JobCreated, "")
	restore, states, reason, err := j.startPoint(ctx, opts, res)
	if err != nil {
		return nil, err
	}
	stopTimers := j.armTimedFaults()
	defer stopTimers()
	stopLoad := j.startLoadReports(ctx)
	defer stopLoad()
	if err := j.runAttempts(ctx, opts, res, restore, states, reason); err != nil {
		return nil, err
	}
	if j.crashed.Load() {
		// A crash settles nothing: the next run does it as it restores.
		j.tally(res, start)
		res.Crashed = true
		return res, nil
	}
	// What follows must happen however the run ended, a cancelled ctx
	// included: it keeps ctx's values, not its end, and has the stop's
	// budget from that end.
	after, windDown := WindDown(ctx, j.wall, opts.StopBudget)
	defer windDown()
	if err := j.settleEnd(after, res); err != nil {
		return nil, err
	}
	j.tally(res, start)
	return res, nil
}

// Crashed reports whether the crash fault ended the run and the process
// lived on (see Config.Crash).
func (j *Job) Crashed() bool { return j.crashed.Load() }

// startPoint picks what the first attempt restores: the savepoint asked
// for, the newest valid checkpoint when resuming, or nothing. reason is
// what RUNNING will say; an error fails the job.
func (j *Job) startPoint(ctx context.Context, opts RunOptions, res *Result) (restore *checkpoint.Completed, states map[string][]*backend.SubtaskState, reason string, err error) {
	reason = "job submitted"
	if opts.FromSavepoint > 0 {
		if restore, states, err = j.savepointRestore(ctx, opts); err != nil {
			j.status(JobFailed, err.Error())
			return nil, nil, "", err
		}
		j.markRestored(res, restore, "from savepoint")
		res.Resumed = restore.ID
		reason = fmt.Sprintf("started from savepoint %d", restore.ID)
	} else if opts.Resume {
		if restore, states, err = j.pickRestore(ctx, true); err != nil {
			j.status(JobFailed, err.Error())
			return nil, nil, "", err
		}
		j.markRestored(res, restore, "resumed")
		if restore != nil {
			res.Resumed = restore.ID
			reason = fmt.Sprintf("resumed from checkpoint %d", restore.ID)
		}
	}
	return restore, states, reason, nil
}

// armTimedFaults starts the timers of the faults that fire after a time
// (not after records or checkpoints); the func it returns stops them.
func (j *Job) armTimedFaults() (stop func()) {
	var timers []clock.Timer
	for _, f := range j.faults {
		if f.AfterRecords == 0 && f.AfterCheckpoints == 0 {
			f := f
			timers = append(timers, j.clk.AfterFunc(f.After, func() { j.faultCh <- f }))
		}
	}
	return func() {
		for _, t := range timers {
			t.Stop()
		}
	}
}

// runAttempts deploys the job from restore, and again after every failure
// it restarts from, until the run ends: it sets res.Status, or returns the
// error that failed the job.
func (j *Job) runAttempts(ctx context.Context, opts RunOptions, res *Result, restore *checkpoint.Completed, states map[string][]*backend.SubtaskState, reason string) error {
	var queued []*faultEntry
	for n := int64(1); ; n++ {
		a, actx, err := j.deploy(ctx, n, restore, states)
		if err != nil {
			if ctx.Err() != nil {
				j.status(JobCanceled, "canceled while restarting")
				res.Status = JobCanceled
				return nil
			}
			j.status(JobFailed, err.Error())
			return err
		}
		for _, f := range queued {
			j.deliver(ctx, a, f)
		}
		queued = nil
		// RUNNING is told once checkpoints can be triggered.
		j.coord.Start(a.epoch.Load(), a.taskIDs())
		j.status(JobRunning, reason)
		out := j.supervise(ctx, actx, a, res)
		if out.kind == outCanceled && opts.SavepointOnExit && !j.crashed.Load() {
			res.ExitSavepoint = j.stopWithSavepoint(a, opts.SavepointTimeout)
		}
		if out.kind != outFailed || out.d.GiveUp != "" {
			if err := j.endAttempt(a, out, res); err != nil || res.Status != JobFailed || !opts.WaitToResubmit {
				return err
			}
			var ok bool
			if restore, states, ok, err = j.awaitResubmit(ctx, res); !ok {
				return err
			}
			reason = "resubmitted from the newest checkpoint"
			continue
		}
		j.status(JobRestarting, out.err.Error())
		queued = append(queued, j.teardown(a, out.fault)...)
		var ok bool
		if restore, states, ok, err = j.restartFrom(ctx, out, res); !ok {
			if err != nil || res.Status != JobFailed || !opts.WaitToResubmit {
				return err
			}
			if restore, states, ok, err = j.awaitResubmit(ctx, res); !ok {
				return err
			}
			reason = "resubmitted from the newest checkpoint"
			continue
		}
		reason = fmt.Sprintf("restarted after failure of %s", restart.OrJob(out.task))
		j.markRestored(res, restore, reason)
	}
}

// endAttempt ends the run with attempt a, which ended as out says and is
// not restarted: it tears a down and sets res.Status, or returns the error
// that failed the job.
func (j *Job) endAttempt(a *attempt, out outcome, res *Result) error {
	switch out.kind {
	case outError:
		j.coord.Stop(checkpoint.ReasonJobFailover, out.err)
		j.teardown(a, nil)
		j.status(JobFailed, out.err.Error())
		return out.err
	case outFinished:
		j.coord.Stop(checkpoint.ReasonJobFailover, errors.New("job finished"))
		j.teardown(a, nil)
		if err := j.finalCommit(a); err != nil {
			j.status(JobFailed, err.Error())
			return err
		}
		j.status(JobFinished, "every task finished")
		res.Status = JobFinished
	case outCanceled:
		j.coord.Stop(checkpoint.ReasonJobFailover, errors.New("job canceled"))
		j.teardown(a, nil)
		why := "canceled by the user"
		if j.crashed.Load() {
			why = "the crash fault: the run ends as the process's death would end it"
		}
		j.status(JobCanceled, why)
		res.Status = JobCanceled
	case outFailed:
		// The failure handler gave up.
		j.status(JobFailing, out.err.Error())
		j.teardown(a, out.fault)
		res.GaveUp = out.d.GiveUp
		j.status(JobFailed, res.GaveUp)
		res.Status = JobFailed
	}
	return nil
}

// restartFrom waits the restart delay the failure handler chose for out,
// then picks the checkpoint the next attempt restores. ok is false when
// the run ends instead: canceled (res.Status says so) or failed (err).
func (j *Job) restartFrom(ctx context.Context, out outcome, res *Result) (restore *checkpoint.Completed, states map[string][]*backend.SubtaskState, ok bool, err error) {
	all := j.handler.AllTasks()
	j.emitFailover(out.task, all)
	j.emitRestartScheduled(out.d.Delay, res.Restarts, all)
	if !j.sleep(ctx, out.d.Delay) || ctx.Err() != nil {
		j.status(JobCanceled, "canceled while restarting")
		res.Status = JobCanceled
		return nil, nil, false, nil
	}
	if r, ok := j.handler.Backoff().(restart.Restarter); ok {
		if err := r.Restart(); err != nil {
			// The strategy threw where the restart was attempted: the
			// job fails here, with that exception as its cause.
			res.GaveUp = fmt.Sprintf("restart strategy %s: the restart after the failure of %s was attempted and threw: %v",
				j.handler.Backoff().Name(), restart.OrJob(out.task), err)
			j.restarts.update(func(v *RestartView) {
				v.NextRestartAt, v.GaveUp, v.Status = time.Time{}, res.GaveUp, j.handler.Backoff().Status()
			})
			j.status(JobFailed, res.GaveUp)
			res.Status = JobFailed
			return nil, nil, false, nil
		}
	}
	if restore, states, err = j.pickRestore(ctx, true); err != nil {
		if ctx.Err() != nil {
			j.status(JobCanceled, "canceled while restarting")
			res.Status = JobCanceled
			return nil, nil, false, nil
		}
		j.status(JobFailed, err.Error())
		return nil, nil, false, err
	}
	j.restarts.update(func(v *RestartView) { v.NextRestartAt = time.Time{} })
	return restore, states, true, nil
}

// settleEnd sets res.Latest once the run has ended, under after (see
// WindDown). Unless the job finished, it also leaves the outputs as the
// newest valid checkpoint had them.
func (j *Job) settleEnd(after context.Context, res *Result) error {
	if res.Status == JobFinished {
		latest, err := j.store.Latest(after)
		if err != nil {
			return err
		}
		res.Latest = latest
	} else {
		// Leave the outputs as a restart from the newest valid checkpoint
		// would, and check the output against that checkpoint.
		latest, states, err := j.pickRestore(after, false)
		if err != nil && !errors.Is(err, ErrNoValidCheckpoint) {
			return err
		}
		res.Latest = latest
		if err := j.settleOutputs(after, states); err != nil {
			how := string(res.Status)
			if res.GaveUp != "" {
				how += " (" + res.GaveUp + ")"
			}
			return fmt.Errorf("the job ended %s, and its outputs could not be left as its last checkpoint had them; the next run settles them: %w", how, err)
		}
		if res.Ahead, err = j.heldAhead(after, states); err != nil {
			return fmt.Errorf("read what the output holds past the newest valid checkpoint: %w", err)
		}
	}
	return nil
}

// tally fills in the rest of res once the run has ended: its time, the
// records read, the failures, the bad records and the checkpoints.
func (j *Job) tally(res *Result, start time.Time) {
	res.Elapsed = j.wall.Now().Sub(start)
	res.RecordsIn = j.in.Load()
	j.flushLosses()
	res.LostByFailover = j.RestartView().LostRecords
	res.Failover = string(j.handler.Failover())
	j.injected.Lock()
	res.Failures = append(res.Failures, j.injected.list...)
	j.injected.Unlock()
	sort.SliceStable(res.Failures, func(a, b int) bool { return res.Failures[a].At < res.Failures[b].At })
	res.BadSkipped, res.BadDeadLettered = j.bad.Counts()
	res.StateTTL = j.StateTTL()
	res.ReplaySkipped = j.bad.replaySkipped.Load()
	res.Checkpoints = j.coord.Stats()
	res.Unaligned = j.usedUnaligned.Load()
}

func (j *Job) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	done := make(chan struct{})
	t := j.clk.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return true
	case <-ctx.Done():
		t.Stop()
		return false
	}
}

// teardown cancels attempt a and waits for all its goroutines. first is the
// injected fault whose failure caused it, if any. It returns the timed
// faults that fired in the attempt without taking effect, to be delivered
// to the next one.
func (j *Job) teardown(a *attempt, first *faultEntry) (again []*faultEntry) {
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
	// Failures the supervisor did not take (it stopped at the first) were
	// not acted on: an injected fault among them fires again later.
	pending := a.sv.deferred
	a.sv.deferred = nil
	for {
		select {
		case ev := <-a.events:
			pending = append(pending, ev)
			continue
		default:
		}
		break
	}
	for _, ev := range pending {
		if ev.kind == evFailed && ev.fault != nil && ev.fault != first {
			ev.fault.fired.Store(false)
		}
	}
	again = append(again, a.sv.queued...)
	a.sv.queued = nil
	for _, f := range j.faults {
		if f.AfterRecords == 0 && f.delivered.Load() && !f.fired.Load() {
			f.delivered.Store(false)
			again = append(again, f)
		}
	}
	if j.cfg.AfterTeardown != nil {
		j.cfg.AfterTeardown(a.n, j.live.Load())
	}
	return again
}

type outcomeKind int

const (
	outFinished outcomeKind = iota
	outCanceled
	outFailed
	outError // the job cannot go on: a restart found nothing to restore
)

type outcome struct {
	kind  outcomeKind
	task  string
	err   error
	fault *faultEntry
	d     restart.Decision // outFailed: what the failure handler decided
}

// supervise runs the attempt until its end: all tasks finished, a failure
// that fails or restarts the whole job, the coordinator giving up, or
// cancellation of ctx, the run's. Failures that the failover strategy
// handles by restarting part of the job are handled here, and the attempt
// goes on; its new subtasks run under actx, the attempt's context.
func (j *Job) supervise(ctx, actx context.Context, a *attempt, res *Result) outcome {
	sv := a.sv
	for {
		if len(sv.deferred) > 0 {
			ev := sv.deferred[0]
			sv.deferred = sv.deferred[1:]
			if !a.isCurrent(ev.task) {
				if ev.fault != nil {
					ev.fault.fired.Store(false)
				}
				continue
			}
			out := outcome{kind: outFailed, task: ev.task.name, err: ev.err, fault: ev.fault}
			out.d = j.decide(out, res)
			if out.d.GiveUp != "" || out.d.Tasks == nil {
				return out
			}
			ok, err := j.restartPart(ctx, actx, a, out.d, res, sv, ev.task.name)
			switch {
			case err != nil:
				return outcome{kind: outError, err: err}
			case !ok:
				return outcome{kind: outCanceled}
			}
			continue
		}
		select {
		case ev := <-a.events:
			j.track(a, ev, sv)
			if len(sv.finished) == len(a.taskList()) {
				return outcome{kind: outFinished}
			}
		case f := <-j.faultCh:
			j.deliver(ctx, a, f)
		case e := <-j.coordFail:
			if e.attempt == a.epoch.Load() {
				out := outcome{kind: outFailed, err: e.err}
				out.d = j.decide(out, res)
				return out
			}
		case <-ctx.Done():
			return outcome{kind: outCanceled}
		}
	}
}

// stopWithSavepoint takes a savepoint of the running attempt before it is
// cancelled, and returns its id (0 when it failed).
func (j *Job) stopWithSavepoint(a *attempt, timeout time.Duration) int64 {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	for len(j.savepoints) > 0 {
		<-j.savepoints
	}
	id, err := j.coord.Trigger(checkpoint.KindSavepoint)
	if err != nil {
		j.obs.Emit(view.SavepointFailed{Error: err.Error()})
		return 0
	}
	deadline, tm := clock.After(j.clk, timeout)
	defer tm.Stop()
	for {
		select {
		case done := <-j.savepoints:
			if done == id {
				return id
			}
		case ev := <-a.events:
			if ev.kind == evFailed {
				j.obs.Emit(view.SavepointFailed{ID: &id, Error: ev.err.Error()})
				return 0
			}
		case <-deadline:
			j.obs.Emit(view.SavepointFailed{ID: &id, Error: fmt.Sprintf("not complete after %s", timeout)})
			return 0
		}
	}
}

// ErrNotFailed is Resubmit's answer for a job that has not FAILED: a
// running job restarts by its strategy, and R resets its attempts.
var ErrNotFailed = errors.New("only a FAILED job can be resubmitted")

// Resubmit asks a FAILED run that waits for it (RunOptions.WaitToResubmit)
// to start the job again from its newest checkpoint, with the restart
// strategy's count started afresh: a new job, as flink run -s starts one.
func (j *Job) Resubmit() error {
	if j.Status() != JobFailed {
		return ErrNotFailed
	}
	select {
	case j.resubmits <- struct{}{}:
	default: // one is asked for already
	}
	return nil
}

// awaitResubmit waits, with the job FAILED, for a Resubmit or the end of
// ctx, then picks the checkpoint the new job restores. ok is false when
// the run ends instead (FAILED, as it was; or err).
func (j *Job) awaitResubmit(ctx context.Context, res *Result) (restore *checkpoint.Completed, states map[string][]*backend.SubtaskState, ok bool, err error) {
	select {
	case <-ctx.Done():
		return nil, nil, false, nil
	case <-j.resubmits:
	}
	if restore, states, err = j.pickRestore(ctx, true); err != nil {
		if ctx.Err() != nil {
			return nil, nil, false, nil
		}
		return nil, nil, false, err
	}
	b := j.handler.Backoff()
	b.Reset()
	j.restarts.update(func(v *RestartView) { v.Status, v.GaveUp = b.Status(), "" })
	res.Status, res.GaveUp = "", ""
	j.markRestored(res, restore, "resubmitted")
	return restore, states, true, nil
}
