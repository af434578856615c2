package tui

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"faultline/runtime/view"
	"faultline/tui/common"
)

// fakeController is a Controller for tests: it returns the Snapshot it is
// given and records every command it receives.
type fakeController struct {
	mu     sync.Mutex
	snap   Snapshot
	faults []FaultChoice
	calls  []string
	nextID int64

	injectErr, checkpointErr, savepointErr, modeErr, rateErr error
	snapshots                                                int
}

func newFake(s Snapshot) *fakeController {
	return &fakeController{snap: s, faults: defaultFaults(), nextID: 15}
}

func (f *fakeController) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

// Calls returns the commands received so far.
func (f *fakeController) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeController) SetSnapshot(s Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap = s
}

func (f *fakeController) Snapshot() Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snapshots++
	return f.snap
}

func (f *fakeController) Inject(fault string, task string) error {
	f.record("Inject(%s,%s)", fault, task)
	return f.injectErr
}

func (f *fakeController) TriggerCheckpoint() (int64, error) {
	f.record("TriggerCheckpoint")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.checkpointErr != nil {
		return 0, f.checkpointErr
	}
	f.nextID++
	return f.nextID - 1, nil
}

func (f *fakeController) TriggerSavepoint() (int64, error) {
	f.record("TriggerSavepoint")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.savepointErr != nil {
		return 0, f.savepointErr
	}
	f.nextID++
	return f.nextID - 1, nil
}

func (f *fakeController) SetMode(mode string) error {
	f.record("SetMode(%s)", mode)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.modeErr == nil {
		f.snap.Job.Mode = mode
	}
	return f.modeErr
}

// The settings apply to the Snapshot the fake returns, as the job's would.

func (f *fakeController) SetSourcesPaused(paused bool) {
	f.record("SetSourcesPaused(%v)", paused)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap.Input.SourcesPaused = paused
}

func (f *fakeController) SetTempo(t Tempo) {
	f.record("SetTempo(%s)", t)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap.Input.Tempo = t
}

func (f *fakeController) Step() { f.record("Step") }

func (f *fakeController) SetRate(r float64) error {
	f.record("SetRate(%.0f)", r)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rateErr == nil {
		f.snap.Input.Rate = r
	}
	return f.rateErr
}

func (f *fakeController) Faults() []FaultChoice {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]FaultChoice(nil), f.faults...)
}

// defaultFaults is the catalogue of a run with an external Kafka: broker-down
// cannot happen.
func defaultFaults() []FaultChoice {
	return []FaultChoice{
		{Kind: "panic", Description: "the task panics", Available: true},
		{Kind: "error", Description: "the task's operator returns an error", Available: true},
		{Kind: "slow", Description: "the task runs 10 times slower for 5s", Available: true},
		{Kind: "broker-down", Description: "the Kafka broker stops for 5s", JobLevel: true, Available: false,
			Why: "the broker is external (--brokers)"},
		{Kind: "crash", Description: "the process dies as with SIGKILL", JobLevel: true, Available: true},
		{Kind: "storage-fail", Description: "the next checkpoint write fails", JobLevel: true, Available: true},
		{Kind: "corrupt-checkpoint", Description: "the newest checkpoint's state is damaged", JobLevel: true, Available: true},
	}
}

// The fixtures' clock: the run started at 12:01:00.000 UTC and the sample
// is taken 9.412 s later.
var (
	fixtureStart = time.Date(2025, 3, 14, 12, 1, 0, 0, time.UTC)
	fixtureNow   = fixtureStart.Add(9412 * time.Millisecond)
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func tid(name string, i int) string { return common.TaskName(name, i) }

// queue is a channel's view with barriers at the given positions.
func queue(from string, input int, queued int64, barriers ...view.BarrierPos) view.InputView {
	return view.InputView{From: from, Input: input, Queue: view.QueueView{Queued: queued, Barriers: barriers}}
}

func barrier(id, pos int64) view.BarrierPos { return view.BarrierPos{ID: id, Pos: pos} }

// runningSnapshot is the default job (orders ⋈ payments) running in
// exactly-once mode: checkpoint 14 is pending, acknowledged by the 8
// sources and parsers; its barriers are queued at join/0's and join/1's
// inputs, not yet handled.
func runningSnapshot() Snapshot {
	ops := []Operator{
		{Name: "orders-source", Type: "source", Parallelism: 2, Topic: "orders"},
		{Name: "payments-source", Type: "source", Parallelism: 2, Topic: "payments"},
		{Name: "parse-orders", Type: "parse", Parallelism: 2, Inputs: []Edge{{From: "orders-source", Kind: "forward"}}},
		{Name: "parse-payments", Type: "parse", Parallelism: 2, Inputs: []Edge{{From: "payments-source", Kind: "forward"}}},
		{Name: "join", Type: "join", Parallelism: 2, Inputs: []Edge{
			{From: "parse-orders", Kind: "hash", Key: "order_id"}, {From: "parse-payments", Kind: "hash", Key: "order_id"}}},
		{Name: "revenue", Type: "aggregate", Parallelism: 2, Inputs: []Edge{{From: "join", Kind: "hash", Key: "customer"}}},
		{Name: "sink", Type: "sink", Parallelism: 1, Topic: "revenue", Inputs: []Edge{{From: "revenue", Kind: "rebalance"}}},
	}
	tasks := map[string]Task{}
	add := func(t Task) {
		t.Name = common.TaskName(t.Operator, t.Index)
		if t.Status == "" {
			t.Status = "RUNNING"
		}
		if t.BackPressure == "" {
			t.BackPressure = BackPressureOK
		}
		tasks[t.Name] = t
	}
	add(Task{Operator: "orders-source", Index: 0, RateIn: 2104, Offsets: map[int32]int64{0: 1203, 1: 1180}})
	add(Task{Operator: "orders-source", Index: 1, RateIn: 2051, Offsets: map[int32]int64{2: 1190, 3: 1201}})
	add(Task{Operator: "payments-source", Index: 0, RateIn: 1980, Offsets: map[int32]int64{0: 1150, 1: 1162}})
	add(Task{Operator: "payments-source", Index: 1, RateIn: 2012, Offsets: map[int32]int64{2: 1149, 3: 1170}})
	add(Task{Operator: "parse-orders", Index: 0, RateIn: 2104, Inputs: []view.InputView{queue("orders-source/0", 0, 3)}})
	add(Task{Operator: "parse-orders", Index: 1, RateIn: 2051, Inputs: []view.InputView{queue("orders-source/1", 0, 2)}})
	add(Task{Operator: "parse-payments", Index: 0, RateIn: 1980, Inputs: []view.InputView{queue("payments-source/0", 0, 4)}})
	add(Task{Operator: "parse-payments", Index: 1, RateIn: 2012, Inputs: []view.InputView{queue("payments-source/1", 0, 1)}})
	add(Task{Operator: "join", Index: 0, RateIn: 4120, BackPressure: BackPressureLow, BackPressureRatio: 0.2, Inputs: []view.InputView{
		queue("parse-orders/0", 0, 9, barrier(14, 2)),
		queue("parse-orders/1", 0, 12, barrier(14, 7)),
		queue("parse-payments/0", 1, 5, barrier(14, 4)),
		queue("parse-payments/1", 1, 10, barrier(14, 0)),
	}})
	add(Task{Operator: "join", Index: 1, RateIn: 4003, Inputs: []view.InputView{
		queue("parse-orders/0", 0, 4, barrier(14, 3)),
		queue("parse-orders/1", 0, 6, barrier(14, 5)),
		queue("parse-payments/0", 1, 3),
		queue("parse-payments/1", 1, 8, barrier(14, 6)),
	}})
	add(Task{Operator: "revenue", Index: 0, RateIn: 1012, Inputs: []view.InputView{queue("join/0", 0, 3), queue("join/1", 0, 2)}})
	add(Task{Operator: "revenue", Index: 1, RateIn: 998, Inputs: []view.InputView{queue("join/0", 0, 1), queue("join/1", 0, 4)}})
	add(Task{Operator: "sink", Index: 0, RateIn: 2010, Inputs: []view.InputView{queue("revenue/0", 0, 2), queue("revenue/1", 0, 3)}})

	acks := map[string]view.SubtaskAck{}
	for _, op := range []string{"orders-source", "payments-source", "parse-orders", "parse-payments"} {
		for i := range 2 {
			a := view.SubtaskAck{SyncDuration: 300 * time.Microsecond, AsyncDuration: ms(2), StartDelay: ms(1 + i), Bytes: 64, IncrementalBytes: 64}
			if op == "parse-orders" || op == "parse-payments" {
				a.StartDelay, a.Bytes, a.IncrementalBytes = ms(4+i), 0, 0
			}
			acks[tid(op, i)] = a
		}
	}
	history := []view.Checkpoint{
		{ID: 14, Status: view.StatusPending, TriggerTime: fixtureNow.Add(-ms(38)), Acked: 8, Total: 13,
			AckedTasks: acks, FullBytes: 256, IncrementalBytes: 256,
			WaitingFor: []string{tid("join", 0), tid("join", 1), tid("revenue", 0), tid("revenue", 1), tid("sink", 0)}},
		completedCheckpoint(13, fixtureNow.Add(-ms(2038)), ms(21), 1258291, 40960, ms(4)),
		completedCheckpoint(12, fixtureNow.Add(-ms(4040)), ms(19), 1153434, 38912, ms(3)),
		{ID: 11, Status: view.StatusFailed, TriggerTime: fixtureNow.Add(-ms(6044)), EndTime: fixtureNow.Add(-ms(6020)),
			Acked: 9, Total: 13, Failure: "declined: join/1: snapshot failed: injected storage failure"},
		completedCheckpoint(10, fixtureNow.Add(-ms(8050)), ms(24), 1048576, 1048576, ms(5)),
	}
	history[4].Savepoint = true

	return Snapshot{
		Now:     fixtureNow,
		Started: fixtureStart,
		Job: JobInfo{Name: "orders", Title: "orders ⋈ payments", Status: "RUNNING", Mode: "exactly-once",
			Interval: 2 * time.Second, Broker: "127.0.0.1:9092", Embedded: true, StateBackend: "heap", Attempt: 1},
		Operators: ops,
		Tasks:     tasks,
		Checkpoints: view.Checkpoints{Completed: 3, Failed: 1, InProgress: 1, LastCompleted: 13,
			History: history},
		Restart: Restart{Strategy: "fixed-delay", Description: "fixed-delay (attempts 3, delay 1s)",
			Status: view.RestartStatus{MaxAttempts: 3}, Failover: "full"},
		Verify: Verify{Available: true, Committed: 18204, AsOf: 13},
		Input:  Input{Generator: true, Rate: 10000, Tempo: TempoNormal},
	}
}

// completedCheckpoint is a completed checkpoint acknowledged by all 13
// subtasks.
func completedCheckpoint(id int64, trigger time.Time, dur time.Duration, full, inc int64, align time.Duration) view.Checkpoint {
	acks := map[string]view.SubtaskAck{}
	for _, op := range []struct {
		name string
		n    int
	}{{"orders-source", 2}, {"payments-source", 2}, {"parse-orders", 2}, {"parse-payments", 2}, {"join", 2}, {"revenue", 2}, {"sink", 1}} {
		for i := range op.n {
			acks[tid(op.name, i)] = view.SubtaskAck{SyncDuration: ms(1), AsyncDuration: ms(5), Alignment: align / 2,
				StartDelay: ms(2), Bytes: full / 13, IncrementalBytes: inc / 13}
		}
	}
	return view.Checkpoint{ID: id, Status: view.StatusCompleted,
		TriggerTime: trigger, EndTime: trigger.Add(dur), Acked: 13, Total: 13, AckedTasks: acks,
		FullBytes: full, IncrementalBytes: inc, MaxAlignment: align}
}

// aligningSnapshot is the running job in slow motion while join/0 aligns
// checkpoint 14: barrier 14 came in on its first input, which alignment
// now blocks with 6 elements held back; the other inputs still have 14 in
// their queues.
func aligningSnapshot() Snapshot {
	s := runningSnapshot()
	s.Input.Tempo = TempoSlow
	j := s.Tasks["join/0"]
	j.Alignment = view.AlignmentView{Checkpoint: 14, Since: s.Now.Add(-ms(38))}
	j.Inputs = []view.InputView{
		{From: "parse-orders/0", Input: 0, Blocked: true, HeldBack: 6, Queue: view.QueueView{Queued: 6}},
		queue("parse-orders/1", 0, 12, barrier(14, 5)),
		queue("parse-payments/0", 1, 5, barrier(14, 2)),
		queue("parse-payments/1", 1, 9, barrier(14, 8)),
	}
	j.RateIn = 1210
	s.Tasks["join/0"] = j
	return s
}

// restartingSnapshot is the job after join/1 panicked: full failover
// cancelled every subtask, and fixed-delay restarts it in 0.8 s.
func restartingSnapshot() Snapshot {
	s := runningSnapshot()
	s.Job.Status = "RESTARTING"
	all := make([]string, 0, len(s.Tasks))
	for _, op := range s.Operators {
		for i := range op.Parallelism {
			name := common.TaskName(op.Name, i)
			all = append(all, name)
			t := s.Tasks[name]
			t.Status, t.RateIn = "CANCELED", 0
			for c := range t.Inputs {
				t.Inputs[c].Queue = view.QueueView{}
			}
			s.Tasks[name] = t
		}
	}
	j := s.Tasks["join/1"]
	j.Status = "FAILED"
	s.Tasks["join/1"] = j
	s.Checkpoints.History[0].Status = view.StatusFailed
	s.Checkpoints.History[0].EndTime = s.Now.Add(-ms(200))
	s.Checkpoints.History[0].Failure = "job failover: injected fault: panic"
	s.Checkpoints.InProgress, s.Checkpoints.Failed = 0, 2
	s.Restart.Status = view.RestartStatus{Attempts: 1, MaxAttempts: 3, NextDelay: time.Second}
	s.Restart.NextRestartAt = s.Now.Add(ms(800))
	s.Restart.LastRestarted = all
	s.Restart.LastFailed = "join/1"
	s.Restart.LastError = "injected fault: panic"
	s.Restart.Restarts = 1
	return s
}

// runEvents is the event stream of the running job so far.
func runEvents() []view.Stamped {
	ev := func(at int, name string, f map[string]any) view.Stamped {
		return view.Stamped{At: ms(at), Event: ev(panicking{}, name, f)}
	}
	out := []view.Stamped{
		ev(3, "run_started", map[string]any{"job": "orders", "mode": "exactly-once", "state_dir": "/tmp/faultline",
			"brokers": "127.0.0.1:9092", "checkpoint_interval_ms": int64(2000)}),
		ev(40, "broker_started", map[string]any{"address": "127.0.0.1:9092", "embedded": true}),
		ev(52, "job_status", map[string]any{"status": "RUNNING"}),
	}
	for _, op := range []struct {
		name string
		n    int
	}{{"orders-source", 2}, {"payments-source", 2}, {"parse-orders", 2}, {"parse-payments", 2}, {"join", 2}, {"revenue", 2}, {"sink", 1}} {
		for i := range op.n {
			out = append(out,
				ev(60, "task_status", map[string]any{"task": common.TaskName(op.name, i), "status": "DEPLOYING", "attempt": int64(1)}),
				ev(75, "task_status", map[string]any{"task": common.TaskName(op.name, i), "status": "RUNNING", "attempt": int64(1)}))
		}
	}
	out = append(out,
		ev(1362, "checkpoint_triggered", map[string]any{"id": int64(10), "kind": "savepoint"}),
		ev(1386, "checkpoint_completed", map[string]any{"id": int64(10), "kind": "savepoint", "duration_ms": int64(24), "size_bytes": int64(1048576), "incremental_bytes": int64(1048576)}),
		ev(1390, "savepoint_completed", map[string]any{"id": 10, "size_bytes": 1048576, "path": "/tmp/faultline/checkpoints"}),
		ev(3368, "checkpoint_triggered", map[string]any{"id": int64(11), "kind": "checkpoint"}),
		ev(3392, "checkpoint_failed", map[string]any{"id": int64(11), "reason": "declined", "task": "join/1", "error": "snapshot failed: injected storage failure"}),
		ev(5372, "checkpoint_triggered", map[string]any{"id": int64(12), "kind": "checkpoint"}),
		ev(5391, "checkpoint_completed", map[string]any{"id": int64(12), "kind": "checkpoint", "duration_ms": 19, "size_bytes": 1153434.0, "incremental_bytes": int32(38912)}),
		ev(7374, "checkpoint_triggered", map[string]any{"id": int64(13), "kind": "checkpoint"}),
		ev(7395, "checkpoint_completed", map[string]any{"id": int64(13), "kind": "checkpoint", "duration_ms": int64(21), "size_bytes": int64(1258291), "incremental_bytes": int64(40960)}),
		ev(9374, "checkpoint_triggered", map[string]any{"id": int64(14), "kind": "checkpoint"}),
	)
	return out
}

// restartEvents follows runEvents when join/1 panics.
func restartEvents() []view.Stamped {
	ev := func(at int, name string, f map[string]any) view.Stamped {
		return view.Stamped{At: ms(at), Event: ev(panicking{}, name, f)}
	}
	out := append(runEvents(),
		ev(8601, "fault_injected", map[string]any{"task": "join/1", "fault": "panic", "spec": "task=join/1,fault=panic"}),
		ev(8603, "task_status", map[string]any{"task": "join/1", "status": "FAILED", "attempt": int64(1), "reason": "injected fault: panic"}),
		ev(8604, "task_failed", map[string]any{"task": "join/1", "error": "injected fault: panic", "fault": "panic", "attempt": int64(1)}),
		ev(8605, "checkpoint_failed", map[string]any{"id": int64(14), "reason": "job failover", "error": "job failover: injected fault: panic"}),
		ev(8605, "job_status", map[string]any{"status": "RESTARTING", "reason": "injected fault: panic"}),
		ev(8606, "failover", map[string]any{"strategy": "full", "tasks": []string{"orders-source/0", "orders-source/1", "payments-source/0", "payments-source/1", "parse-orders/0"}}),
		ev(8612, "restart_scheduled", map[string]any{"strategy": "fixed-delay", "delay_ms": int64(1000), "attempt": 1, "description": "fixed-delay (attempts 3, delay 1s)"}),
	)
	for i := range out {
		if c, ok := out[i].Event.(view.CheckpointTriggered); ok && c.ID == 14 {
			out[i].At = ms(8374)
		}
	}
	return out
}

// pipelineSnapshot is the pipeline job: source[4] → enrich[4] → sink[4],
// forward edges only, checkpoint 7's barrier on its way.
func pipelineSnapshot() Snapshot {
	ops := []Operator{
		{Name: "source", Type: "source", Parallelism: 4, Topic: "orders"},
		{Name: "enrich", Type: "enrich", Parallelism: 4, Inputs: []Edge{{From: "source", Kind: "forward"}}},
		{Name: "sink", Type: "sink", Parallelism: 4, Topic: "enriched-orders", Inputs: []Edge{{From: "enrich", Kind: "forward"}}},
	}
	tasks := map[string]Task{}
	for i := range 4 {
		for _, op := range []string{"source", "enrich", "sink"} {
			t := Task{Name: common.TaskName(op, i), Operator: op, Index: i, Status: "RUNNING", RateIn: 5200, BackPressure: BackPressureOK}
			switch op {
			case "source":
				t.Offsets = map[int32]int64{int32(i): 40210 + int64(i)}
			case "enrich":
				t.Inputs = []view.InputView{queue(common.TaskName("source", i), 0, 6, barrier(7, int64(i)))}
			case "sink":
				t.Inputs = []view.InputView{queue(common.TaskName("enrich", i), 0, 3)}
			}
			tasks[t.Name] = t
		}
	}
	return Snapshot{
		Now: fixtureNow, Started: fixtureStart,
		Job: JobInfo{Name: "pipeline", Status: "RUNNING", Mode: "exactly-once", Interval: time.Second,
			Broker: "127.0.0.1:9092", Embedded: true},
		Operators: ops, Tasks: tasks,
		Checkpoints: view.Checkpoints{Completed: 6, LastCompleted: 6},
		Restart:     Restart{Strategy: "fixed-delay", Description: "fixed-delay (attempts 3, delay 1s)", Failover: "region"},
		Input:       Input{Generator: true, Rate: 20000},
	}
}

// panicking is a testing.TB for the fixtures built outside a test: a
// fixture that cannot be built is a bug in it.
type panicking struct{ testing.TB }

func (panicking) Helper()           {}
func (panicking) Fatal(args ...any) { panic(fmt.Sprint(args...)) }
