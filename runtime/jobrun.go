package runtime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/clock"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/view"
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
	j.rs.skipCommitted = opts.SkipCommitted
	j.status(JobCreated, "")
	restore, states, reason, err := j.startPoint(ctx, opts, res)
	if err != nil {
		return nil, err
	}
	stopTimers := j.armTimedFaults(j.clk)
	defer stopTimers()
	stopLoad := j.startLoadReports(ctx)
	defer stopLoad()
	if err := j.runMaster(ctx, opts, res, restore, states, reason); err != nil {
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

// startPoint picks what the first attempt restores: the savepoint asked
// for, the newest valid checkpoint when resuming, or nothing. reason is
// what RUNNING will say; an error fails the job.
func (j *Job) startPoint(ctx context.Context, opts RunOptions, res *Result) (restore *checkpoint.Completed, states map[string][]*backend.SubtaskState, reason string, err error) {
	reason = "job submitted"
	if opts.FromSavepoint > 0 {
		if restore, states, err = j.rs.savepointRestore(ctx, opts); err != nil {
			j.status(JobFailed, err.Error())
			return nil, nil, "", err
		}
		j.markRestored(res, restore, "from savepoint")
		res.Resumed = restore.ID
		reason = fmt.Sprintf("started from savepoint %d", restore.ID)
	} else if opts.Resume {
		if restore, states, err = j.rs.pickRestore(ctx, true); err != nil {
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
func (inj *injector) armTimedFaults(clk clock.Clock) (stop func()) {
	var timers []clock.Timer
	for _, f := range inj.faults {
		if f.AfterRecords == 0 && f.AfterCheckpoints == 0 {
			f := f
			timers = append(timers, clk.AfterFunc(f.After, func() { inj.faultCh <- f }))
		}
	}
	return func() {
		for _, t := range timers {
			t.Stop()
		}
	}
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
		latest, states, err := j.rs.pickRestore(after, false)
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
		if res.Ahead, err = j.rs.heldAhead(after, states); err != nil {
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
	for _, op := range j.spec.Operators {
		if op.Type == spec.TypeSink {
			for i := range op.Parallelism {
				res.RecordsWritten += j.metrics[checkpoint.TaskID{Operator: op.Name, Index: i}.String()].RecordsIn.Load()
			}
		}
	}
	j.ledger.flushLosses()
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

// stopWithSavepoint takes a savepoint of the running attempt before it is
// cancelled, and returns its id (0 when it failed).
func (d *driver) stopWithSavepoint(a *attempt, timeout time.Duration) int64 {
	j := d.j
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	for len(j.inbox.savepoints) > 0 {
		<-j.inbox.savepoints
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
		case done := <-j.inbox.savepoints:
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

// SavepointWhenStopped has the end of the run's context stop the job
// with a savepoint first, as RunOptions.SavepointOnExit does (Flink:
// stop-with-savepoint): the caller asks for it, then ends the context.
func (j *Job) SavepointWhenStopped() { j.inbox.stopSavepoint.Store(true) }

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
	case j.inbox.resubmits <- struct{}{}:
	default: // one is asked for already
	}
	return nil
}
