package checkpoint

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// An effect is something the coordinator decided under its lock and that
// happens without it, in the order decided: a write to the store, a call
// into the Gateway, an event. A checkpoint's metadata is in the store
// before anything tells of its completion (raft's rule: persist, then
// send): the effects that announce it are only decided once its persist
// effect has succeeded.
type effect interface{ isEffect() }

// triggerEffect asks the sources to inject barrier id (Gateway.TriggerSources).
type triggerEffect struct {
	attempt, id int64
	kind        Kind
	mode        string
	at          time.Time
}

// completeEffect tells the subtasks that checkpoint id completed.
type completeEffect struct{ attempt, id int64 }

// abortEffect tells the subtasks that checkpoint id was aborted.
type abortEffect struct{ attempt, id int64 }

// failJobEffect fails the job (Gateway.FailJob).
type failJobEffect struct {
	attempt int64
	err     error
}

// eventEffect hands an event to onEvent.
type eventEffect struct{ e Event }

// persistEffect writes the metadata of p, acknowledged by every subtask it
// waited for, to the store: done, with the last state of p's finished
// subtasks carried over from the latest completed checkpoint.
type persistEffect struct {
	p    *pending
	done *Completed
	// finished are p's finished subtasks (read without the lock).
	finished []TaskID
	// now is the completion time on the coordinator's clock.
	now time.Time
}

func (triggerEffect) isEffect()  {}
func (completeEffect) isEffect() {}
func (abortEffect) isEffect()    {}
func (failJobEffect) isEffect()  {}
func (eventEffect) isEffect()    {}
func (persistEffect) isEffect()  {}

// coordOutbox holds the effects decided under mu; flush carries them out
// without mu, in order, one goroutine at a time.
type coordOutbox struct {
	outbox   []effect
	flushing bool
	idle     *sync.Cond // signalled when a flush ends
}

// sendLocked queues e.
func (c *Coordinator) sendLocked(e effect) { c.outbox = append(c.outbox, e) }

// flush carries out the effects in the outbox, without the lock held. If
// another goroutine is already flushing, it carries them out instead, so
// that they keep the order in which they were decided.
func (c *Coordinator) flush() {
	for {
		c.mu.Lock()
		if c.flushing || len(c.outbox) == 0 {
			c.mu.Unlock()
			return
		}
		batch := c.outbox
		c.outbox = nil
		c.flushing = true
		c.mu.Unlock()
		func() {
			defer func() {
				c.mu.Lock()
				c.flushing = false
				c.idle.Broadcast()
				c.mu.Unlock()
			}()
			for _, e := range batch {
				c.carryOut(e)
			}
		}()
	}
}

// carryOut makes the one call effect e stands for.
func (c *Coordinator) carryOut(e effect) {
	switch e := e.(type) {
	case triggerEffect:
		c.gw.TriggerSources(e.attempt, e.id, e.kind, e.mode, e.at)
	case completeEffect:
		c.gw.NotifyComplete(e.attempt, e.id)
	case abortEffect:
		c.gw.NotifyAborted(e.attempt, e.id)
	case failJobEffect:
		c.gw.FailJob(e.attempt, e.err)
	case eventEffect:
		if c.onEvent != nil {
			c.onEvent(e.e)
		}
	case persistEffect:
		err := persist(c.store, e)
		c.mu.Lock()
		c.persistedLocked(e, err)
		c.mu.Unlock()
	default:
		panic(fmt.Sprintf("checkpoint: unknown effect %T", e))
	}
}

// persist writes e's checkpoint to store, without the coordinator's
// lock: Stats, acknowledgements and triggers go on while the store syncs
// to disk. Persist effects run one at a time in the order their
// checkpoints completed, so the latest completed checkpoint read here is
// the one persisted before.
func persist(store Store, e persistEffect) error {
	// No caller's context: whichever acknowledgement or timer completed
	// the checkpoint, its metadata must reach the store.
	ctx := context.Background()
	if len(e.finished) > 0 {
		latest, err := store.Latest(ctx)
		if err != nil {
			return fmt.Errorf("read the latest completed checkpoint for the state of finished subtasks: %w", err)
		}
		for _, t := range e.finished {
			if latest == nil {
				break
			}
			if a, ok := latest.Tasks[t]; ok {
				e.done.Tasks[t] = carryFinished(a)
			}
		}
	}
	if err := store.Add(ctx, e.done); err != nil {
		return fmt.Errorf("write metadata: %w", err)
	}
	return nil
}
