package master

// The events the job master takes: what its subtasks, the checkpoint
// coordinator, the timers, the user and the results of its own actions
// tell it.

// Event is something that happened to the job.
type Event interface{ event() }

// Fault names an injected fault: ID is the driver's, Task the subtask it
// is for ("" for a fault of the whole job: crash, broker down, ...).
// Timed is set for a fault delivered to its subtask when due (after a
// time or after checkpoints); the others fire by the subtask's own count
// of records.
type Fault struct {
	ID    int
	Task  string
	Timed bool
}

// Start starts the run; Reason is what RUNNING will say.
type Start struct{ Reason string }

// Deployed says that Deploy built and started every subtask.
type Deployed struct{}

// DeployFailed says that Deploy could not build the job.
type DeployFailed struct{ Err error }

// TaskFailed says that instance Instance (the epoch it was deployed at) of
// subtask Task failed with Err; Fault is the injected fault that made it
// fail, if one did.
type TaskFailed struct {
	Task     string
	Instance int64
	Err      error
	Fault    *Fault
}

// TaskFinished says that an instance of Task ended with all its input.
type TaskFinished struct {
	Task     string
	Instance int64
}

// SourceAtEnd says that an instance of source Task read all its input.
type SourceAtEnd struct {
	Task     string
	Instance int64
}

// JobFailed is the checkpoint coordinator failing the job at Epoch (too
// many checkpoints failed).
type JobFailed struct {
	Epoch int64
	Err   error
}

// FaultDue is an injected fault whose time has come, or one delivered to
// an instance that was cancelled before it fired.
type FaultDue struct{ Fault Fault }

// CheckpointCompleted is the newest checkpoint of the job that completed
// (the driver tells it before a restart picks its checkpoint).
type CheckpointCompleted struct{ ID int64 }

// DelayElapsed is the end of the restart delay ScheduleRestart began.
type DelayElapsed struct{}

// Restored is PickRestore's answer: the checkpoint to restore (0: none,
// the job starts from the beginning).
type Restored struct{ Checkpoint int64 }

// RestoreFailed is PickRestore's answer when nothing can be restored.
type RestoreFailed struct{ Err error }

// Replaced says that ReplaceTasks built and wired the new instances.
type Replaced struct{}

// ReplaceFailed says that ReplaceTasks could not build them.
type ReplaceFailed struct{ Err error }

// Committed is FinalCommit's answer.
type Committed struct{ Err error }

// Canceled is the end of the run's context: the user stopped the run, or
// the crash fault ended it (Crashed). Savepoint: the user stopped it with
// a savepoint (Flink: stop-with-savepoint), as SavepointOnExit does.
type Canceled struct{ Crashed, Savepoint bool }

// Resubmit is the user asking a FAILED job to start again from its newest
// checkpoint, as a new job.
type Resubmit struct{}

func (Start) event()               {}
func (Deployed) event()            {}
func (DeployFailed) event()        {}
func (TaskFailed) event()          {}
func (TaskFinished) event()        {}
func (SourceAtEnd) event()         {}
func (JobFailed) event()           {}
func (FaultDue) event()            {}
func (CheckpointCompleted) event() {}
func (DelayElapsed) event()        {}
func (Restored) event()            {}
func (RestoreFailed) event()       {}
func (Replaced) event()            {}
func (ReplaceFailed) event()       {}
func (Committed) event()           {}
func (Canceled) event()            {}
func (Resubmit) event()            {}
