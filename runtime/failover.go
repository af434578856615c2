package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"faultline/checkpoint"
	"faultline/internal/clock"
	"faultline/restart"
	"faultline/runtime/spec"
)

// FailoverStrategy decides which subtasks restart when one fails (Flink:
// FailoverStrategy, jobmanager.execution.failover-strategy).
type FailoverStrategy string

// The failover strategies.
const (
	// FailoverFull restarts every subtask (Flink: RestartAllFailoverStrategy).
	FailoverFull FailoverStrategy = "full"
	// FailoverRegion restarts the failed subtask's pipelined region: every
	// subtask joined to it by an edge, transitively (Flink:
	// RestartPipelinedRegionFailoverStrategy). The other regions keep running.
	FailoverRegion FailoverStrategy = "region"
	// FailoverIndividual restarts only the failed subtask, from its state in
	// the latest completed checkpoint, without replaying its input (Flink's
	// old RestartIndividualStrategy): what it did since that checkpoint is
	// lost, and the run says how many records that cost.
	FailoverIndividual FailoverStrategy = "individual"
	// FailoverNone does not recover: the first failure fails the job.
	FailoverNone FailoverStrategy = "none"
)

// FailoverStrategies lists them in the order the help shows them.
var FailoverStrategies = []FailoverStrategy{FailoverFull, FailoverRegion, FailoverIndividual, FailoverNone}

// ParseFailoverStrategy reads a --failover-strategy value.
func ParseFailoverStrategy(s string) (FailoverStrategy, error) {
	for _, f := range FailoverStrategies {
		if string(f) == strings.ToLower(strings.TrimSpace(s)) {
			return f, nil
		}
	}
	names := make([]string, len(FailoverStrategies))
	for i, f := range FailoverStrategies {
		names[i] = string(f)
	}
	return "", fmt.Errorf("--failover-strategy %q: want one of %s", s, strings.Join(names, ", "))
}

// ErrUnrecoverable marks a failure that no restart can cure (Flink:
// SuppressRestartsException): a job graph whose records do not fit its
// operators, a record type a sink cannot write. The job fails at once,
// whatever the restart strategy.
var ErrUnrecoverable = errors.New("unrecoverable")

// unrecoverable wraps err as ErrUnrecoverable.
func unrecoverable(err error) error { return fmt.Errorf("%w: %w", ErrUnrecoverable, err) }

// pipelinedRegions splits the job's subtasks into pipelined regions: the
// sets joined by edges (a forward edge joins subtask i to subtask i; every
// other edge joins every pair). In a streaming job every edge is pipelined,
// so a region is a connected component. Regions and their subtasks are in
// job spec order.
func pipelinedRegions(job *spec.Job) [][]string {
	var names []string
	index := map[string]int{}
	for _, op := range job.Operators {
		for i := 0; i < op.Parallelism; i++ {
			index[checkpoint.TaskID{Operator: op.Name, Index: i}.String()] = len(names)
			names = append(names, checkpoint.TaskID{Operator: op.Name, Index: i}.String())
		}
	}
	parent := make([]int, len(names))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(x int) int {
		if parent[x] != x {
			parent[x] = find(parent[x])
		}
		return parent[x]
	}
	union := func(a, b string) { parent[find(index[a])] = find(index[b]) }
	for _, op := range job.Operators {
		for _, in := range op.Inputs {
			up := job.Op(in.From)
			for u := 0; u < up.Parallelism; u++ {
				un := checkpoint.TaskID{Operator: up.Name, Index: u}.String()
				for d := 0; d < op.Parallelism; d++ {
					if in.Edge == spec.Forward && d != u {
						continue
					}
					union(un, checkpoint.TaskID{Operator: op.Name, Index: d}.String())
				}
			}
		}
	}
	var regions [][]string
	byRoot := map[int]int{}
	for i, n := range names {
		r := find(i)
		k, ok := byRoot[r]
		if !ok {
			k = len(regions)
			byRoot[r] = k
			regions = append(regions, nil)
		}
		regions[k] = append(regions[k], n)
	}
	return regions
}

// decision is what the failure handler decided about one failure (Flink:
// FailureHandlingResult).
type decision struct {
	// scope are the subtasks to restart, in job spec order; nil restarts
	// the whole job.
	scope []string
	delay time.Duration
	// giveUp says why the job fails for good ("" when it restarts).
	giveUp string
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
	Failover      FailoverStrategy
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

// decide handles one failure (Flink: ExecutionFailureHandler): it records
// it, stops checkpointing, and chooses between giving up and a restart of
// the whole job or of the failover strategy's part of it.
func (j *Job) decide(out outcome, res *Result) decision {
	fi := FailureInfo{At: j.obs.Since(), Task: out.task, Error: out.err.Error()}
	fields := map[string]any{"task": out.task, "error": out.err.Error(), "attempt": j.epoch.Load()}
	var bad *ErrBadRecord
	switch {
	case out.fault != nil:
		fi.Fault = string(out.fault.Kind)
	case errors.As(out.err, &bad) && bytes.Equal(bad.Input, PoisonRecord):
		fi.Fault = string(FaultPoison)
	}
	if fi.Fault != "" {
		fields["fault"] = fi.Fault
	}
	if out.task == "" {
		delete(fields, "task")
	}
	res.Failures = append(res.Failures, fi)
	j.obs.Emit("task_failed", fields)
	j.coord.Stop(checkpoint.ReasonJobFailover, fmt.Errorf("job failover: %w", out.err))

	var d decision
	switch {
	case errors.Is(out.err, ErrUnrecoverable):
		d.giveUp = fmt.Sprintf("%s failed with an unrecoverable error; no restart can help: %v", orJob(out.task), out.err)
	case j.failover == FailoverNone:
		d.giveUp = fmt.Sprintf("failover strategy none: the job does not recover from the failure of %s", orJob(out.task))
	default:
		j.cfg.Restart.NotifyFailure(out.err, j.clk.Now())
		if !j.cfg.Restart.CanRestart() {
			d.giveUp = j.cfg.Restart.Status().GaveUpReason
			break
		}
		d.delay = j.cfg.Restart.Backoff()
		d.scope = j.scopeOf(out.task)
		res.Restarts++
	}
	restarted := d.scope
	if d.giveUp == "" && restarted == nil {
		restarted = j.allTasks()
	}
	if d.giveUp == "" {
		res.Failovers = append(res.Failovers, FailoverInfo{
			At: fi.At, Strategy: string(j.failover), Failed: out.task, Restarted: restarted,
		})
	}
	j.restarts.update(func(v *RestartView) {
		v.Status = j.cfg.Restart.Status()
		v.LastFailed, v.LastError = out.task, out.err.Error()
		v.GaveUp = d.giveUp
		v.Restarts = res.Restarts
		if d.giveUp == "" {
			v.LastRestarted = restarted
			v.NextRestartAt = j.clk.Now().Add(d.delay)
		}
	})
	return d
}

// allTasks names every subtask of the job, in spec order.
func (j *Job) allTasks() []string {
	var all []string
	for _, r := range j.regions {
		all = append(all, r...)
	}
	return all
}

// scopeOf is what the failover strategy restarts when task fails; nil for
// the whole job (a job-wide failure, full failover, or a region that is
// the whole job).
func (j *Job) scopeOf(task string) []string {
	if task == "" {
		return nil
	}
	switch j.failover {
	case FailoverIndividual:
		return []string{task}
	case FailoverRegion:
		if len(j.regions) == 1 {
			return nil
		}
		for _, r := range j.regions {
			if slices.Contains(r, task) {
				return slices.Clone(r)
			}
		}
	}
	return nil
}

// supervision is the job master's record of the running attempt.
type supervision struct {
	finished map[string]bool // subtasks that finished
	atEnd    map[string]bool // sources that read all their input
	deferred []taskEvent     // failures that happened while another was handled
	queued   []*faultEntry   // timed faults waiting for a subtask being restarted
}

// restartPart restarts the subtasks of d.scope from the newest valid
// checkpoint while the rest of the attempt keeps running (region and
// individual failover; Flink: the scheduler's restartTasks for a failover
// region). The coordinator was stopped by decide; it starts again, at a new
// epoch, once the new instances run. It returns false when ctx ended during
// the restart delay.
func (j *Job) restartPart(ctx context.Context, a *attempt, d decision, res *Result, sv *supervision, failed string) (bool, error) {
	olds := make([]*task, len(d.scope))
	inScope := map[string]bool{}
	for i, name := range d.scope {
		olds[i] = a.lookup(name)
		inScope[name] = true
	}
	j.obs.Emit("failover", map[string]any{"strategy": string(j.failover), "failed": failed, "tasks": d.scope})
	for _, t := range olds {
		if s := t.m.Status(); s == TaskRunning || s == TaskDeploying {
			t.setStatus(TaskCanceling, string(j.failover)+" failover after the failure of "+failed)
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
	j.obs.Emit("restart_scheduled", map[string]any{
		"strategy": j.cfg.Restart.Name(), "delay_ms": d.delay.Milliseconds(), "attempt": res.Restarts,
		"description": j.cfg.Restart.Describe(), "failover": string(j.failover), "tasks": d.scope,
	})
	if !j.waitRestart(ctx, a, d.delay, sv, inScope) {
		return false, nil
	}
	restore, states, err := j.pickRestore(context.Background(), true)
	if err != nil {
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
	if j.failover == FailoverIndividual {
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
	why := fmt.Sprintf("%s failover after the failure of %s", j.failover, failed)
	j.markRestored(res, restore, why, d.scope...)
	j.restarts.update(func(v *RestartView) { v.NextRestartAt = time.Time{} })
	for _, t := range news {
		j.start(t)
	}
	var again []*faultEntry
	for _, f := range sv.queued {
		if inScope[f.Task] {
			j.deliver(a, f)
		} else {
			again = append(again, f)
		}
	}
	sv.queued = again
	epoch := a.epoch.Load()
	j.coord.Start(epoch, a.taskIDs())
	for _, t := range a.taskList() {
		if sv.finished[t.name] {
			j.coord.TaskFinished(epoch, t.id)
		}
	}
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
			j.deliver(a, f)
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
	j.obs.Emit("rolled_back", map[string]any{"task": t.name, "checkpoint": from, "lost": lost, "what": what})
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
	now := j.clk.Now()
	if p == nil || now.Sub(p.last) >= lossEventEvery {
		if p != nil && p.n > 0 {
			j.emitLoss(task, p)
		}
		j.obs.Emit("records_lost", map[string]any{"task": task, "records": n, "total": total, "checkpoint": from, "what": what})
		l.pending[task] = &pendingLoss{last: now, from: from}
		return
	}
	p.n += n
	p.what = what
	p.total = total
	if l.timer == nil {
		l.timer = j.clk.AfterFunc(lossEventEvery, j.flushLosses)
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
		j.obs.Emit("records_replayed", map[string]any{"records": n, "total_lost": total, "checkpoint": id,
			"what": fmt.Sprintf("the whole job restarts from %s and reads its input again from there, so the records individual failover lost after it are made again", from)})
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
	j.obs.Emit("records_lost", map[string]any{"task": task, "records": p.n, "total": p.total, "checkpoint": p.from, "what": what})
	p.n, p.last = 0, j.clk.Now()
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
