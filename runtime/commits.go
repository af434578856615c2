package runtime

// What the sinks committed: each sink subtask's newest committed
// checkpoint, and the newest checkpoint all of them committed.

import (
	"context"
	"sync"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/spec"
)

// commitLog is what the sinks have committed: by subtask, the newest
// checkpoint whose transactions it committed (progress), and the newest
// checkpoint every sink subtask committed, as last read from the store.
type commitLog struct {
	progress commitProgress
	last     struct {
		sync.Mutex
		c *checkpoint.Completed
	}
	sinks []string // the sink subtasks
	ckpts checkpoint.Store
}

// init names the sink subtasks of job, whose checkpoints are in store.
func (l *commitLog) init(job *spec.Job, store checkpoint.Store) {
	l.ckpts, l.sinks = store, subtasksOf(job, spec.TypeSink)
}

// CommittedCheckpoint is the newest checkpoint whose output every sink
// subtask has committed, with the source offsets it covers (by the topic
// each source reads). ok is false before the first.
func (l *commitLog) CommittedCheckpoint() (id int64, offsets checkpoint.Offsets, inFlight []string, ok bool) {
	l.progress.mu.Lock()
	id = -1
	for _, name := range l.sinks {
		done := l.progress.done[name] // 0: none yet
		if id < 0 || done < id {
			id = done
		}
	}
	l.progress.mu.Unlock()
	if id <= 0 {
		return 0, nil, nil, false
	}
	l.last.Lock()
	defer l.last.Unlock()
	if c := l.last.c; c != nil && c.ID == id {
		return id, c.SourceOffsets(), c.InFlightIDs(), true
	}
	all, err := l.ckpts.All(context.Background()) // the UI's call: no context to take
	if err != nil {
		return 0, nil, nil, false
	}
	for _, c := range all {
		if c.ID == id {
			l.last.c = c
			return id, c.SourceOffsets(), c.InFlightIDs(), true
		}
	}
	return 0, nil, nil, false
}

// completed returns completed checkpoint id.
func (l *commitLog) completed(id int64) (*checkpoint.Completed, bool) {
	l.last.Lock()
	if c := l.last.c; c != nil && c.ID == id {
		l.last.Unlock()
		return c, true
	}
	l.last.Unlock()
	all, err := l.ckpts.All(context.Background()) // the sink's OperatorContext.Completed: none either
	if err != nil {
		return nil, false
	}
	for _, c := range all {
		if c.ID == id {
			return c, true
		}
	}
	return nil, false
}
