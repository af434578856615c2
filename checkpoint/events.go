package checkpoint

import (
	"fmt"
	"time"
)

// FailureReason says why a checkpoint failed (Flink: CheckpointFailureReason,
// reduced to the cases faultline has).
type FailureReason int

const (
	// ReasonExpired: the checkpoint timed out (Flink: CHECKPOINT_EXPIRED).
	// Counts toward TolerableFailures.
	ReasonExpired FailureReason = iota + 1
	// ReasonDeclined: a subtask declined, its snapshot failed (Flink:
	// CHECKPOINT_DECLINED). Counts.
	ReasonDeclined
	// ReasonSubsumed: a newer checkpoint completed first (Flink:
	// CHECKPOINT_SUBSUMED). Does not count.
	ReasonSubsumed
	// ReasonStorage: writing state or metadata failed (Flink: IO_EXCEPTION).
	// Counts.
	ReasonStorage
	// ReasonJobFailover: the job is restarting, finishing or stopping (Flink:
	// JOB_FAILOVER_REGION, CHECKPOINT_COORDINATOR_SUSPEND). Does not count.
	ReasonJobFailover
)

func (r FailureReason) String() string {
	switch r {
	case ReasonExpired:
		return "expired"
	case ReasonDeclined:
		return "declined"
	case ReasonSubsumed:
		return "subsumed"
	case ReasonStorage:
		return "storage failure"
	case ReasonJobFailover:
		return "job failover"
	}
	return fmt.Sprintf("FailureReason(%d)", int(r))
}

// counts reports whether a failure with this reason goes against the
// tolerable failure counter (Flink: CheckpointFailureManager.checkFailureCounter).
func (r FailureReason) counts() bool {
	return r == ReasonExpired || r == ReasonDeclined || r == ReasonStorage
}

// EventType tells the kinds of Event apart.
type EventType int

const (
	// EventTriggered: a checkpoint was triggered at the sources.
	EventTriggered EventType = iota + 1
	// EventCompleted: every subtask acknowledged and the store has it.
	EventCompleted
	// EventFailed: the checkpoint was aborted; Reason and Err say why.
	EventFailed
)

func (t EventType) String() string {
	switch t {
	case EventTriggered:
		return "triggered"
	case EventCompleted:
		return "completed"
	case EventFailed:
		return "failed"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is one step in a checkpoint's life, for the observer (Flink: what
// CheckpointStatsTracker records and the web UI shows).
type Event struct {
	Type      EventType
	ID        int64
	Kind      Kind
	At        time.Time
	Reason    FailureReason // EventFailed
	Err       error         // EventFailed: what went wrong, readable by a user
	Task      TaskID        // EventFailed by decline: the declining subtask
	Completed *Completed    // EventCompleted
}
