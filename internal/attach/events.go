package attach

import (
	"slices"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// The event log of an attached job: the REST API tells states, not
// events, so attach tells what changed between one poll and the next, in
// the events a run emits. An event is stamped with when it happened
// where the API says (a checkpoint's trigger and end, a failure), else
// with when the poll saw it.

// figuresWait is how long the event of a completed checkpoint waits for
// its subtasks' figures.
const figuresWait = 10 * time.Second

// tracker remembers what the events told so far.
type tracker struct {
	started   bool
	status    string
	triggered map[int64]bool
	ended     map[int64]bool
	failures  time.Time // the newest failure told
	restored  int64
}

func newTracker() *tracker {
	return &tracker{triggered: map[int64]bool{}, ended: map[int64]bool{}}
}

// changes are the events between the snapshot told last and s, in the
// order they happened.
func (t *tracker) changes(s view.Snapshot) []view.Stamped {
	var out []view.Stamped
	at := func(wall time.Time, e view.Event) {
		if wall.IsZero() {
			wall = s.Now
		}
		out = append(out, view.Stamped{At: wall.Sub(s.Started), Wall: wall, Event: e})
	}
	if s.Job.Status != t.status {
		since := s.Job.StatusSince
		if since.IsZero() {
			since = s.Now
		}
		at(since, view.JobStatus{Status: s.Job.Status})
		t.status = s.Job.Status
	}
	t.failuresOf(s, at)
	t.checkpointsOf(s, at)
	if r := s.Checkpoints.Restored; len(r) > 0 && r[len(r)-1] != t.restored {
		t.restored = r[len(r)-1]
		at(time.Time{}, view.Restored{Checkpoint: t.restored, Reason: "restart"})
	}
	t.started = true
	slices.SortStableFunc(out, func(a, b view.Stamped) int { return a.Wall.Compare(b.Wall) })
	return out
}

// failuresOf tells the failures newer than the newest told.
func (t *tracker) failuresOf(s view.Snapshot, at func(time.Time, view.Event)) {
	newest := t.failures
	for _, f := range slices.Backward(s.Restart.Failures) { // oldest first
		if !f.At.After(t.failures) {
			continue
		}
		at(f.At, view.TaskFailed{Task: f.Task, Error: f.Error, Attempt: int64(s.Restart.Restarts)})
		newest = f.At
	}
	t.failures = newest
}

// checkpointsOf tells each checkpoint's trigger once and its end once.
func (t *tracker) checkpointsOf(s view.Snapshot, at func(time.Time, view.Event)) {
	for _, c := range slices.Backward(s.Checkpoints.History) { // oldest first
		kind := "checkpoint"
		if c.Savepoint {
			kind = "savepoint"
		}
		if !t.triggered[c.ID] {
			t.triggered[c.ID] = true
			at(c.TriggerTime, view.CheckpointTriggered{ID: c.ID, Kind: kind, TriggerTime: c.TriggerTime})
		}
		if t.ended[c.ID] || c.Status == view.StatusPending {
			continue
		}
		// Its subtasks' figures (the alignments) come with the next poll
		// when this one could not fetch them; not for ever.
		if c.AckedTasks == nil && c.Status == view.StatusCompleted && s.Now.Sub(c.EndTime) < figuresWait {
			continue
		}
		t.ended[c.ID] = true
		switch {
		case c.Status == view.StatusFailed && c.Savepoint:
			id := c.ID
			at(c.EndTime, view.SavepointFailed{ID: &id, Error: c.Failure})
		case c.Status == view.StatusFailed:
			at(c.EndTime, view.CheckpointFailed{ID: c.ID, Reason: c.Failure})
		case c.Savepoint:
			at(c.EndTime, view.SavepointCompleted{ID: c.ID, SizeBytes: c.FullBytes})
		default:
			at(c.EndTime, view.CheckpointCompleted{ID: c.ID, Kind: kind, DurationMs: c.Duration.Milliseconds(),
				DurationUs: c.Duration.Microseconds(), SizeBytes: c.FullBytes, IncrementalBytes: c.IncrementalBytes,
				MaxAlignmentUs: c.MaxAlignment.Microseconds(), Unaligned: c.Unaligned,
				PersistedInFlightBytes: c.PersistedInFlight, ProcessedInFlightBytes: c.ProcessedInFlight})
		}
	}
	// What the API's history no longer holds is not told again.
	if len(t.triggered) > 4*max(len(s.Checkpoints.History), 16) {
		keep := map[int64]bool{}
		for _, c := range s.Checkpoints.History {
			keep[c.ID] = true
		}
		for id := range t.triggered {
			if !keep[id] {
				delete(t.triggered, id)
				delete(t.ended, id)
			}
		}
	}
}
