package cli

import (
	"context"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui"
)

// The UI's view of the checkpoint statistics says what the coordinator's
// do: each status, savepoints, acknowledgements and waits by subtask name.
func TestCheckpointsViewCopiesTheStatistics(t *testing.T) {
	join1 := checkpoint.TaskID{Operator: "join", Index: 1}
	st := checkpoint.Stats{Completed: 2, Failed: 1, InProgress: 1, LastCompleted: 7, Restored: []int64{5},
		History: []checkpoint.CheckpointStats{
			{ID: 8, Kind: checkpoint.KindCheckpoint, Status: checkpoint.StatusPending, Acked: 1, Total: 2,
				AckedTasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{join1: {Alignment: time.Millisecond, Bytes: 9}},
				WaitingFor: []checkpoint.TaskID{{Operator: "sink", Index: 0}}},
			{ID: 7, Kind: checkpoint.KindSavepoint, Status: checkpoint.StatusCompleted, Restored: true},
			{ID: 6, Kind: checkpoint.KindCheckpoint, Status: checkpoint.StatusFailed, Failure: "expired"},
		}}
	v := checkpointsView(st)
	if v.Completed != 2 || v.Failed != 1 || v.InProgress != 1 || v.LastCompleted != 7 || len(v.Restored) != 1 || len(v.History) != 3 {
		t.Fatalf("counts %+v", v)
	}
	h := v.History
	if h[0].Status != view.StatusPending || h[1].Status != view.StatusCompleted || h[2].Status != view.StatusFailed {
		t.Errorf("statuses %v %v %v", h[0].Status, h[1].Status, h[2].Status)
	}
	if h[0].Savepoint || !h[1].Savepoint || !h[1].Restored || h[2].Failure != "expired" {
		t.Errorf("history %+v", h)
	}
	if a, ok := h[0].AckedTasks["join/1"]; !ok || a.Alignment != time.Millisecond || a.Bytes != 9 || len(h[0].WaitingFor) != 1 || h[0].WaitingFor[0] != "sink/0" {
		t.Errorf("acks %v, waiting for %v", h[0].AckedTasks, h[0].WaitingFor)
	}
}

// While the world is frozen, each subtask's load reads what it was when
// it froze: a frozen subtask is neither busy nor idle, whatever it waits
// in (a slowed one's held record, a source's next batch).
func TestFrozenLoadHoldsWhatItWas(t *testing.T) {
	j, ctrl := runningController(t)
	if err := j.Inject(runtime.Fault{Kind: runtime.FaultSlow, Task: "join/0", Factor: 10, For: time.Minute}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	ctrl.Snapshot()
	time.Sleep(300 * time.Millisecond)
	j.SetTempo(runtime.TempoFrozen)
	before := ctrl.Snapshot()
	time.Sleep(time.Second)
	frozen := ctrl.Snapshot()
	for name, b := range before.Tasks {
		f := frozen.Tasks[name]
		if f.Busy != b.Busy || f.BackPressureRatio != b.BackPressureRatio {
			t.Errorf("%s: busy %.2f bp %.2f frozen for a second, %.2f %.2f as it froze", name, f.Busy, f.BackPressureRatio, b.Busy, b.BackPressureRatio)
		}
	}
}

// A snapshot taken right after another (the REST API's or the metrics'
// callers besides the UI's ticks) reads the load of the window before
// instead of measuring one of a few milliseconds; the next one a window
// later measures again.
func TestLoadIsMeasuredOverAWindowWhoeverSamples(t *testing.T) {
	_, ctrl := runningController(t)
	time.Sleep(loadWindow)
	first := ctrl.Snapshot()
	at := ctrl.prev["join/0"].at
	again := ctrl.Snapshot()
	if time.Since(at) < loadWindow && (again.Tasks["join/0"].Busy != first.Tasks["join/0"].Busy || ctrl.prev["join/0"].at != at) {
		t.Fatalf("a snapshot right after another measured a new window")
	}
	time.Sleep(loadWindow)
	ctrl.Snapshot()
	if !ctrl.prev["join/0"].at.After(at) {
		t.Fatal("a snapshot a window later measured nothing new")
	}
}

// runningController runs the orders job in memory at 4,000 records/s
// until the test ends, and returns it with its UI controller once records
// go through the join.
func runningController(t *testing.T) (*runtime.Job, *uiController) {
	t.Helper()
	j, sp := memoryJob(t, orders.NewGenerator(1, 2_000_000, orders.GeneratorPartitions).WithRate(4000), 200*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); j.Run(ctx, runtime.RunOptions{}) }()
	t.Cleanup(func() { cancel(); <-done })
	ctrl := newUIController(j, sp, tui.JobInfo{Name: sp.Name}, nil, nil, nil)
	waitUntil(t, "records through the join", func() bool { return ctrl.Snapshot().Tasks["join/0"].RateIn > 0 })
	return j, ctrl
}
