package view

// JobState is the job's life-cycle state, named as Flink names it (Flink:
// JobStatus; the event of a change is JobStatus): the engine's, the UI's and
// the tours' one vocabulary.
type JobState string

// Job states.
const (
	JobCreated    JobState = "CREATED"
	JobRunning    JobState = "RUNNING"
	JobRestarting JobState = "RESTARTING"
	JobFailing    JobState = "FAILING"
	JobFailed     JobState = "FAILED"
	JobFinished   JobState = "FINISHED"
	JobCanceled   JobState = "CANCELED"
)

// JobStates are the job states in their life-cycle order.
var JobStates = []JobState{JobCreated, JobRunning, JobRestarting, JobFailing, JobFailed, JobFinished, JobCanceled}
