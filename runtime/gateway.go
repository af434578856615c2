package runtime

// The job master's side of the checkpoint coordinator (checkpoint.Gateway):
// triggers, completion and abort notices to the current attempt, and the
// coordinator's events as lifecycle events.

import (
	"time"

	"faultline/checkpoint"
	"faultline/runtime/barrier"
	"faultline/runtime/view"
)

func (j *Job) onCheckpointEvent(e checkpoint.Event) {
	switch e.Type {
	case checkpoint.EventTriggered:
		j.obs.Emit(view.CheckpointTriggered{ID: e.ID, Kind: e.Kind.String()})
	case checkpoint.EventCompleted:
		j.endStep()
		if e.Completed.Mode == barrier.ExactlyOnce.String() {
			// From here on a failure restores an aligned checkpoint.
			j.lenient(j.cfg.AtLeastOnce.Close)
		}
		if e.Kind != checkpoint.KindSavepoint {
			j.checkpointFaults()
		}
		full, inc := e.Completed.Size()
		var after int64
		for _, a := range e.Completed.Tasks {
			after += a.AfterBarrier
		}
		j.obs.Emit(view.CheckpointCompleted{
			ID: e.ID, Kind: e.Kind.String(), DurationMs: e.Completed.Duration().Milliseconds(),
			SizeBytes: full, IncrementalBytes: inc, AfterBarrier: after,
		})
		if e.Kind == checkpoint.KindSavepoint {
			sp := view.SavepointCompleted{ID: e.ID, SizeBytes: full}
			if d, ok := j.cfg.Store.(interface{ Dir() string }); ok {
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
				go func() { j.faultCh <- f }()
			}
		}
	}
}

// current returns the running attempt when its epoch is n.
func (j *Job) current(n int64) *attempt {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.cur != nil && j.cur.epoch.Load() == n {
		return j.cur
	}
	return nil
}

// TriggerSources implements checkpoint.Gateway.
func (j *Job) TriggerSources(n, id int64, kind checkpoint.Kind, at time.Time) {
	if a := j.current(n); a != nil {
		for _, t := range a.sourceList() {
			t.mb.post(mail{kind: mailTrigger, id: id, triggerNs: at.UnixNano(), savepoint: kind == checkpoint.KindSavepoint, mode: j.Mode()})
		}
	}
}

// NotifyComplete implements checkpoint.Gateway.
func (j *Job) NotifyComplete(n, id int64) {
	if a := j.current(n); a != nil {
		for _, t := range a.taskList() {
			t.mb.post(mail{kind: mailComplete, id: id})
		}
	}
}

// NotifyAborted implements checkpoint.Gateway.
func (j *Job) NotifyAborted(n, id int64) {
	if a := j.current(n); a != nil {
		for _, t := range a.taskList() {
			t.mb.post(mail{kind: mailAborted, id: id})
		}
	}
}

// FailJob implements checkpoint.Gateway.
func (j *Job) FailJob(n int64, err error) {
	select {
	case j.coordFail <- attemptErr{attempt: n, err: err}:
	default:
	}
}
