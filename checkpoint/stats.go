package checkpoint

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Status is the state of a checkpoint in Stats (Flink: CheckpointStatsStatus).
type Status int

const (
	// StatusPending: triggered, waiting for acknowledgements.
	StatusPending Status = iota
	// StatusCompleted: acknowledged by every subtask and stored.
	StatusCompleted
	// StatusFailed: aborted; CheckpointStats.Failure says why.
	StatusFailed
)

func (s Status) String() string {
	switch s {
	case StatusPending:
		return "pending"
	case StatusCompleted:
		return "completed"
	case StatusFailed:
		return "failed"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// InFlightStats are a checkpoint's in-flight data: PersistedInFlight and
// ProcessedInFlight add up the subtasks' (see SubtaskAck); Unaligned is set
// when a subtask took its snapshot unaligned, TimedOut lists, sorted,
// those that switched to unaligned by the aligned-checkpoint timeout.
type InFlightStats struct {
	PersistedInFlight, ProcessedInFlight int64
	Unaligned                            bool
	TimedOut                             []TaskID
}

// CheckpointStats describes one checkpoint for monitoring (Flink:
// AbstractCheckpointStats: PendingCheckpointStats, CompletedCheckpointStats,
// FailedCheckpointStats).
type CheckpointStats struct {
	ID     int64
	Kind   Kind
	Status Status
	// EndTime is zero while pending. Both are wall-clock times
	// (Config.Wall).
	TriggerTime, EndTime time.Time
	// Duration is the end-to-end time, trigger to end (so far, while
	// pending), on the coordinator's clock: the job's, which leaves out the
	// time the world stood frozen. Frozen is that time (the wall clock saw
	// Duration plus Frozen, and more in slow motion).
	Duration, Frozen time.Duration
	// Acked of Total expected subtasks (a subtask that finished without
	// acknowledging is no longer expected).
	Acked, Total int
	// AckedTasks is a copy of the acknowledgements received.
	AckedTasks map[TaskID]SubtaskAck
	// WaitingFor lists, sorted, the subtasks that have not acknowledged: while
	// pending, and for a failed checkpoint the ones it was still waiting for.
	WaitingFor                  []TaskID
	FullBytes, IncrementalBytes int64
	MaxAlignment                time.Duration
	// InFlightStats are its unaligned subtasks and in-flight data.
	InFlightStats
	// Failure is the reason and error text when failed.
	Failure string
	// Restored is set when the job restored from this checkpoint.
	Restored bool
	// Damaged says why a restore could not use this checkpoint, when one
	// found it damaged (it had completed).
	Damaged string
}

// Stats is a snapshot of the coordinator's checkpoint statistics (Flink:
// CheckpointStatsSnapshot).
type Stats struct {
	Completed, Failed, InProgress int
	// FailedBy counts the failed checkpoints by reason (FailureReason's
	// names: expired, declined, subsumed, storage failure, job failover).
	FailedBy            map[string]int
	LastCompleted       int64
	ConsecutiveFailures int
	// Restored lists the checkpoints the job restored from, in order;
	// RestoredSavepoint says the last of them is a savepoint (Flink:
	// RestoredCheckpointStats' properties).
	Restored          []int64
	RestoredSavepoint bool
	// History holds the newest checkpoints first, at most the last 64.
	History []CheckpointStats
}

// MarkRestored records that the job restored its state from checkpoint id,
// of kind k (Flink: RestoredCheckpointStats).
func (c *Coordinator) MarkRestored(id int64, k Kind) {
	c.mu.Lock()
	c.restored = append(c.restored, id)
	c.restoredSavepoint = k == KindSavepoint
	c.mu.Unlock()
}

// MarkDamaged records that a restore found checkpoint id damaged, and why:
// Stats shows it so from then on, though it had completed.
func (c *Coordinator) MarkDamaged(id int64, why string) {
	c.mu.Lock()
	if c.damaged == nil {
		c.damaged = map[int64]string{}
	}
	c.damaged[id] = why
	c.mu.Unlock()
}

// Stats returns a copy of the checkpoint statistics.
func (c *Coordinator) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	restored := map[int64]bool{}
	for _, id := range c.restored {
		restored[id] = true
	}
	s := Stats{
		Completed:           c.completedCount,
		Failed:              c.failedCount,
		FailedBy:            maps.Clone(c.failedBy),
		InProgress:          len(c.pending),
		LastCompleted:       c.lastCompletedID,
		ConsecutiveFailures: c.consecutive,
		Restored:            slices.Clone(c.restored),
		RestoredSavepoint:   c.restoredSavepoint,
		History:             make([]CheckpointStats, 0, len(c.history)),
	}
	for i := len(c.history) - 1; i >= 0; i-- {
		r := c.history[i]
		cs := r.stats
		if r.p != nil {
			fillStats(&cs, r.p)
			c.timesLocked(&cs, r.p)
		}
		cs.AckedTasks = maps.Clone(cs.AckedTasks)
		cs.WaitingFor = slices.Clone(cs.WaitingFor)
		cs.Restored = restored[cs.ID]
		cs.Damaged = c.damaged[cs.ID]
		s.History = append(s.History, cs)
	}
	return s
}

// fillStats copies the figures of p into cs.
func fillStats(cs *CheckpointStats, p *pending) {
	cs.Acked = len(p.acks)
	cs.Total = len(p.acks) + len(p.waiting)
	cs.AckedTasks = maps.Clone(p.acks)
	cs.WaitingFor = sortedTasks(p.waiting)
	cs.FullBytes, cs.IncrementalBytes, cs.MaxAlignment = 0, 0, 0
	cs.PersistedInFlight, cs.ProcessedInFlight, cs.Unaligned, cs.TimedOut = 0, 0, false, nil
	timedOut := map[TaskID]struct{}{}
	for id, a := range p.acks {
		cs.FullBytes += a.Bytes
		cs.IncrementalBytes += a.IncrementalBytes
		cs.MaxAlignment = max(cs.MaxAlignment, a.Alignment)
		cs.PersistedInFlight += a.PersistedInFlight
		cs.ProcessedInFlight += a.ProcessedInFlight
		cs.Unaligned = cs.Unaligned || a.Unaligned
		if a.TimedOut {
			timedOut[id] = struct{}{}
		}
	}
	if len(timedOut) > 0 {
		cs.TimedOut = sortedTasks(timedOut)
	}
}

func sortedTasks(set map[TaskID]struct{}) []TaskID {
	out := slices.Collect(maps.Keys(set))
	slices.SortFunc(out, func(a, b TaskID) int {
		return cmp.Or(strings.Compare(a.Operator, b.Operator), cmp.Compare(a.Index, b.Index))
	})
	return out
}
