package attach

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/rest"
	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui"
)

// runJob is a faultline run as its REST API serves it: a snapshot, and
// the operations counted.
type runJob struct {
	snap view.Snapshot
	mu   sync.Mutex
	ops  []string
	// refuse makes savepoints fail with it.
	refuse error
}

func (j *runJob) Snapshot() view.Snapshot { return j.snap }
func (j *runJob) did(op string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ops = append(j.ops, op)
}
func (j *runJob) TriggerCheckpoint() (int64, error) { j.did("checkpoint"); return 9, nil }
func (j *runJob) TriggerSavepoint() (int64, error) {
	j.did("savepoint")
	if j.refuse != nil {
		return 0, j.refuse
	}
	return 10, nil
}
func (j *runJob) Stop(savepoint bool) { j.did(fmt.Sprint("stop ", savepoint)) }
func (j *runJob) Cancel()             { j.did("cancel") }
func (j *runJob) Config() map[string]string {
	return map[string]string{"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "3",
		"restart-strategy.fixed-delay.delay": "1 s", "jobmanager.execution.failover-strategy": "full"}
}

// runSnapshot is a run of a source, a join and a sink with one completed
// checkpoint whose join subtasks aligned, and a failure behind it.
func runSnapshot() view.Snapshot {
	t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	s := view.Snapshot{Now: t0.Add(time.Minute), Started: t0, Tasks: map[string]view.Task{},
		Job: view.JobInfo{Name: "orders", Status: "RUNNING", StatusSince: t0.Add(30 * time.Second), Mode: "exactly-once",
			Interval: 2 * time.Second, CheckpointSettings: view.CheckpointSettings{CheckpointTimeout: time.Minute, MaxConcurrent: 1}},
		Operators: []view.Operator{
			{Name: "orders", Type: "source", Parallelism: 2},
			{Name: "join", Type: "join", Parallelism: 2, Inputs: []view.Edge{{From: "orders", Kind: "hash"}, {From: "orders", Kind: "hash"}}},
			{Name: "sink", Type: "sink", Parallelism: 1, Inputs: []view.Edge{{From: "join", Kind: "rebalance"}}},
		},
		Restart: view.Restart{Restarts: 1, Failures: []view.Failure{{At: t0.Add(20 * time.Second), Task: "join/1", Error: "join/1: injected fault: panic"}}}}
	acks := map[string]view.SubtaskAck{}
	for _, op := range s.Operators {
		for i := range op.Parallelism {
			name := fmt.Sprintf("%s/%d", op.Name, i)
			s.Tasks[name] = view.Task{Name: name, Operator: op.Name, Index: i, Status: "RUNNING", RecordsIn: int64(100 * (i + 1)),
				RecordsOut: 50, Restarts: 1, Busy: 0.25, BackPressureRatio: 0.6, BackPressure: view.BackPressureHigh, Watermark: 1_800_000_000_000}
			acks[name] = view.SubtaskAck{Alignment: time.Duration(i+3) * time.Millisecond, SyncDuration: time.Millisecond,
				AsyncDuration: 5 * time.Millisecond, Bytes: 1000, IncrementalBytes: 100, AckTime: t0.Add(41 * time.Second), EndToEnd: 40 * time.Millisecond}
		}
	}
	s.Checkpoints = view.Checkpoints{Completed: 1, LastCompleted: 4, History: []view.Checkpoint{
		{ID: 4, Status: view.StatusCompleted, TriggerTime: t0.Add(40 * time.Second), EndTime: t0.Add(41 * time.Second),
			Duration: 40 * time.Millisecond, Acked: 5, Total: 5, AckedTasks: acks, FullBytes: 5000, IncrementalBytes: 500}}}
	return s
}

// attach reads a faultline run's REST API as it reads Flink's: the same
// operators, subtasks, checkpoint with each subtask's figures, failure and
// restart strategy; and its keys reach the run.
func TestAttachToARunShowsWhatTheRunShows(t *testing.T) {
	job := &runJob{snap: runSnapshot()}
	a := dialRun(t, job)
	got, want := a.Snapshot(), job.snap
	for i, op := range want.Operators {
		g := got.Operators[i]
		if g.Name != op.Name || g.Type != op.Type || g.Parallelism != op.Parallelism || fmt.Sprint(g.Inputs) != fmt.Sprint(op.Inputs) {
			t.Fatalf("operator %d: %+v, want %+v", i, g, op)
		}
	}
	for name, w := range want.Tasks {
		g := got.Tasks[name]
		if g.Status != w.Status || g.RecordsIn != w.RecordsIn || g.RecordsOut != w.RecordsOut || g.Restarts != w.Restarts ||
			g.BackPressure != w.BackPressure || g.Watermark != w.Watermark {
			t.Fatalf("%s: %+v, want %+v", name, g, w)
		}
	}
	gc, wc := got.Checkpoints.History[0], want.Checkpoints.History[0]
	if gc.ID != wc.ID || gc.Status != wc.Status || gc.Duration != wc.Duration || len(gc.AckedTasks) != len(wc.AckedTasks) {
		t.Fatalf("checkpoint %+v, want %+v", gc, wc)
	}
	for name, w := range wc.AckedTasks {
		if g := gc.AckedTasks[name]; g.Alignment != w.Alignment || g.AsyncDuration != w.AsyncDuration || g.Bytes != w.Bytes {
			t.Fatalf("%s's part of checkpoint 4: %+v, want %+v", name, g, w)
		}
	}
	if got.Job.Mode != "exactly-once" || got.Job.Interval != 2*time.Second || got.Job.CheckpointTimeout != time.Minute ||
		got.Restart.Description != "fixed-delay (attempts 3, delay 1 s)" || got.Restart.Failover != "full" ||
		len(got.Restart.Failures) != 1 || got.Restart.Failures[0].Task != "join/1" || got.Job.Attempt != 2 {
		t.Fatalf("job %+v, restart %+v", got.Job, got.Restart)
	}
	drive(t, a)
	job.mu.Lock()
	defer job.mu.Unlock()
	if fmt.Sprint(job.ops) != "[checkpoint savepoint stop true cancel]" {
		t.Fatalf("the run was asked %q", job.ops)
	}
}

// dialRun serves job's REST API, as a run does, and attaches to it.
func dialRun(t *testing.T, job *runJob) *Attached {
	t.Helper()
	srv, err := rest.Serve("127.0.0.1:0", rest.NewJobID(), job)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	a, err := Dial(context.Background(), Options{URL: srv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// drive presses what the keys press.
func drive(t *testing.T, a *Attached) {
	t.Helper()
	if _, err := a.TriggerCheckpoint(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.TriggerSavepoint(); err != nil {
		t.Fatal(err)
	}
	if err := a.StopWithSavepoint(); err != nil {
		t.Fatal(err)
	}
	if err := a.Cancel(); err != nil {
		t.Fatal(err)
	}
	for _, act := range []tui.Action{tui.ActionMode, tui.ActionPause, tui.ActionTempo, tui.ActionRate, tui.ActionRestarts} {
		if a.Unavailable(act) == "" {
			t.Fatalf("%s is said to be available on an attached job", act)
		}
	}
	if err := a.Inject("panic", "join/0"); err == nil {
		t.Fatal("a fault without a control topic was taken")
	}
}

// A savepoint the job takes the request for and then cannot take is told
// in the events, with Flink's reason, though the key's request was taken.
func TestAFailedSavepointIsToldInTheEvents(t *testing.T) {
	job := &runJob{snap: runSnapshot(), refuse: errors.New("a savepoint is refused while the job restarts")}
	a := dialRun(t, job)
	for len(a.events) > 0 {
		<-a.events
	}
	if _, err := a.TriggerSavepoint(); err != nil {
		t.Fatalf("the request was not taken: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ans, err := a.fetcher.poll(context.Background(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		a.apply(context.Background(), ans)
		for len(a.events) > 0 {
			if n, ok := (<-a.events).Event.(view.Notice); ok {
				if !strings.Contains(n.Text, "the savepoint asked for with s failed: ") || !strings.Contains(n.Text, "refused while the job restarts") {
					t.Fatalf("notice %q", n.Text)
				}
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("no notice of the failed savepoint in 10s")
}

// The API going away is told once in the events, and said in the header
// unless the job had ended; its coming back is told too.
func TestAnAPIThatStopsAnsweringIsSaid(t *testing.T) {
	job := &runJob{snap: runSnapshot()}
	srv, err := rest.Serve("127.0.0.1:0", rest.NewJobID(), job)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Dial(context.Background(), Options{URL: srv.Addr(), Period: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for len(a.events) > 0 {
		<-a.events
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	srv.Close()
	e := <-a.events
	if n, ok := e.Event.(view.Notice); !ok || !strings.Contains(n.Text, "does not answer") {
		t.Fatalf("after the API went away: %+v", e.Event)
	}
	if got := a.Snapshot().Job.Status; got != "UNREACHABLE" {
		t.Fatalf("the header says %s, want UNREACHABLE", got)
	}
	a.mu.Lock()
	a.snap.Job.Status = "CANCELED"
	a.mu.Unlock()
	if got := a.Snapshot().Job.Status; got != "CANCELED" {
		t.Fatalf("a job seen CANCELED is said %s once its API is gone", got)
	}
}
