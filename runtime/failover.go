package runtime

import (
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
