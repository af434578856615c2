package runtime

// The job master's side of the checkpoint coordinator (checkpoint.Gateway):
// triggers, completion and abort notices to the current attempt, and the
// coordinator's events as lifecycle events.

import (
	"context"
	"time"

	"faultline/checkpoint"
	"faultline/runtime/spec"
	"faultline/runtime/view"
)

func (j *Job) onCheckpointEvent(e checkpoint.Event) {
	switch e.Type {
	case checkpoint.EventTriggered:
		j.obs.Emit(view.CheckpointTriggered{ID: e.ID, Kind: e.Kind.String()})
	case checkpoint.EventCompleted:
		j.endStep()
		if j.endsAtLeastOnce(e.Completed) {
			// From here on a failure restores an exactly-once checkpoint.
			j.lenient(j.cfg.AtLeastOnce.Close)
		}
		if e.Kind != checkpoint.KindSavepoint {
			j.newestCheckpoint.Store(e.ID)
			j.checkpointFaults()
		}
		full, inc := e.Completed.Size()
		done := view.CheckpointCompleted{
			ID: e.ID, Kind: e.Kind.String(), DurationMs: e.Completed.Duration().Milliseconds(),
			FrozenMs: e.Completed.Frozen.Milliseconds(), SizeBytes: full, IncrementalBytes: inc,
		}
		for _, id := range e.Completed.SortedTasks() {
			a := e.Completed.Tasks[id]
			done.AfterBarrier += a.AfterBarrier
			done.Unaligned = done.Unaligned || a.Unaligned
			done.PersistedInFlightBytes += a.PersistedInFlight
			done.ProcessedInFlightBytes += a.ProcessedInFlight
			if a.TimedOut {
				done.TimedOut = append(done.TimedOut, id.String())
			}
		}
		if done.Unaligned {
			j.usedUnaligned.Store(true)
		}
		j.obs.Emit(done)
		if e.Kind == checkpoint.KindSavepoint {
			sp := view.SavepointCompleted{ID: e.ID, SizeBytes: full}
			if d, ok := j.cfg.Store.(checkpoint.Located); ok {
				sp.Path = d.Dir()
			}
			j.obs.Emit(sp)
			select {
			case j.savepoints <- e.ID:
			default:
			}
		}
	case checkpoint.EventFailed:
		f := view.CheckpointFailed{ID: e.ID, Reason: e.Reason.String()}
		if e.Err != nil {
			f.Error = e.Err.Error()
		}
		if e.Task.Operator != "" {
			f.Task = e.Task.String()
		}
		j.obs.Emit(f)
	}
}

// checkpointFaults counts a checkpoint completed in this run for the
// after-checkpoints faults (from their After on), and sends those now due
// to the job master.
func (j *Job) checkpointFaults() {
	since := j.obs.Since()
	for _, f := range j.ckptFaults {
		if since < f.After || f.queued.Load() {
			continue
		}
		if f.completed.Add(1) >= f.AfterCheckpoints && f.queued.CompareAndSwap(false, true) {
			select {
			case j.faultCh <- f:
			default:
				// Not expected: Inject leaves room for every configured
				// fault. It is tried again at the next checkpoint.
				f.queued.Store(false)
				j.logf("%s: not queued, too many faults waiting; again at the next checkpoint", f.Spec)
			}
		}
	}
}

// current returns the running attempt when its epoch is n.
func (j *Job) current(n int64) *attempt {
	j.cur.Lock()
	defer j.cur.Unlock()
	if j.cur.a != nil && j.cur.a.epoch.Load() == n {
		return j.cur.a
	}
	return nil
}

// gateway is the job as its checkpoint coordinator reaches it
// (checkpoint.Gateway), kept off Job's exported surface: nothing else
// triggers barriers or fails the job this way.
type gateway struct{ j *Job }

var _ checkpoint.Gateway = gateway{}

// TriggerSources implements checkpoint.Gateway: the barriers carry the
// mode the coordinator recorded for the checkpoint, decided once, when it
// was triggered.
func (g gateway) TriggerSources(n, id int64, kind checkpoint.Kind, name string, at time.Time) {
	if a := g.j.current(n); a != nil {
		mode, unaligned := modeNamed(name)
		// A savepoint is always aligned (as in Flink).
		unaligned = unaligned && kind != checkpoint.KindSavepoint
		for _, t := range a.sourceList() {
			t.mb.post(mail{kind: mailTrigger, id: id, triggerNs: at.UnixNano(), savepoint: kind == checkpoint.KindSavepoint, mode: mode, unaligned: unaligned})
		}
	}
}

// NotifyComplete implements checkpoint.Gateway.
func (g gateway) NotifyComplete(n, id int64) {
	if a := g.j.current(n); a != nil {
		for _, t := range a.taskList() {
			t.mb.post(mail{kind: mailComplete, id: id})
		}
	}
}

// NotifyAborted implements checkpoint.Gateway.
func (g gateway) NotifyAborted(n, id int64) {
	if a := g.j.current(n); a != nil {
		for _, t := range a.taskList() {
			t.mb.post(mail{kind: mailAborted, id: id})
		}
	}
}

// FailJob implements checkpoint.Gateway.
func (g gateway) FailJob(n int64, err error) {
	select {
	case g.j.coordFail <- attemptErr{attempt: n, err: err}:
	default:
	}
}

// CommittedCheckpoint is the newest checkpoint whose output every sink
// subtask has committed, with the source offsets it covers (by the topic
// each source reads). ok is false before the first.
func (j *Job) CommittedCheckpoint() (id int64, offsets checkpoint.Offsets, inFlight []string, ok bool) {
	j.commits.mu.Lock()
	id = -1
	for _, op := range j.spec.Operators {
		if op.Type != spec.TypeSink {
			continue
		}
		for i := 0; i < op.Parallelism; i++ {
			done := j.commits.done[checkpoint.TaskID{Operator: op.Name, Index: i}.String()] // 0: none yet
			if id < 0 || done < id {
				id = done
			}
		}
	}
	j.commits.mu.Unlock()
	if id <= 0 {
		return 0, nil, nil, false
	}
	j.lastCommitted.Lock()
	defer j.lastCommitted.Unlock()
	if c := j.lastCommitted.c; c != nil && c.ID == id {
		return id, c.SourceOffsets(), c.InFlightIDs(), true
	}
	all, err := j.cfg.Store.All(context.Background()) // the UI's call: no context to take
	if err != nil {
		return 0, nil, nil, false
	}
	for _, c := range all {
		if c.ID == id {
			j.lastCommitted.c = c
			return id, c.SourceOffsets(), c.InFlightIDs(), true
		}
	}
	return 0, nil, nil, false
}

// completed returns completed checkpoint id.
func (j *Job) completed(id int64) (*checkpoint.Completed, bool) {
	j.lastCommitted.Lock()
	if c := j.lastCommitted.c; c != nil && c.ID == id {
		j.lastCommitted.Unlock()
		return c, true
	}
	j.lastCommitted.Unlock()
	all, err := j.cfg.Store.All(context.Background()) // the sink's OperatorContext.Completed: none either
	if err != nil {
		return nil, false
	}
	for _, c := range all {
		if c.ID == id {
			return c, true
		}
	}
	return nil, false
}
