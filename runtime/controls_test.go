package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"faultline/runtime/barrier"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("timed out waiting for %s", what)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func recordsIn(j *Job) int64 { return j.in.Load() }

// The mode switch applies to the checkpoints triggered after it: the store
// records at-least-once for them, exactly-once again after switching back,
// and the output stays complete.
func TestSetModeSwitchesTheNextCheckpoints(t *testing.T) {
	var modes []string
	r := (&run{records: 80000, rate: 20000, interval: 50 * time.Millisecond, during: func(j *Job) {
		waitFor(t, "two checkpoints", func() bool { return j.coord.Stats().Completed >= 2 })
		j.SetMode(barrier.AtLeastOnce, false)
		from := j.coord.NextID()
		waitFor(t, "an at-least-once checkpoint", func() bool { return j.coord.Stats().LastCompleted >= from+1 })
		j.SetMode(barrier.ExactlyOnce, false)
		back := j.coord.NextID()
		waitFor(t, "an exactly-once checkpoint again", func() bool { return j.coord.Stats().LastCompleted >= back+1 })
		all, _ := j.store.All(context.Background())
		for _, c := range all {
			modes = append(modes, c.Mode)
		}
	}}).do(t)
	if r.res.Status != JobFinished || r.verify.Lost != 0 {
		t.Fatalf("status %s verify %+v", r.res.Status, r.verify)
	}
	if r.count("mode_changed") != 2 {
		t.Fatalf("%d mode_changed events, want 2", r.count("mode_changed"))
	}
	sawALO := false
	for _, m := range modes {
		sawALO = sawALO || m == "at-least-once"
	}
	if !sawALO {
		t.Fatalf("retained checkpoints' modes %v: none at-least-once", modes)
	}
}

// Inject is the keyboard's way into the fault catalogue: a panic injected
// while the job runs fails the task and the job recovers exactly.
func TestInjectWhileRunning(t *testing.T) {
	r := (&run{records: 60000, rate: 30000, interval: 100 * time.Millisecond, during: func(j *Job) {
		waitFor(t, "a checkpoint", func() bool { return j.coord.Stats().Completed >= 1 })
		if err := j.Inject(Fault{Kind: FaultPanic, Task: "join/1"}); err != nil {
			t.Error(err)
		}
		if err := j.Inject(Fault{Kind: FaultPanic, Task: "join/9"}); !errors.Is(err, ErrNoSuchTask) {
			t.Errorf("join/9: err = %v, want ErrNoSuchTask", err)
		}
	}}).do(t)
	if r.res.Status != JobFinished || !r.verify.OK || r.res.Restarts != 1 {
		t.Fatalf("status %s restarts %d verify %+v", r.res.Status, r.res.Restarts, r.verify)
	}
	if len(r.res.Failures) != 1 || r.res.Failures[0].Task != "join/1" || r.res.Failures[0].Fault != "panic" {
		t.Fatalf("failures %+v", r.res.Failures)
	}
}

// Idle and back-pressure time are counted per subtask: a slowed join
// back-pressures the parse subtasks that feed it.
func TestTaskTimesAreCounted(t *testing.T) {
	var idle, bp int64
	r := (&run{records: 40000, rate: 20000, interval: 100 * time.Millisecond,
		faults: []string{"after-records=2000,task=join/0,fault=slow,factor=100,for=1s"},
		during: func(j *Job) {
			waitFor(t, "back-pressure", func() bool {
				return j.Metrics()["parse-orders/0"].BackPressuredNanos.Load()+j.Metrics()["parse-orders/1"].BackPressuredNanos.Load() > 0
			})
			for _, m := range j.Metrics() {
				idle += m.IdleNanos.Load()
				bp += m.BackPressuredNanos.Load()
			}
		}}).do(t)
	if r.res.Status != JobFinished {
		t.Fatalf("status %s", r.res.Status)
	}
	if idle == 0 || bp == 0 {
		t.Fatalf("idle %v back-pressured %v", time.Duration(idle), time.Duration(bp))
	}
}
