// Package master holds the job master's decisions as a pure state machine
// (Flink: the scheduler with its ExecutionFailureHandler; etcd's raft keeps
// its protocol free of I/O the same way). Master takes events (a subtask
// failed or finished, a source read all its input, a fault is due, the
// restart delay elapsed, the user cancelled or resubmitted, and the
// answers to its own actions) and returns actions: deploy, cancel these
// subtasks, restore, restart these, deliver or re-arm a fault, trigger the
// final checkpoint, move the job to a status, end the run. It starts no
// goroutine, reads no clock and does no I/O: the goroutine that runs it
// (runtime's job master loop) carries the actions out, in order, and
// feeds their answers back as events.
//
// Its tests are scripts in testdata (go test -rewrite updates them).
package master

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/view"
)

// Config is what the master decides by.
type Config struct {
	// Handler decides whether, when and what restarts after a failure.
	Handler *restart.Handler
	// Sources are the source subtasks.
	Sources []string
	// FinalCheckpoint triggers a checkpoint once every source has read
	// all its input (checkpointing is on).
	FinalCheckpoint bool
	// SavepointOnExit takes a savepoint when the run is cancelled.
	SavepointOnExit bool
	// WaitToResubmit keeps a FAILED job waiting for a Resubmit.
	WaitToResubmit bool
}

type phase int

const (
	idle           phase = iota
	deploying            // Deploy is under way
	running              // every subtask is deployed
	restartingPart       // a region or subtask waits for its restart delay
	restoringPart        // ... picks its checkpoint
	replacing            // ... has its new instances built
	restartingAll        // the whole job waits for its restart delay
	restoringAll         // ... picks its checkpoint
	failed               // FAILED, waiting for a Resubmit
	resubmitting         // a resubmitted job picks its checkpoint
	committing           // every subtask finished; the outputs commit
	ended
)

var phaseNames = [...]string{"idle", "deploying", "running", "restarting-part", "restoring-part",
	"replacing", "restarting-all", "restoring-all", "failed", "resubmitting", "committing", "ended"}

// Master is the job master's state. Only the goroutine that runs the job
// master calls it.
type Master struct {
	cfg   Config
	all   []string
	ph    phase
	epoch int64
	// current is the epoch each subtask's current instance was deployed
	// at; an event of any other instance is stale.
	current  map[string]int64
	finished map[string]bool
	atEnd    map[string]bool
	deferred []TaskFailed // failures that came while another was handled
	queued   []Fault      // faults waiting for their subtask's deployment
	scope    []string     // the subtasks a partial restart replaces
	failed   string       // the subtask whose failure is handled ("" the job)
	first    *Fault       // the fault whose failure ended the attempt
	restarts int
	reason   string // what RUNNING says next
	newest   int64  // the newest checkpoint seen complete
}

// New returns a master that has not started.
func New(cfg Config) *Master {
	return &Master{cfg: cfg, all: cfg.Handler.AllTasks(), current: map[string]int64{},
		finished: map[string]bool{}, atEnd: map[string]bool{}}
}

// Phase names where the master stands, for tests and logs.
func (m *Master) Phase() string { return phaseNames[m.ph] }

// Epoch is the epoch of the latest deployment or partial restart.
func (m *Master) Epoch() int64 { return m.epoch }

// Ended reports whether the run has ended (an End was returned).
func (m *Master) Ended() bool { return m.ph == ended }

// Failed reports whether the job is FAILED and waits for a Resubmit.
func (m *Master) Failed() bool { return m.ph == failed }

// Step takes one event, at now on the job's clock, and returns what to do.
func (m *Master) Step(ev Event, now time.Time) []Action {
	if m.ph == ended {
		return nil
	}
	s := &step{m: m, now: now}
	switch e := ev.(type) {
	case Start:
		if m.ph == idle {
			m.reason = e.Reason
			s.deploy()
		}
	case Deployed:
		s.deployed()
	case DeployFailed:
		s.deployFailed(e.Err)
	case TaskFailed:
		s.taskFailed(e)
	case TaskFinished:
		s.taskFinished(e)
	case SourceAtEnd:
		s.sourceAtEnd(e)
	case JobFailed:
		if m.ph == running && e.Epoch == m.epoch {
			s.handle(TaskFailed{Err: e.Err})
		}
	case FaultDue:
		s.faultDue(e.Fault)
	case CheckpointCompleted:
		m.newest = max(m.newest, e.ID)
	case DelayElapsed:
		s.delayElapsed()
	case Restored:
		s.restored()
	case RestoreFailed:
		s.cannotGoOn(e.Err)
	case Replaced:
		s.replaced()
	case ReplaceFailed:
		s.cannotGoOn(e.Err)
	case Committed:
		s.committed(e.Err)
	case Canceled:
		s.canceled(e.Crashed, e.Savepoint)
	case Resubmit:
		if m.ph == failed {
			s.do(PickRestore{Newest: m.newest})
			m.ph = resubmitting
		}
	}
	return s.out
}

// step is one Step's work: the master and the actions decided so far.
type step struct {
	m   *Master
	now time.Time
	out []Action
}

func (s *step) do(a ...Action) { s.out = append(s.out, a...) }

func (s *step) status(st view.JobState, reason string) { s.do(SetStatus{Status: st, Reason: reason}) }

func (s *step) end(st view.JobState, err error) {
	s.do(End{Status: st, Err: err})
	s.m.ph = ended
}

// deploy deploys every subtask at a new epoch.
func (s *step) deploy() {
	m := s.m
	m.epoch++
	m.current = map[string]int64{}
	for _, t := range m.all {
		m.current[t] = m.epoch
	}
	m.finished, m.atEnd = map[string]bool{}, map[string]bool{}
	m.ph = deploying
	s.do(Deploy{Epoch: m.epoch})
}

// deployed tells RUNNING once checkpoints can be triggered, then delivers
// the faults that waited for the deployment.
func (s *step) deployed() {
	m := s.m
	if m.ph != deploying {
		return
	}
	m.first = nil
	s.do(StartCheckpoints{Epoch: m.epoch})
	s.status(view.JobRunning, m.reason)
	for _, f := range m.queued {
		s.do(Deliver{Fault: f})
	}
	m.queued = nil
	m.ph = running
}

func (s *step) deployFailed(err error) {
	if s.m.ph != deploying {
		return
	}
	s.status(view.JobFailed, err.Error())
	s.end(view.JobFailed, err)
}

// stale reports whether an event comes from an instance that is no longer
// current (a replaced or cancelled one).
func (m *Master) stale(task string, instance int64) bool {
	return instance == 0 || m.current[task] != instance
}

// taskFailed handles a failure now, or after the restart under way. A
// stale instance's failure is past: the fault it failed with fires again
// in its successor.
func (s *step) taskFailed(e TaskFailed) {
	m := s.m
	if m.stale(e.Task, e.Instance) {
		if e.Fault != nil && !sameFault(e.Fault, m.first) {
			s.rearm(*e.Fault)
		}
		return
	}
	if m.ph == running {
		s.handle(e)
		return
	}
	m.deferred = append(m.deferred, e)
}

// rearm makes a fault that was not acted on fire again: a timed one is
// due again, for the subtask's next instance.
func (s *step) rearm(f Fault) {
	s.do(Rearm{Fault: f})
	if f.Timed {
		s.faultDue(f)
	}
}

func sameFault(a, b *Fault) bool { return a != nil && b != nil && a.ID == b.ID }

func (s *step) taskFinished(e TaskFinished) {
	m := s.m
	if m.stale(e.Task, e.Instance) {
		return
	}
	m.finished[e.Task] = true
	s.do(TaskDone{Task: e.Task, Epoch: m.epoch})
	if m.ph == running && len(m.finished) == len(m.all) {
		s.do(StopCheckpoints{Err: errors.New("job finished")})
		s.cancelAll(nil)
		s.do(FinalCommit{})
		m.ph = committing
	}
}

func (s *step) sourceAtEnd(e SourceAtEnd) {
	m := s.m
	if m.stale(e.Task, e.Instance) {
		return
	}
	m.atEnd[e.Task] = true
	if m.ph == running {
		s.maybeFinalCheckpoint()
	}
}

// maybeFinalCheckpoint triggers the final checkpoint once every source has
// read all its input, rather than waiting for the next interval.
func (s *step) maybeFinalCheckpoint() {
	m := s.m
	if !m.cfg.FinalCheckpoint || len(m.cfg.Sources) == 0 {
		return
	}
	for _, t := range m.cfg.Sources {
		if !m.atEnd[t] {
			return
		}
	}
	s.do(TriggerCheckpoint{})
}

// faultDue delivers a fault whose subtask runs; one whose subtask is being
// restarted (or the whole job) waits for the deployment.
func (s *step) faultDue(f Fault) {
	m := s.m
	switch m.ph {
	case running:
		s.do(Deliver{Fault: f})
	case restartingPart, restoringPart, replacing:
		if slices.Contains(m.scope, f.Task) {
			m.queued = append(m.queued, f)
		} else {
			s.do(Deliver{Fault: f})
		}
	case deploying, restartingAll, restoringAll, failed, resubmitting:
		m.queued = append(m.queued, f)
	}
}

// cancelAll cancels the attempt. first is the fault whose failure ended
// it; the failures set aside were not acted on, so their faults fire again.
func (s *step) cancelAll(first *Fault) {
	m := s.m
	s.do(CancelAttempt{})
	for _, f := range m.deferred {
		if f.Fault != nil && !sameFault(f.Fault, first) {
			s.do(Rearm{Fault: *f.Fault})
			if f.Fault.Timed {
				m.queued = append(m.queued, *f.Fault) // for the next deployment
			}
		}
	}
	m.deferred = nil
	m.current = map[string]int64{}
	m.first = first
}

// cannotGoOn ends the run with err: nothing can be restored or built.
func (s *step) cannotGoOn(err error) {
	m := s.m
	switch m.ph {
	case restoringAll:
		s.status(view.JobFailed, err.Error())
		s.end(view.JobFailed, err)
	case resubmitting:
		s.end(view.JobFailed, err) // FAILED already
	case restoringPart, replacing:
		s.do(StopCheckpoints{Err: err})
		s.cancelAll(nil)
		s.status(view.JobFailed, err.Error())
		s.end(view.JobFailed, err)
	}
}

func (s *step) committed(err error) {
	if s.m.ph != committing {
		return
	}
	if err != nil {
		s.status(view.JobFailed, err.Error())
		s.end(view.JobFailed, err)
		return
	}
	s.status(view.JobFinished, "every task finished")
	s.end(view.JobFinished, nil)
}

// canceled ends the run at the user's word: a running attempt, or one
// restarting part of itself, is stopped (with a savepoint first when
// asked, at the start or in the stop); a job restarting as a whole has
// nothing running.
func (s *step) canceled(crashed, savepoint bool) {
	m := s.m
	switch m.ph {
	case running, restartingPart, restoringPart, replacing:
		if (m.cfg.SavepointOnExit || savepoint) && !crashed {
			s.do(StopWithSavepoint{})
		}
		s.do(StopCheckpoints{Err: errors.New("job canceled")})
		s.cancelAll(nil)
		why := "canceled by the user"
		if crashed {
			why = "the crash fault: the run ends as the process's death would end it"
		}
		s.status(view.JobCanceled, why)
		s.end(view.JobCanceled, nil)
	case idle, deploying, restartingAll, restoringAll:
		s.status(view.JobCanceled, "canceled while restarting")
		s.end(view.JobCanceled, nil)
	case failed, resubmitting:
		s.end(view.JobFailed, nil)
	}
}

// failedForGood leaves the job FAILED: the run ends, or waits for a
// Resubmit.
func (s *step) failedForGood() {
	if s.m.cfg.WaitToResubmit {
		s.m.ph = failed
		return
	}
	s.end(view.JobFailed, nil)
}

func restartedWhy(failover restart.FailoverStrategy, failed string) string {
	return fmt.Sprintf("%s failover after the failure of %s", failover, failed)
}
