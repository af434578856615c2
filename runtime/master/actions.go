package master

// The actions the job master returns. The goroutine that runs it carries
// them out in order; those marked "→" answer with the event named.

import (
	"time"

	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/view"
)

// Action is something the job master has decided to do.
type Action interface{ action() }

// Deploy builds and starts every subtask at Epoch (→ Deployed or
// DeployFailed), restoring what the last Restored named.
type Deploy struct{ Epoch int64 }

// StartCheckpoints starts the checkpoint coordinator at Epoch; Finished
// are the subtasks that have finished already.
type StartCheckpoints struct {
	Epoch    int64
	Finished []string
}

// StopCheckpoints stops the coordinator and aborts what is pending, for
// Err.
type StopCheckpoints struct{ Err error }

// SetStatus moves the job to Status.
type SetStatus struct {
	Status view.JobState
	Reason string
}

// Failure records a failure of Task ("" for the job) and tells it; the
// coordinator stops (the failover aborts pending checkpoints).
type Failure struct {
	Task  string
	Err   error
	Fault *Fault
}

// Decided is the failure handler's decision about the failure of Failed:
// Restarted are the subtasks that restart (all of them for a whole-job
// restart, none when it gives up), Restarts the run's restarts so far.
type Decided struct {
	Failed    string
	Err       error
	Decision  restart.Decision
	Restarted []string
	Restarts  int
}

// CancelAttempt cancels every subtask and waits for them. What the
// attempt's instances still report arrives as events of stale instances;
// faults delivered to them that did not fire arrive as FaultDue.
type CancelAttempt struct{}

// CancelTasks cancels the current instances of Tasks and waits for them;
// faults delivered to them that did not fire arrive as FaultDue.
type CancelTasks struct {
	Tasks []string
	Why   string
}

// Failover tells that the failure of Failed restarts Tasks.
type Failover struct {
	Failed string
	Tasks  []string
}

// ScheduleRestart tells that Tasks restart after Delay, the run's
// Attempt-th restart, and starts the timer (→ DelayElapsed).
type ScheduleRestart struct {
	Delay   time.Duration
	Attempt int
	Tasks   []string
}

// PickRestore picks the newest valid retained checkpoint (→ Restored or
// RestoreFailed). Newest is the newest the master knows to have completed
// (0: none), one that completed during the restart delay included: the
// one restored unless it is found damaged.
type PickRestore struct{ Newest int64 }

// MarkRestored tells the restore: of the whole job (Tasks nil) or of
// Tasks, because of Why.
type MarkRestored struct {
	Why   string
	Tasks []string
}

// RestartScheduledNoMore clears the time of the next restart.
type RestartScheduledNoMore struct{}

// ReplaceTasks builds new instances of Tasks at Epoch from the restored
// checkpoint and wires them in place of the cancelled ones (→ Replaced or
// ReplaceFailed); they are not started.
type ReplaceTasks struct {
	Tasks []string
	Epoch int64
}

// StartTasks starts the instances ReplaceTasks built.
type StartTasks struct{ Tasks []string }

// TaskDone tells the coordinator that Task finished at Epoch.
type TaskDone struct {
	Task  string
	Epoch int64
}

// Deliver delivers an injected fault to its subtask (or the job).
type Deliver struct{ Fault Fault }

// Rearm makes a fault that failed a stale instance fire again (a timed
// one when it is delivered again).
type Rearm struct{ Fault Fault }

// TriggerCheckpoint triggers the final checkpoint: every source has read
// all its input.
type TriggerCheckpoint struct{}

// StopWithSavepoint takes a savepoint before the job is cancelled.
type StopWithSavepoint struct{}

// FinalCommit commits what the job's outputs hold once every subtask
// finished (→ Committed).
type FinalCommit struct{}

// GiveUp records that the job fails for good: Reason says why.
type GiveUp struct{ Reason string }

// ResetRestarts starts the restart strategy afresh (a resubmitted job).
type ResetRestarts struct{}

// End ends the run with Status, or with Err when the job cannot go on.
type End struct {
	Status view.JobState
	Err    error
}

func (Deploy) action()                 {}
func (StartCheckpoints) action()       {}
func (StopCheckpoints) action()        {}
func (SetStatus) action()              {}
func (Failure) action()                {}
func (Decided) action()                {}
func (CancelAttempt) action()          {}
func (CancelTasks) action()            {}
func (Failover) action()               {}
func (ScheduleRestart) action()        {}
func (PickRestore) action()            {}
func (MarkRestored) action()           {}
func (RestartScheduledNoMore) action() {}
func (ReplaceTasks) action()           {}
func (StartTasks) action()             {}
func (TaskDone) action()               {}
func (Deliver) action()                {}
func (Rearm) action()                  {}
func (TriggerCheckpoint) action()      {}
func (StopWithSavepoint) action()      {}
func (FinalCommit) action()            {}
func (GiveUp) action()                 {}
func (ResetRestarts) action()          {}
func (End) action()                    {}
