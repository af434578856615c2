package runtime

import (
	"fmt"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/view"
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

// subtasksOf names the subtasks of job's operators of type typ, in job
// spec order.
func subtasksOf(job *spec.Job, typ string) []string {
	var names []string
	for _, op := range job.Operators {
		if op.Type == typ {
			for i := 0; i < op.Parallelism; i++ {
				names = append(names, checkpoint.TaskID{Operator: op.Name, Index: i}.String())
			}
		}
	}
	return names
}

// FailoverInfo is one failover of the run, as the report lists it: which
// subtask failed and which ones the failover strategy restarted.
type FailoverInfo struct {
	At        time.Duration
	Strategy  string
	Failed    string
	Restarted []string
}

// ResetRestarts makes the restart strategy forget every failure so far, as
// the strategy of a newly submitted job starts (Flink keeps no count across
// jobs): a demo that used up its attempts can go on failing and restarting.
// A job that gave up already stays FAILED.
func (j *Job) ResetRestarts() {
	b := j.handler.Backoff()
	before := b.Status().Attempts
	b.Reset()
	j.ledger.restarts.update(func(v *RestartView) { v.Status = b.Status() })
	j.obs.Emit(view.RestartsReset{Strategy: b.Name(), Attempts: before})
}

// emitFailover tells that the failure of failed restarts tasks (the
// failover event, emitted here only).
func (d *driver) emitFailover(failed string, tasks []string) {
	j := d.j
	j.obs.Emit(view.Failover{Strategy: string(j.handler.Failover()), Failed: failed, Tasks: tasks})
}

// emitRestartScheduled tells that tasks restart after delay, the
// attempt-th restart of the run (the restart_scheduled event, emitted here
// only).
func (d *driver) emitRestartScheduled(delay time.Duration, attempt int, tasks []string) {
	j := d.j
	b := j.handler.Backoff()
	j.obs.Emit(view.RestartScheduled{Strategy: b.Name(), DelayMs: delay.Milliseconds(), Attempt: attempt,
		Description: b.Describe(), Failover: string(j.handler.Failover()), Tasks: tasks, MaxAttempts: b.Status().MaxAttempts})
}

// RollbackCounter is an operator that can say what an individual failover
// costs: restarted alone from checkpoint `from`, its input not replayed,
// the new instance has lost what the failed one did after that checkpoint.
// rollback is called on the failed instance, whose keyed state (keyed) is
// still as it was when it failed; lost are the records lost for sure, and
// later, when not nil, is handed to the new instance's adoptRollback, for
// losses that only show later (a join side whose partner arrives after the
// restart and finds nothing).
type RollbackCounter interface {
	Rollback(from int64, keyed KeyedReader) (lost int64, later any)
}

// RollbackAdopter is the new instance's side of RollbackCounter: report is
// called with every loss found later.
type RollbackAdopter interface {
	AdoptRollback(later any, report func(n int64, what string))
}

// KeyedReader is the part of a keyed backend Rollback reads.
type KeyedReader interface {
	SetCurrentKey(key string)
}

// takeOver makes t, a new instance, continue where old (the failed instance
// of the same subtask) stopped, for individual failover: the same input
// channels, at the element old failed on, the same outputs, the same
// wake-up gate; old's state is gone, replaced by the checkpoint's.
func (d *driver) takeOver(t, old *task, restore *checkpoint.Completed) {
	j := d.j
	t.gate = old.gate
	t.mb = newMailbox(old.gate)
	t.inputs = old.inputs
	t.outputs = old.outputs
	for _, in := range t.inputs {
		in.blocked.Store(false)
	}
	if t.source == nil {
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
	if rc, ok := old.oper.(RollbackCounter); ok {
		lost, later = rc.Rollback(from, old.keyed)
	}
	report := func(n int64, what string) { j.ledger.reportLost(t.name, n, from, what) }
	if ad, ok := t.oper.(RollbackAdopter); ok && later != nil {
		ad.AdoptRollback(later, report)
	}
	what := "its state went back to that checkpoint and its input is not replayed"
	if t.source != nil {
		what = "it reads again from that checkpoint's offsets: what it had sent since is sent twice"
	}
	j.obs.Emit(view.RolledBack{Task: t.name, Checkpoint: from, Lost: lost, What: what})
	if lost > 0 {
		report(lost, "written since the checkpoint in transactions that are now aborted")
	}
}
