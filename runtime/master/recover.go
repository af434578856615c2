package master

// Recovery: a failure handed to the failure handler, and the restart it
// decides on, of the whole job or of part of it while the rest runs on.

import (
	"fmt"
	"slices"

	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/view"
)

// handle hands one failure of the running job to the failure handler and
// carries out its decision: give up, restart the whole job, or restart its
// part while the rest runs on.
func (s *step) handle(e TaskFailed) {
	m := s.m
	h := m.cfg.Handler
	s.do(Failure{Task: e.Task, Err: e.Err, Fault: e.Fault})
	d := h.Handle(e.Task, e.Err, s.now)
	restarted := d.Tasks
	if d.GiveUp == "" {
		m.restarts++
		if restarted == nil {
			restarted = slices.Clone(m.all)
		}
	}
	s.do(Decided{Failed: e.Task, Err: e.Err, Decision: d, Restarted: restarted, Restarts: m.restarts})
	m.failed = e.Task
	switch {
	case d.GiveUp != "":
		s.status(view.JobFailing, e.Err.Error())
		s.cancelAll(e.Fault)
		s.status(view.JobFailed, d.GiveUp)
		s.failedForGood()
	case d.Tasks == nil:
		s.status(view.JobRestarting, e.Err.Error())
		s.cancelAll(e.Fault)
		s.do(Failover{Failed: e.Task, Tasks: restarted},
			ScheduleRestart{Delay: d.Delay, Attempt: m.restarts, Tasks: restarted})
		m.ph = restartingAll
	default:
		m.scope = d.Tasks
		s.do(Failover{Failed: e.Task, Tasks: d.Tasks},
			CancelTasks{Tasks: d.Tasks, Why: restartedWhy(h.Failover(), e.Task)})
		for _, t := range d.Tasks {
			delete(m.current, t)
		}
		s.do(ScheduleRestart{Delay: d.Delay, Attempt: m.restarts, Tasks: d.Tasks})
		m.ph = restartingPart
	}
}

// delayElapsed goes on with the restart once its delay is over: it picks
// the checkpoint to restore, which may be one that completed during the
// delay. A strategy that throws where the restart happens fails the job
// there.
func (s *step) delayElapsed() {
	m := s.m
	switch m.ph {
	case restartingAll:
		b := m.cfg.Handler.Backoff()
		if r, ok := b.(restart.Restarter); ok {
			if err := r.Restart(); err != nil {
				why := fmt.Sprintf("restart strategy %s: the restart after the failure of %s was attempted and threw: %v",
					b.Name(), restart.OrJob(m.failed), err)
				s.do(GiveUp{Reason: why})
				s.status(view.JobFailed, why)
				s.failedForGood()
				return
			}
		}
		s.do(PickRestore{Newest: m.newest})
		m.ph = restoringAll
	case restartingPart:
		s.do(PickRestore{Newest: m.newest})
		m.ph = restoringPart
	}
}

// restored deploys the job again from the checkpoint picked, or builds
// the new instances of a partial restart.
func (s *step) restored() {
	m := s.m
	switch m.ph {
	case restoringAll:
		m.reason = "restarted after failure of " + restart.OrJob(m.failed)
		s.do(RestartScheduledNoMore{}, MarkRestored{Why: m.reason})
		s.deploy()
	case resubmitting:
		m.cfg.Handler.Backoff().Reset()
		m.reason = "resubmitted from the newest checkpoint"
		s.do(ResetRestarts{}, MarkRestored{Why: "resubmitted"})
		s.deploy()
	case restoringPart:
		m.epoch++
		s.do(ReplaceTasks{Tasks: m.scope, Epoch: m.epoch})
		m.ph = replacing
	}
}

// replaced finishes a partial restart: checkpoints start again at the new
// epoch before the restore is told (whoever asks for one on seeing it gets
// one), the new instances start, the faults that waited for them are
// delivered, and the failures set aside meanwhile are handled.
func (s *step) replaced() {
	m := s.m
	if m.ph != replacing {
		return
	}
	for _, t := range m.scope {
		delete(m.finished, t)
		delete(m.atEnd, t)
		m.current[t] = m.epoch
	}
	var finished []string
	for _, t := range m.all {
		if m.finished[t] {
			finished = append(finished, t)
		}
	}
	s.do(StartCheckpoints{Epoch: m.epoch, Finished: finished},
		MarkRestored{Why: restartedWhy(m.cfg.Handler.Failover(), m.failed), Tasks: m.scope},
		RestartScheduledNoMore{}, StartTasks{Tasks: m.scope})
	var again []Fault
	for _, f := range m.queued {
		if slices.Contains(m.scope, f.Task) {
			s.do(Deliver{Fault: f})
		} else {
			again = append(again, f)
		}
	}
	m.queued, m.scope = again, nil
	m.ph = running
	s.maybeFinalCheckpoint()
	s.handleDeferred()
}

// handleDeferred handles the failures set aside during a partial restart,
// one after the other, until one of them starts another restart.
func (s *step) handleDeferred() {
	m := s.m
	for m.ph == running && len(m.deferred) > 0 {
		e := m.deferred[0]
		m.deferred = m.deferred[1:]
		if m.stale(e.Task, e.Instance) {
			if e.Fault != nil {
				s.rearm(*e.Fault)
			}
			continue
		}
		s.handle(e)
	}
}
