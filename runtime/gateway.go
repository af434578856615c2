package runtime

// The job master's side of the checkpoint coordinator (checkpoint.Gateway):
// triggers, completion and abort notices to the current attempt, and the
// coordinator's events as lifecycle events.

import (
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/view"
)

// onCheckpointEvent tells the coordinator's events as lifecycle events.
func (g gateway) onCheckpointEvent(e checkpoint.Event) {
	j := g.j
	switch e.Type {
	case checkpoint.EventTriggered:
		j.obs.Emit(view.CheckpointTriggered{ID: e.ID, Kind: e.Kind.String(), TriggerTime: e.At})
	case checkpoint.EventCompleted:
		j.endStep()
		if j.endsAtLeastOnce(e.Completed) {
			// From here on a failure restores an exactly-once checkpoint.
			j.lenient(j.cfg.AtLeastOnce.Close)
		}
		var crash *faultEntry
		if e.Kind != checkpoint.KindSavepoint {
			j.newestCheckpoint.Store(e.ID)
			crash = j.checkpointFaults()
		}
		full, inc := e.Completed.Size()
		done := view.CheckpointCompleted{
			ID: e.ID, Kind: e.Kind.String(), DurationMs: e.Completed.Duration().Milliseconds(), DurationUs: e.Completed.Duration().Microseconds(),
			FrozenMs: e.Completed.Frozen.Milliseconds(), SizeBytes: full, IncrementalBytes: inc,
		}
		for _, id := range e.Completed.SortedTasks() {
			a := e.Completed.Tasks[id]
			done.AfterBarrier += a.AfterBarrier
			done.Unaligned = done.Unaligned || a.Unaligned
			done.PersistedInFlightBytes += a.PersistedInFlight
			done.MaxAlignmentUs = max(done.MaxAlignmentUs, a.Alignment.Microseconds())
			done.ProcessedInFlightBytes += a.ProcessedInFlight
			if a.TimedOut {
				done.TimedOut = append(done.TimedOut, id.String())
			}
		}
		if done.Unaligned {
			j.usedUnaligned.Store(true)
		}
		j.obs.Emit(done)
		if crash != nil {
			j.crashAtCompletion(crash, e.ID)
		}
		if e.Kind == checkpoint.KindSavepoint {
			sp := view.SavepointCompleted{ID: e.ID, SizeBytes: full}
			if d, ok := j.cfg.Store.(checkpoint.Located); ok {
				sp.Path = d.Dir()
			}
			j.obs.Emit(sp)
			select {
			case j.inbox.savepoints <- e.ID:
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
// to the job master, but for a crash, which it returns: the caller crashes
// the process before any sink hears of the checkpoint.
func (inj *injector) checkpointFaults() (crash *faultEntry) {
	since := inj.events.Since()
	for _, f := range inj.ckptFaults {
		if since < f.After || f.queued.Load() {
			continue
		}
		if f.completed.Add(1) < f.AfterCheckpoints || !f.queued.CompareAndSwap(false, true) {
			continue
		}
		if f.Kind == FaultCrash {
			crash = f
			continue
		}
		select {
		case inj.faultCh <- f:
		default:
			// Not expected: Inject leaves room for every configured
			// fault. It is tried again at the next checkpoint.
			f.queued.Store(false)
			inj.logf("%s: not queued, too many faults waiting; again at the next checkpoint", f.Spec)
		}
	}
	return crash
}

// crashAtCompletion carries out crash fault f as checkpoint id completes,
// before the coordinator tells the subtasks (its next effect,
// completeEffect): the process dies between the checkpoint's completion
// and any commit of it, the moment a broker that dies with the process
// loses the sinks' pre-committed transactions (the next run writes them
// again: txn_rewritten).
func (j *Job) crashAtCompletion(f *faultEntry, id int64) {
	f.fired.Store(true)
	j.crashed.Store(true)
	j.obs.Emit(view.FaultInjected{Fault: string(f.Kind), Spec: f.Spec})
	j.noteFault("", f.Kind)
	j.logf("injected crash after checkpoint %d completed, before its commit: the process dies now", id)
	j.cfg.Crash()
}

// current returns the running attempt when its epoch is n.
func (g gateway) current(n int64) *attempt {
	j := g.j
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
	if a := g.current(n); a != nil {
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
	if a := g.current(n); a != nil {
		for _, t := range a.taskList() {
			t.mb.post(mail{kind: mailComplete, id: id})
		}
	}
}

// NotifyAborted implements checkpoint.Gateway.
func (g gateway) NotifyAborted(n, id int64) {
	if a := g.current(n); a != nil {
		for _, t := range a.taskList() {
			t.mb.post(mail{kind: mailAborted, id: id})
		}
	}
}

// FailJob implements checkpoint.Gateway.
func (g gateway) FailJob(n int64, err error) {
	select {
	case g.j.inbox.coordFail <- attemptErr{attempt: n, err: err}:
	default:
	}
}
