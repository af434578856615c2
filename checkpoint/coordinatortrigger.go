package checkpoint

import (
	"slices"
	"time"
)

// Trigger triggers a checkpoint or savepoint now, bypassing Interval,
// MinPause and MaxConcurrent (Flink: triggerCheckpoint / triggerSavepoint
// from the REST API). It returns the new id, or ErrNotRunning.
func (c *Coordinator) Trigger(kind Kind) (int64, error) {
	c.mu.Lock()
	if !c.running {
		c.mu.Unlock()
		return 0, ErrNotRunning
	}
	id := c.triggerLocked(kind)
	c.mu.Unlock()
	c.flush()
	return id, nil
}

// triggerLocked creates a pending checkpoint, arms its timeout and asks the
// gateway to inject the barrier (Flink: startTriggeringCheckpoint).
func (c *Coordinator) triggerLocked(kind Kind) int64 {
	id := c.nextID
	c.nextID++
	now, wall := c.clk.Now(), c.wall.Now()
	p := &pending{
		id:          id,
		kind:        kind,
		mode:        c.mode,
		attempt:     c.attempt,
		triggerTime: wall,
		triggerAt:   now,
		stoppedAt:   stoppedFor(c.clk),
		acks:        map[TaskID]SubtaskAck{},
		waiting:     map[TaskID]struct{}{},
	}
	for _, t := range c.tasks {
		if c.finished[t] {
			p.finished = append(p.finished, t)
		} else {
			p.waiting[t] = struct{}{}
		}
	}
	p.rec = &record{stats: CheckpointStats{ID: id, Kind: kind, Status: StatusPending, TriggerTime: wall}, p: p}
	c.history = append(c.history, p.rec)
	if len(c.history) > historySize {
		c.history = slices.Delete(c.history, 0, len(c.history)-historySize)
	}
	c.pending[id] = p
	p.timer = c.clk.AfterFunc(c.cfg.Timeout, func() { c.expire(p) })

	attempt := c.attempt
	c.sendLocked(eventEffect{Event{Type: EventTriggered, ID: id, Kind: kind, At: wall}})
	c.sendLocked(triggerEffect{attempt: attempt, id: id, kind: kind, mode: p.mode, at: now})
	if len(p.waiting) == 0 {
		c.completeLocked(p) // every subtask has finished
	}
	return id
}

// schedulePeriodicLocked (re)starts the periodic trigger: the first tick
// after delay, then one every Interval (Flink: scheduleTriggerWithDelay).
func (c *Coordinator) schedulePeriodicLocked(delay time.Duration) {
	c.cancelPeriodicLocked()
	gen := c.periodicGen
	c.nextTick = c.clk.Now().Add(delay)
	c.periodic = c.clk.AfterFunc(delay, func() { c.tick(gen) })
}

func (c *Coordinator) cancelPeriodicLocked() {
	c.periodicGen++
	if c.periodic != nil {
		c.periodic.Stop()
		c.periodic = nil
	}
}

// tick is the periodic trigger firing (Flink: ScheduledTrigger).
func (c *Coordinator) tick(gen int64) {
	c.mu.Lock()
	if c.running && gen == c.periodicGen {
		now := c.clk.Now()
		next := c.nextTick.Add(c.cfg.Interval)
		if next.Before(now) {
			next = now.Add(c.cfg.Interval) // fell behind: do not fire a burst
		}
		c.nextTick = next
		c.periodic = c.clk.AfterFunc(next.Sub(now), func() { c.tick(gen) })
		c.due = true
		c.tryPeriodicLocked()
	}
	c.mu.Unlock()
	c.flush()
}

// tryPeriodicLocked triggers a due periodic checkpoint if MaxConcurrent and
// MinPause allow it (Flink: CheckpointRequestDecider). While too many are
// pending the request waits; when the min pause has not passed since the last
// completion, the request is dropped and the periodic trigger restarts at the
// end of the pause.
func (c *Coordinator) tryPeriodicLocked() {
	if !c.due || !c.running {
		return
	}
	if len(c.pending) >= c.cfg.MaxConcurrent {
		return
	}
	c.due = false
	if c.cfg.MinPause > 0 && c.hasLastEnd {
		if wait := c.lastEnd.Add(c.cfg.MinPause).Sub(c.clk.Now()); wait > 0 {
			c.schedulePeriodicLocked(wait)
			return
		}
	}
	c.triggerLocked(KindCheckpoint)
}
