package rest

import (
	"fmt"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

var t0 = time.Date(2025, 12, 5, 10, 0, 0, 0, time.UTC) // before any test runs

// fixture is a job of two sources, a join and a sink, four checkpoints
// into its run (one pending, a savepoint, one failed, one restored), with
// two failures behind it.
func fixture() view.Snapshot {
	s := view.Snapshot{Now: t0.Add(time.Minute), Started: t0, Tasks: map[string]view.Task{},
		Job: view.JobInfo{Name: "orders", Status: "RUNNING", Interval: 2 * time.Second, Mode: "exactly-once"},
		Operators: []view.Operator{
			{Name: "orders", Type: "source", Parallelism: 2, Topic: "orders"},
			{Name: "payments", Type: "source", Parallelism: 1, Topic: "payments"},
			{Name: "join", Type: "join", Parallelism: 2, Inputs: []view.Edge{{From: "orders", Kind: "hash", Key: "order_id"}, {From: "payments", Kind: "hash", Key: "order_id"}}},
			{Name: "sink", Type: "sink", Parallelism: 1, Inputs: []view.Edge{{From: "join", Kind: "rebalance"}}, Topic: "revenue"},
		}}
	for _, op := range s.Operators {
		for i := range op.Parallelism {
			name := fmt.Sprintf("%s/%d", op.Name, i)
			s.Tasks[name] = view.Task{Name: name, Operator: op.Name, Index: i, Status: "RUNNING", RecordsIn: 100, RecordsOut: 90,
				Busy: 0.5, BackPressureRatio: 0.25, BackPressure: view.BackPressureLow, Restarts: 1}
		}
	}
	ack := func(at time.Duration) view.SubtaskAck {
		return view.SubtaskAck{SyncDuration: 2 * time.Millisecond, AsyncDuration: 5 * time.Millisecond, Alignment: 30 * time.Millisecond,
			StartDelay: 10 * time.Millisecond, Bytes: 1000, IncrementalBytes: 100, AckTime: t0.Add(at), EndToEnd: at,
			PersistedInFlight: 64, ProcessedInFlight: 32}
	}
	all := func(at time.Duration) map[string]view.SubtaskAck {
		m := map[string]view.SubtaskAck{}
		for name := range s.Tasks {
			m[name] = ack(at)
		}
		return m
	}
	s.Checkpoints = view.Checkpoints{Completed: 2, Failed: 1, InProgress: 1, LastCompleted: 2, Restored: []int64{2},
		History: []view.Checkpoint{
			{ID: 5, Status: view.StatusPending, TriggerTime: t0.Add(50 * time.Second), Duration: time.Second, Acked: 1, Total: 6,
				AckedTasks: map[string]view.SubtaskAck{"orders/0": ack(50 * time.Second)}, WaitingFor: []string{"join/0"}},
			{ID: 4, Savepoint: true, Status: view.StatusCompleted, TriggerTime: t0.Add(40 * time.Second), EndTime: t0.Add(41 * time.Second),
				Duration: time.Second, Acked: 6, Total: 6, AckedTasks: all(41 * time.Second), FullBytes: 6000, IncrementalBytes: 6000},
			{ID: 3, Status: view.StatusFailed, TriggerTime: t0.Add(30 * time.Second), EndTime: t0.Add(40 * time.Second),
				Duration: 10 * time.Second, Total: 6, Failure: "checkpoint expired before completing"},
			{ID: 2, Status: view.StatusCompleted, TriggerTime: t0.Add(20 * time.Second), EndTime: t0.Add(21 * time.Second),
				Duration: 800 * time.Millisecond, Acked: 6, Total: 6, AckedTasks: all(21 * time.Second), FullBytes: 6000, IncrementalBytes: 600,
				InFlight: view.InFlight{Unaligned: true, PersistedInFlight: 384, ProcessedInFlight: 192}, Restored: true},
		}}
	s.Restart = view.Restart{Restarts: 2, Failures: []view.Failure{
		{At: t0.Add(25 * time.Second), Task: "join/1", Error: "join/1: injected fault: panic", Fault: "panic"},
		{At: t0.Add(15 * time.Second), Error: "the sink's transaction could not be committed"},
	}}
	return s
}

// fakeJob is a Job over a snapshot the test changes, recording what it
// was asked.
type fakeJob struct {
	mu         sync.Mutex
	snap       view.Snapshot
	next       int64
	stops      []bool
	cancels    int
	triggerErr error
}

func (f *fakeJob) Snapshot() view.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap
}

func (f *fakeJob) set(change func(s *view.Snapshot)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.snap)
}

func (f *fakeJob) trigger(savepoint bool) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.triggerErr != nil {
		return 0, f.triggerErr
	}
	f.next++
	f.snap.Checkpoints.History = append([]view.Checkpoint{{ID: f.next, Savepoint: savepoint, Status: view.StatusPending,
		TriggerTime: time.Now(), Total: 6}}, f.snap.Checkpoints.History...)
	return f.next, nil
}

func (f *fakeJob) TriggerCheckpoint() (int64, error) { return f.trigger(false) }
func (f *fakeJob) TriggerSavepoint() (int64, error)  { return f.trigger(true) }

func (f *fakeJob) Stop(savepoint bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops = append(f.stops, savepoint)
}

func (f *fakeJob) Cancel() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels++
}

// complete marks checkpoint id completed (failed with why, when given).
func (f *fakeJob) complete(id int64, why string) {
	f.set(func(s *view.Snapshot) {
		for i, c := range s.Checkpoints.History {
			if c.ID == id {
				c.Status, c.EndTime = view.StatusCompleted, time.Now()
				if why != "" {
					c.Status, c.Failure = view.StatusFailed, why
				}
				s.Checkpoints.History[i] = c
			}
		}
	})
}

func (f *fakeJob) Config() map[string]string {
	return map[string]string{"restart-strategy.type": "fixed-delay", "execution.checkpointing.interval": "2 s"}
}
