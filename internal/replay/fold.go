package replay

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// historyKept is how many checkpoints the replayed history keeps.
const historyKept = 32

// State is what a session's events so far say of the job, as the terminal
// UI draws it. Apply one event at a time, in order.
type State struct {
	s view.Snapshot
	// the previous task_load sample of each subtask, for its rate
	load map[string]loadSample
}

type loadSample struct {
	at time.Duration
	in int64
}

// NewState is the state before any event.
func NewState() *State {
	return &State{s: view.Snapshot{Tasks: map[string]view.Task{}, Job: view.JobInfo{Status: "CREATED"}}, load: map[string]loadSample{}}
}

// Apply folds e into the state.
func (st *State) Apply(e view.Stamped) {
	s := &st.s
	switch ev := e.Event.(type) {
	case view.RunStarted:
		st.started(e, ev)
	case view.JobStatus:
		s.Job.Status = ev.Status
	case view.TaskStatus:
		t := s.Tasks[ev.Task]
		t.Status = ev.Status
		if ev.Attempt > 0 {
			t.Restarts = int(ev.Attempt - 1)
			s.Job.Attempt = max(s.Job.Attempt, ev.Attempt)
		}
		s.Tasks[ev.Task] = t
	case view.TaskLoad:
		st.loaded(e.At, ev)
	case view.CheckpointTriggered, view.CheckpointCompleted, view.CheckpointFailed, view.Restored:
		st.checkpoint(e)
	case view.TaskFailed:
		s.Restart.LastFailed, s.Restart.LastError = ev.Task, ev.Error
		f := view.Failure{At: e.Wall, Task: ev.Task, Error: ev.Error, Fault: ev.Fault}
		s.Restart.Failures = append([]view.Failure{f}, s.Restart.Failures[:min(len(s.Restart.Failures), view.FailureHistory-1)]...)
	case view.RestartScheduled:
		r := &s.Restart
		r.Strategy, r.Description, r.Failover = ev.Strategy, ev.Description, ev.Failover
		r.Restarts, r.Status.Attempts, r.LastRestarted = ev.Attempt, ev.Attempt, slices.Clone(ev.Tasks)
		r.Status.MaxAttempts, r.Status.NextDelay = ev.MaxAttempts, time.Duration(ev.DelayMs)*time.Millisecond
		r.NextRestartAt = e.Wall.Add(r.Status.NextDelay)
	case view.VerifyStatus:
		s.Verify = view.Verify{Available: true, Committed: ev.Committed, Duplicates: ev.Duplicates,
			DuplicatesAtLeastOnce: ev.DuplicatesAtLeastOnce, Lost: ev.Lost, AsOf: ev.AsOf, InFlight: ev.InFlight,
			NotJoined: ev.NotJoined, Err: ev.Error}
	case view.ModeChanged:
		s.Job.Mode = ev.Mode
	}
}

func (st *State) started(e view.Stamped, ev view.RunStarted) {
	s := &st.s
	s.Started = e.Wall
	s.Job.Name, s.Job.Title, s.Job.Mode = ev.Job, ev.Title, ev.Mode
	if s.Job.Title == "" {
		s.Job.Title = ev.Job
	}
	s.Job.Interval = time.Duration(ev.CheckpointIntervalMs) * time.Millisecond
	s.Job.Broker, s.Job.StateDir, s.Job.StateBackend, s.Job.Incremental = ev.Brokers, ev.StateDir, ev.StateBackend, ev.Incremental
	s.Job.StateTTL = time.Duration(ev.StateTTLMs) * time.Millisecond
	s.Operators = ev.Operators
	for _, op := range ev.Operators {
		for i := range op.Parallelism {
			name := fmt.Sprintf("%s/%d", op.Name, i)
			s.Tasks[name] = view.Task{Name: name, Operator: op.Name, Index: i, Status: "CREATED"}
		}
	}
}

// loaded takes a task_load sample: the subtasks' busy, back-pressured
// and idle time, their counts, their rate since the sample before.
func (st *State) loaded(at time.Duration, ev view.TaskLoad) {
	for _, l := range ev.Tasks {
		t := st.s.Tasks[l.Task]
		t.Busy = float64(l.BusyMsPerSecond) / 1000
		t.BackPressureRatio = float64(l.BackPressuredMsPerSecond) / 1000
		t.BackPressure = view.BackPressureOf(t.BackPressureRatio)
		t.RecordsIn, t.RecordsOut, t.Watermark = l.RecordsIn, l.RecordsOut, l.WatermarkMs
		if prev, ok := st.load[l.Task]; ok && at > prev.at {
			t.RateIn = float64(l.RecordsIn-prev.in) / (at - prev.at).Seconds()
		}
		st.load[l.Task] = loadSample{at: at, in: l.RecordsIn}
		st.s.Tasks[l.Task] = t
	}
}

// checkpoint folds a checkpoint's event into the history and the counts.
func (st *State) checkpoint(e view.Stamped) {
	cs := &st.s.Checkpoints
	switch ev := e.Event.(type) {
	case view.CheckpointTriggered:
		c := view.Checkpoint{ID: ev.ID, Savepoint: ev.Kind == "savepoint", Status: view.StatusPending, TriggerTime: e.Wall, Total: len(st.s.Tasks)}
		if !ev.TriggerTime.IsZero() {
			c.TriggerTime = ev.TriggerTime
		}
		cs.History = append([]view.Checkpoint{c}, cs.History[:min(len(cs.History), historyKept-1)]...)
		cs.InProgress++
	case view.CheckpointCompleted:
		st.settle(ev.ID, func(c *view.Checkpoint) {
			c.Status, c.EndTime, c.Acked = view.StatusCompleted, e.Wall, c.Total
			c.Duration = time.Duration(ev.DurationMs) * time.Millisecond
			if ev.DurationUs > 0 {
				c.Duration = time.Duration(ev.DurationUs) * time.Microsecond
			}
			c.FullBytes, c.IncrementalBytes = ev.SizeBytes, ev.IncrementalBytes
			c.MaxAlignment = time.Duration(ev.MaxAlignmentUs) * time.Microsecond
			c.InFlight = view.InFlight{PersistedInFlight: ev.PersistedInFlightBytes, ProcessedInFlight: ev.ProcessedInFlightBytes,
				Unaligned: ev.Unaligned, TimedOut: ev.TimedOut}
		})
		cs.Completed++
		if ev.Kind != "savepoint" {
			cs.LastCompleted = ev.ID
		}
	case view.CheckpointFailed:
		st.settle(ev.ID, func(c *view.Checkpoint) {
			c.Status, c.EndTime, c.Failure = view.StatusFailed, e.Wall, strings.TrimSuffix(ev.Reason+": "+ev.Error, ": ")
		})
		cs.Failed++
	case view.Restored:
		if ev.Checkpoint > 0 {
			cs.Restored = append(cs.Restored, ev.Checkpoint)
			for i := range cs.History {
				if cs.History[i].ID == ev.Checkpoint {
					cs.History[i].Restored = true
				}
			}
		}
	}
}

// settle changes pending checkpoint id as change says.
func (st *State) settle(id int64, change func(c *view.Checkpoint)) {
	cs := &st.s.Checkpoints
	for i := range cs.History {
		if c := &cs.History[i]; c.ID == id && c.Status == view.StatusPending {
			change(c)
			cs.InProgress = max(0, cs.InProgress-1)
			return
		}
	}
}

// Snapshot is the state as a snapshot of its own (nothing shared).
func (st *State) Snapshot() view.Snapshot {
	s := st.s
	s.Tasks = maps.Clone(s.Tasks)
	s.Checkpoints.History = slices.Clone(s.Checkpoints.History)
	s.Checkpoints.Restored = slices.Clone(s.Checkpoints.Restored)
	s.Restart.Failures = slices.Clone(s.Restart.Failures)
	s.Restart.LastRestarted = slices.Clone(s.Restart.LastRestarted)
	return s
}
