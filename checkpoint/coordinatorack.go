package checkpoint

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Acknowledge records that task finished its part of checkpoint id (Flink:
// receiveAcknowledgeMessage). Acks for another attempt, for an id that is not
// pending, from a subtask the checkpoint does not wait for, or duplicates are
// ignored. The last expected ack completes the checkpoint.
func (c *Coordinator) Acknowledge(attempt, id int64, task TaskID, ack SubtaskAck) {
	c.mu.Lock()
	if p := c.pendingForLocked(attempt, id); p != nil {
		if _, ok := p.waiting[task]; ok {
			if ack.AckTime.IsZero() {
				ack.AckTime = c.wall.Now()
			}
			ack.EndToEnd = c.clk.Now().Sub(p.triggerAt)
			delete(p.waiting, task)
			p.acks[task] = ack
			if len(p.waiting) == 0 {
				c.completeLocked(p)
			}
		}
	}
	c.tryPeriodicLocked()
	c.mu.Unlock()
	c.flush()
}

// Decline fails checkpoint id because task could not take its snapshot
// (Flink: receiveDeclineMessage). reason 0 means ReasonDeclined. Declines for
// another attempt or an id that is not pending are ignored.
func (c *Coordinator) Decline(attempt, id int64, task TaskID, reason FailureReason, err error) {
	if reason == 0 {
		reason = ReasonDeclined
	}
	if err == nil {
		err = errors.New("no reason given")
	}
	c.mu.Lock()
	if p := c.pendingForLocked(attempt, id); p != nil && !p.completing {
		_, waiting := p.waiting[task]
		_, acked := p.acks[task]
		if waiting || acked {
			c.failLocked(p, reason, fmt.Errorf("checkpoint %d declined by %s: %w", id, task, err), task)
		}
	}
	c.tryPeriodicLocked()
	c.mu.Unlock()
	c.flush()
}

// TaskFinished tells the coordinator that task reached the end of its input
// (Flink: a FINISHED execution, FLIP-147). Pending checkpoints stop waiting
// for it, which may complete them, and later checkpoints do not expect it;
// each carries the task's state from the latest completed checkpoint, marked
// Finished.
func (c *Coordinator) TaskFinished(attempt int64, task TaskID) {
	c.mu.Lock()
	if c.running && attempt == c.attempt && !c.finished[task] {
		c.finished[task] = true
		for _, p := range c.pendingInOrderLocked() {
			if c.pending[p.id] != p {
				continue // subsumed by a completion earlier in this loop
			}
			if _, ok := p.waiting[task]; !ok {
				continue
			}
			delete(p.waiting, task)
			p.finished = append(p.finished, task)
			if len(p.waiting) == 0 {
				c.completeLocked(p)
			}
		}
	}
	c.tryPeriodicLocked()
	c.mu.Unlock()
	c.flush()
}

// pendingForLocked returns the pending checkpoint id of the running attempt,
// or nil.
func (c *Coordinator) pendingForLocked(attempt, id int64) *pending {
	if !c.running || attempt != c.attempt {
		return nil
	}
	return c.pending[id]
}

// expire fails p when its timeout passes (Flink: CheckpointCanceller).
func (c *Coordinator) expire(p *pending) {
	c.mu.Lock()
	if c.pending[p.id] == p && !p.completing {
		err := fmt.Errorf("checkpoint %d not acknowledged within the timeout of %s (%d of %d subtasks acknowledged, waiting for %s)",
			p.id, c.cfg.Timeout, len(p.acks), len(p.acks)+len(p.waiting), taskList(sortedTasks(p.waiting)))
		c.failLocked(p, ReasonExpired, err, TaskID{})
	}
	c.tryPeriodicLocked()
	c.mu.Unlock()
	c.flush()
}

func taskList(ts []TaskID) string {
	const show = 4
	names := make([]string, 0, show)
	for i, t := range ts {
		if i == show {
			return strings.Join(names, ", ") + fmt.Sprintf(" and %d more", len(ts)-show)
		}
		names = append(names, t.String())
	}
	return strings.Join(names, ", ")
}

// removeLocked takes p out of the pending checkpoints and stops its timeout.
func (c *Coordinator) removeLocked(p *pending) {
	delete(c.pending, p.id)
	p.timer.Stop()
	p.rec.p = nil
	fillStats(&p.rec.stats, p)
}

// completeLocked starts the completion of p, acknowledged by every
// subtask it waited for (Flink: completePendingCheckpoint): p stops waiting
// for anything (its timeout, a decline, the attempt's end) and its metadata
// goes to the store in a persist effect, which persistedLocked finishes. A
// checkpoint older than one already completing is subsumed instead, so
// that the store is written in the order of ids.
func (c *Coordinator) completeLocked(p *pending) {
	for _, newer := range c.pending {
		if newer.completing && newer.id > p.id {
			c.failLocked(p, ReasonSubsumed, subsumedError(p.id, newer.id), TaskID{})
			return
		}
	}
	p.completing = true
	p.timer.Stop()
	now, wall := c.clk.Now(), c.wall.Now()
	done := &Completed{
		ID:             p.id,
		Kind:           p.kind,
		Job:            c.cfg.Job,
		Mode:           p.mode,
		TriggerTime:    p.triggerTime,
		CompletionTime: wall,
		EndToEnd:       now.Sub(p.triggerAt),
		Frozen:         stoppedFor(c.clk) - p.stoppedAt,
		Tasks:          maps.Clone(p.acks),
	}
	c.sendLocked(persistEffect{p: p, done: done, finished: slices.Clone(p.finished), now: now})
}

// persistedLocked finishes the completion of a checkpoint whose persist
// effect ended with err: a failed write fails the checkpoint; a written
// one is completed, subsumes the older ones still pending, and only now is
// it announced and the subtasks told.
func (c *Coordinator) persistedLocked(e persistEffect, err error) {
	defer c.tryPeriodicLocked()
	p, done := e.p, e.done
	if err != nil {
		c.failLocked(p, ReasonStorage, fmt.Errorf("checkpoint %d: %w", p.id, err), TaskID{})
		return
	}
	c.removeLocked(p)
	full, incremental := done.Size()
	p.rec.stats.Status = StatusCompleted
	p.rec.stats.EndTime = done.CompletionTime
	p.rec.stats.Duration, p.rec.stats.Frozen = done.EndToEnd, done.Frozen
	p.rec.stats.FullBytes, p.rec.stats.IncrementalBytes = full, incremental
	p.rec.stats.WaitingFor = nil

	c.completedCount++
	c.lastCompletedID = p.id
	c.lastEnd, c.hasLastEnd = e.now, true
	if p.id > c.lastSucceeded { // Flink: handleCheckpointSuccess
		c.lastSucceeded = p.id
		c.consecutive = 0
	}
	for _, older := range c.pendingInOrderLocked() {
		if older.id < p.id && !older.completing {
			c.failLocked(older, ReasonSubsumed, subsumedError(older.id, p.id), TaskID{})
		}
	}
	c.sendLocked(eventEffect{Event{Type: EventCompleted, ID: p.id, Kind: p.kind, At: done.CompletionTime, Completed: done}})
	c.sendLocked(completeEffect{attempt: p.attempt, id: p.id})
}

// subsumedError is why checkpoint older was aborted for newer.
func subsumedError(older, newer int64) error {
	return fmt.Errorf("checkpoint %d was subsumed by checkpoint %d, which completed first", older, newer)
}

// carryFinished is the state of a finished subtask taken over from an earlier
// checkpoint (Flink: FullyFinishedOperatorState): this checkpoint wrote
// nothing for it.
func carryFinished(a SubtaskAck) SubtaskAck {
	a.Finished = true
	a.IncrementalBytes = 0
	a.Unaligned, a.TimedOut = false, false
	a.PersistedInFlight, a.PersistedRecords, a.ProcessedInFlight = 0, 0, 0
	a.InFlightIDs = nil
	if a.Offsets != nil {
		offsets := make(Offsets, len(a.Offsets))
		for topic, parts := range a.Offsets {
			offsets[topic] = maps.Clone(parts)
		}
		a.Offsets = offsets
	}
	return a
}

// failLocked aborts p, tells the tasks and applies the failure counter
// (Flink: abortPendingCheckpoint + CheckpointFailureManager).
func (c *Coordinator) failLocked(p *pending, reason FailureReason, err error, task TaskID) {
	now := c.wall.Now()
	c.removeLocked(p)
	p.rec.stats.Status = StatusFailed
	p.rec.stats.EndTime = now
	c.timesLocked(&p.rec.stats, p)
	p.rec.stats.Failure = fmt.Sprintf("%s: %v", reason, err)
	c.failedCount++
	if c.failedBy == nil {
		c.failedBy = map[string]int{}
	}
	c.failedBy[reason.String()]++

	c.sendLocked(eventEffect{Event{Type: EventFailed, ID: p.id, Kind: p.kind, At: now, Reason: reason, Err: err, Task: task}})
	attempt := p.attempt
	c.sendLocked(abortEffect{attempt: attempt, id: p.id})

	if !c.countsLocked(p, reason) {
		return
	}
	c.consecutive++
	if c.consecutive <= c.cfg.TolerableFailures {
		return
	}
	failErr := fmt.Errorf("%w: %d consecutive checkpoints failed, %d tolerated (execution.checkpointing.tolerable-failed-checkpoints); last: %s: %v",
		ErrThresholdExceeded, c.consecutive, c.cfg.TolerableFailures, reason, err)
	c.consecutive = 0 // Flink clears the counter once it fails the job
	if c.failJobCalled && c.failedAttempt == attempt {
		return // this attempt is already being failed
	}
	c.failJobCalled, c.failedAttempt = true, attempt
	c.sendLocked(failJobEffect{attempt: attempt, err: failErr})
}

// countsLocked reports whether the failure of p goes against the tolerable
// failure counter, following Flink's CheckpointFailureManager: only expiry,
// decline and storage failures count; a checkpoint older than the last
// completed one does not count; for a savepoint only a subtask's decline
// counts, since a failover would not help a failed manual action.
func (c *Coordinator) countsLocked(p *pending, reason FailureReason) bool {
	if !reason.counts() || p.id <= c.lastSucceeded {
		return false
	}
	return p.kind != KindSavepoint || reason == ReasonDeclined
}
