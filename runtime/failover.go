package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"faultline/checkpoint"
	"faultline/internal/clock"
	"faultline/restart"
	"faultline/runtime/spec"
	"faultline/runtime/view"
)

// ErrUnrecoverable marks a failure that no restart can cure (see
// restart.ErrUnrecoverable).
var ErrUnrecoverable = restart.ErrUnrecoverable

// unrecoverable wraps err as ErrUnrecoverable.
func unrecoverable(err error) error { return fmt.Errorf("%w: %w", ErrUnrecoverable, err) }

// pipelinedRegions splits the job's subtasks into pipelined regions (see
// restart.PipelinedRegions): a forward edge joins subtask i to subtask i,
// every other edge joins every pair. Regions and their subtasks are in job
// spec order.
func pipelinedRegions(job *spec.Job) [][]string {
	name := func(op string, i int) string { return checkpoint.TaskID{Operator: op, Index: i}.String() }
	var tasks []string
	var edges [][2]string
	for _, op := range job.Operators {
		for i := 0; i < op.Parallelism; i++ {
			tasks = append(tasks, name(op.Name, i))
		}
		for _, in := range op.Inputs {
			up := job.Op(in.From)
			for u := 0; u < up.Parallelism; u++ {
				for d := 0; d < op.Parallelism; d++ {
					if in.Edge != spec.Forward || d == u {
						edges = append(edges, [2]string{name(up.Name, u), name(op.Name, d)})
					}
				}
			}
		}
	}
	return restart.PipelinedRegions(tasks, edges)
}

// FailoverInfo is one failover of the run, as the report lists it: which
// subtask failed and which ones the failover strategy restarted.
type FailoverInfo struct {
	At        time.Duration
	Strategy  string
	Failed    string
	Restarted []string
}

// RestartView is what the UI shows of restarts (see Job.RestartView).
type RestartView struct {
	Strategy      string
	Description   string
	Status        restart.Status
	Failover      restart.FailoverStrategy
	NextRestartAt time.Time // zero when no restart is scheduled
	LastRestarted []string
	LastFailed    string
	LastError     string
	Restarts      int
	GaveUp        string
	LostRecords   int64
}

// restartState is the master's record behind RestartView.
type restartState struct {
	mu sync.Mutex
	v  RestartView
	// lostFrom holds the records individual failover lost, by the
	// checkpoint its restore went back to: the input they came from lies
	// after that checkpoint's offsets.
	lostFrom map[int64]int64
}

func (r *restartState) update(f func(v *RestartView)) {
	r.mu.Lock()
	f(&r.v)
	r.mu.Unlock()
}

// RestartView returns the restart and failover strategies' state.
func (j *Job) RestartView() RestartView {
	j.restarts.mu.Lock()
	defer j.restarts.mu.Unlock()
	v := j.restarts.v
	v.LastRestarted = slices.Clone(v.LastRestarted)
	return v
}

// ResetRestarts makes the restart strategy forget every failure so far, as
// the strategy of a newly submitted job starts (Flink keeps no count across
// jobs): a demo that used up its attempts can go on failing and restarting.
// A job that gave up already stays FAILED.
func (j *Job) ResetRestarts() {
	b := j.handler.Backoff()
	before := b.Status().Attempts
	b.Reset()
	j.restarts.update(func(v *RestartView) { v.Status = b.Status() })
	j.obs.Emit(view.RestartsReset{Strategy: b.Name(), Attempts: before})
}

// decide handles one failure: it records it, stops checkpointing, and asks
// the failure handler (restart.Handler) whether to give up or to restart
// the whole job or the failover strategy's part of it, after what delay;
// the job master then does what it decided.
func (j *Job) decide(out outcome, res *Result) restart.Decision {
	fi := FailureInfo{At: j.obs.Since(), Task: out.task, Error: out.err.Error()}
	failed := view.TaskFailed{Task: out.task, Error: out.err.Error(), Attempt: j.epoch.Load()}
	var bad *ErrBadRecord
	switch {
	case out.fault != nil:
		fi.Fault = string(out.fault.Kind)
	case errors.As(out.err, &bad) && bytes.Equal(bad.Input, PoisonRecord):
		fi.Fault = string(FaultPoison)
	}
	failed.Fault = fi.Fault
	res.Failures = append(res.Failures, fi)
	j.obs.Emit(failed)
	j.endStep()
	j.coord.Stop(checkpoint.ReasonJobFailover, fmt.Errorf("job failover: %w", out.err))

	d := j.handler.Handle(out.task, out.err, j.clk.Now())
	restarted := d.Tasks
	if d.GiveUp == "" {
		res.Restarts++
		if restarted == nil {
			restarted = j.handler.AllTasks()
		}
		res.Failovers = append(res.Failovers, FailoverInfo{
			At: fi.At, Strategy: string(j.handler.Failover()), Failed: out.task, Restarted: restarted,
		})
	}
	j.restarts.update(func(v *RestartView) {
		v.Status = j.handler.Backoff().Status()
		v.LastFailed, v.LastError = out.task, out.err.Error()
		v.GaveUp = d.GiveUp
		v.Restarts = res.Restarts
		if d.GiveUp == "" {
			v.LastRestarted = restarted
			v.NextRestartAt = j.clk.Now().Add(d.Delay)
		}
	})
	return d
}

// emitFailover tells that the failure of failed restarts tasks (the
// failover event, emitted here only).
func (j *Job) emitFailover(failed string, tasks []string) {
	j.obs.Emit(view.Failover{Strategy: string(j.handler.Failover()), Failed: failed, Tasks: tasks})
}

// emitRestartScheduled tells that tasks restart after delay, the
// attempt-th restart of the run (the restart_scheduled event, emitted here
// only).
func (j *Job) emitRestartScheduled(delay time.Duration, attempt int, tasks []string) {
	b := j.handler.Backoff()
	j.obs.Emit(view.RestartScheduled{Strategy: b.Name(), DelayMs: delay.Milliseconds(), Attempt: attempt,
		Description: b.Describe(), Failover: string(j.handler.Failover()), Tasks: tasks})
}

// supervision is the job master's record of the running attempt.
type supervision struct {
	finished map[string]bool // subtasks that finished
	atEnd    map[string]bool // sources that read all their input
	deferred []taskEvent     // failures that happened while another was handled
	queued   []*faultEntry   // timed faults waiting for a subtask being restarted
}

// restartPart restarts the subtasks of d.Tasks from the newest valid
// checkpoint while the rest of the attempt keeps running (region and
// individual failover; Flink: the scheduler's restartTasks for a failover
// region). The coordinator was stopped by decide; it starts again, at a new
// epoch, once the new instances are wired in, before the restore is told
// and they start under actx, the attempt's context. It
// returns false when ctx, the run's, ended during the restart.
func (j *Job) restartPart(ctx, actx context.Context, a *attempt, d restart.Decision, res *Result, sv *supervision, failed string) (bool, error) {
	olds := make([]*task, len(d.Tasks))
	inScope := map[string]bool{}
	for i, name := range d.Tasks {
		olds[i] = a.lookup(name)
		inScope[name] = true
	}
	j.emitFailover(failed, d.Tasks)
	for _, t := range olds {
		if s := t.m.Status(); s == TaskRunning || s == TaskDeploying {
			t.setStatus(TaskCanceling, string(j.handler.Failover())+" failover after the failure of "+failed)
		}
		t.abandon()
		t.cancel()
	}
	for _, t := range olds {
		t.done.Wait()
	}
	// Timed faults delivered to a replaced instance that did not fire there
	// fire in its successor.
	for _, f := range j.faults {
		if f.AfterRecords == 0 && inScope[f.Task] && f.delivered.Load() && !f.fired.Load() {
			f.delivered.Store(false)
			sv.queued = append(sv.queued, f)
		}
	}
	j.emitRestartScheduled(d.Delay, res.Restarts, d.Tasks)
	if !j.waitRestart(ctx, a, d.Delay, sv, inScope) {
		return false, nil
	}
	restore, states, err := j.pickRestore(ctx, true)
	if err != nil {
		if ctx.Err() != nil {
			return false, nil
		}
		return false, err
	}
	a.epoch.Store(j.epoch.Add(1))
	news := make([]*task, len(olds))
	for i, old := range olds {
		t, err := j.newTask(a, old.op, old.id.Index, restore, states)
		if err != nil {
			for _, n := range news[:i] {
				a.closeBackend(n)
			}
			return false, err
		}
		news[i] = t
	}
	if j.handler.Failover() == restart.FailoverIndividual {
		for i, old := range olds {
			j.takeOver(news[i], old, restore)
		}
	} else {
		j.wire(news)
	}
	a.mu.Lock()
	for i, t := range news {
		for k, x := range a.tasks {
			if x == olds[i] {
				a.tasks[k] = t
			}
		}
		for k, x := range a.sources {
			if x == olds[i] {
				a.sources[k] = t
			}
		}
		a.byName[t.name] = t
	}
	a.mu.Unlock()
	for _, old := range olds {
		a.closeBackend(old)
		delete(sv.finished, old.name)
		delete(sv.atEnd, old.name)
	}
	// Checkpoints are taken again before the restore is told: whoever
	// asks for one on seeing it gets one. A trigger reaches a new source
	// through its mailbox, which it reads once started.
	epoch := a.epoch.Load()
	j.coord.Start(epoch, a.taskIDs())
	for _, t := range a.taskList() {
		if sv.finished[t.name] {
			j.coord.TaskFinished(epoch, t.id)
		}
	}
	why := fmt.Sprintf("%s failover after the failure of %s", j.handler.Failover(), failed)
	j.markRestored(res, restore, why, d.Tasks...)
	j.restarts.update(func(v *RestartView) { v.NextRestartAt = time.Time{} })
	for _, t := range news {
		j.start(actx, t)
	}
	var again []*faultEntry
	for _, f := range sv.queued {
		if inScope[f.Task] {
			j.deliver(ctx, a, f)
		} else {
			again = append(again, f)
		}
	}
	sv.queued = again
	j.maybeFinalCheckpoint(a, sv)
	return true, nil
}

// waitRestart waits out the restart delay of a partial failover while the
// rest of the attempt runs on: it keeps track of subtasks finishing,
// delivers timed faults (those for subtasks being restarted wait for their
// new instance), and sets aside failures to handle after the restart. It
// returns false when ctx ended.
func (j *Job) waitRestart(ctx context.Context, a *attempt, delay time.Duration, sv *supervision, inScope map[string]bool) bool {
	done := make(chan struct{})
	t := j.clk.AfterFunc(delay, func() { close(done) })
	defer t.Stop()
	for {
		select {
		case <-done:
			return true
		case <-ctx.Done():
			return false
		case ev := <-a.events:
			j.track(a, ev, sv)
		case f := <-j.faultCh:
			if inScope[f.Task] {
				sv.queued = append(sv.queued, f) // delivered to the new instance
				continue
			}
			j.deliver(ctx, a, f)
		case <-j.coordFail:
			// The coordinator is stopped; nothing of it is pending.
		}
	}
}

// track records what a task event says about the attempt; failures are set
// aside in sv.deferred for the supervisor.
func (j *Job) track(a *attempt, ev taskEvent, sv *supervision) {
	if !a.isCurrent(ev.task) {
		// A replaced instance: whatever it reports is past. An injected
		// fault it failed with fires again in its successor.
		if ev.kind == evFailed && ev.fault != nil {
			ev.fault.fired.Store(false)
		}
		return
	}
	switch ev.kind {
	case evFailed:
		sv.deferred = append(sv.deferred, ev)
	case evFinished:
		sv.finished[ev.task.name] = true
		j.coord.TaskFinished(a.epoch.Load(), ev.task.id)
	case evSourceAtEnd:
		sv.atEnd[ev.task.name] = true
		j.maybeFinalCheckpoint(a, sv)
	}
}

// maybeFinalCheckpoint triggers the final checkpoint once every source has
// read all its input, rather than waiting for the next interval.
func (j *Job) maybeFinalCheckpoint(a *attempt, sv *supervision) {
	if j.cfg.Checkpoint.Interval <= 0 {
		return
	}
	for _, t := range a.sourceList() {
		if !sv.atEnd[t.name] {
			return
		}
	}
	if len(sv.atEnd) == 0 {
		return
	}
	if _, err := j.coord.Trigger(checkpoint.KindCheckpoint); err != nil {
		j.logf("final checkpoint: %v", err)
	}
}

// rollbackCounter is an operator that can say what an individual failover
// costs: restarted alone from checkpoint `from`, its input not replayed,
// the new instance has lost what the failed one did after that checkpoint.
// rollback is called on the failed instance, whose keyed state (keyed) is
// still as it was when it failed; lost are the records lost for sure, and
// later, when not nil, is handed to the new instance's adoptRollback, for
// losses that only show later (a join side whose partner arrives after the
// restart and finds nothing).
type rollbackCounter interface {
	rollback(from int64, keyed keyedReader) (lost int64, later any)
}

// rollbackAdopter is the new instance's side of rollbackCounter: report is
// called with every loss found later.
type rollbackAdopter interface {
	adoptRollback(later any, report func(n int64, what string))
}

// keyedReader is the part of a keyed backend rollback reads.
type keyedReader interface {
	SetCurrentKey(key string)
}

// takeOver makes t, a new instance, continue where old (the failed instance
// of the same subtask) stopped, for individual failover: the same input
// channels, at the element old failed on, the same outputs, the same
// wake-up gate; old's state is gone, replaced by the checkpoint's.
func (j *Job) takeOver(t, old *task, restore *checkpoint.Completed) {
	t.gate = old.gate
	t.mb = newMailbox(old.gate)
	t.inputs = old.inputs
	t.outputs = old.outputs
	for _, in := range t.inputs {
		in.blocked.Store(false)
	}
	if t.src == nil {
		t.handler = j.newHandler(len(t.inputs))
		for i, in := range t.inputs {
			if in.ended {
				t.handler.OnEndOfInput(i)
			}
		}
	}
	var from int64
	if restore != nil {
		from = restore.ID
	}
	var lost int64
	var later any
	if rc, ok := old.oper.(rollbackCounter); ok {
		lost, later = rc.rollback(from, old.keyed)
	}
	report := func(n int64, what string) { j.reportLost(t.name, n, from, what) }
	if ad, ok := t.oper.(rollbackAdopter); ok && later != nil {
		ad.adoptRollback(later, report)
	}
	what := "its state went back to that checkpoint and its input is not replayed"
	if t.src != nil {
		what = "it reads again from that checkpoint's offsets: what it had sent since is sent twice"
	}
	j.obs.Emit(view.RolledBack{Task: t.name, Checkpoint: from, Lost: lost, What: what})
	if lost > 0 {
		report(lost, "written since the checkpoint in transactions that are now aborted")
	}
}

// reportLost counts records an individual failover lost.
// Losses found one record at a time (a join side whose partner arrives)
// are told at most every lossEventEvery per subtask: the first at once, the
// ones after it summed up.
func (j *Job) reportLost(task string, n, from int64, what string) {
	var total int64
	j.restarts.mu.Lock()
	j.restarts.v.LostRecords += n
	total = j.restarts.v.LostRecords
	if j.restarts.lostFrom == nil {
		j.restarts.lostFrom = map[int64]int64{}
	}
	j.restarts.lostFrom[from] += n
	j.restarts.mu.Unlock()
	l := &j.losses
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending = map[string]*pendingLoss{}
	}
	p := l.pending[task]
	now := j.wall.Now()
	if p == nil || now.Sub(p.last) >= lossEventEvery {
		if p != nil && p.n > 0 {
			j.emitLoss(task, p)
		}
		j.obs.Emit(view.RecordsLost{Task: task, Records: n, Total: total, Checkpoint: from, What: what})
		l.pending[task] = &pendingLoss{last: now, from: from}
		return
	}
	p.n += n
	p.what = what
	p.total = total
	if l.timer == nil {
		l.timer = j.wall.AfterFunc(lossEventEvery, j.flushLosses)
	}
}

const lossEventEvery = 250 * time.Millisecond

// takeBackLosses is called on a restart of the whole job from checkpoint
// id (0: from the beginning): every source reads again from there, so the
// losses of individual failovers that went back to id or to a later
// checkpoint are made good by the replay. It takes them off the count and
// says so (records_replayed), so that lost_by_failover agrees with what
// the verification finds missing.
func (j *Job) takeBackLosses(id int64) {
	j.flushLosses()
	var n, total int64
	j.restarts.mu.Lock()
	for from, lost := range j.restarts.lostFrom {
		if from >= id {
			n += lost
			delete(j.restarts.lostFrom, from)
		}
	}
	j.restarts.v.LostRecords -= n
	total = j.restarts.v.LostRecords
	j.restarts.mu.Unlock()
	if n > 0 {
		from := fmt.Sprintf("checkpoint %d", id)
		if id == 0 {
			from = "the beginning"
		}
		j.obs.Emit(view.RecordsReplayed{Records: n, TotalLost: total, Checkpoint: id,
			What: fmt.Sprintf("the whole job restarts from %s and reads its input again from there, so the records individual failover lost after it are made again", from)})
	}
}

// lossLog holds the losses not told yet.
type lossLog struct {
	mu      sync.Mutex
	pending map[string]*pendingLoss
	timer   clock.Timer
}

type pendingLoss struct {
	last     time.Time // when the last event was emitted
	n, total int64
	from     int64
	what     string
}

func (j *Job) emitLoss(task string, p *pendingLoss) {
	what := p.what
	if p.n > 1 {
		what = fmt.Sprintf("%d more like the last one: %s", p.n, p.what)
	}
	j.obs.Emit(view.RecordsLost{Task: task, Records: p.n, Total: p.total, Checkpoint: p.from, What: what})
	p.n, p.last = 0, j.wall.Now()
}

// flushLosses tells the losses summed up since the last events; the end of
// a run calls it too.
func (j *Job) flushLosses() {
	l := &j.losses
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	for task, p := range l.pending {
		if p.n > 0 {
			j.emitLoss(task, p)
		}
	}
}
