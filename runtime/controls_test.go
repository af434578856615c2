package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/barrier"
	"github.com/faultline-dev/faultline/runtime/verify"
)

// elapse lets d pass on the clock of a run's bubble (run.do, in
// testing/synctest): every goroutine of the job runs until it blocks, and
// the fake clock jumps; no real time passes. It panics outside a bubble,
// whose clock would make the test sleep for real.
func elapse(d time.Duration) {
	if time.Now().Year() != 2000 { // a bubble's clock starts at 2000-01-01 UTC
		panic("elapse outside a testing/synctest bubble: it would sleep for real")
	}
	time.Sleep(d)
}

// waitFor polls cond until it holds or the deadline passes: in a run's
// bubble on its fake clock; in a run on the wall clock (run.realTime,
// the CPU-bound runs) on that, the one place the engine's tests sleep.
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
	r := (&run{realTime: true, records: 40000, rate: 20000, interval: 50 * time.Millisecond, during: func(j *Job) {
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
	r := (&run{realTime: true, records: 60000, rate: 30000, interval: 100 * time.Millisecond, during: func(j *Job) {
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

// A switch to at-least-once while an exactly-once checkpoint is pending:
// that checkpoint, triggered before the switch, completes after it and
// must not end the at-least-once period; the duplicates a failure then
// brings (restoring an at-least-once checkpoint) are at-least-once's, and
// the verdict holds. Switching back, the first exactly-once checkpoint
// triggered after the switch ends the period.
func TestAtLeastOncePeriodIsEndedByTheCheckpointsTriggeredAfter(t *testing.T) {
	periods, _ := verify.LoadPeriods("")
	open := func() bool {
		s := periods.Spans()
		return len(s) > 0 && s[len(s)-1].To == 0
	}
	// Input for up to 20 s: the at-least-once checkpoint with records past
	// its barrier and the failure after it need input still flowing,
	// however busy the machine is; the run is canceled once they were seen.
	r := (&run{records: 400000, rate: 20000, interval: 100 * time.Millisecond, periods: periods, cancelAfterDuring: true,
		faults: []string{"after-records=1000,task=join/0,fault=slow,factor=10,for=6s"},
		during: func(j *Job) {
			var pending int64
			waitFor(t, "a checkpoint pending at the slowed join", func() bool {
				for _, c := range j.coord.Stats().History {
					if c.Status == checkpoint.StatusPending && c.Acked > 0 {
						pending = c.ID
						return true
					}
				}
				return false
			})
			j.SetMode(barrier.AtLeastOnce, false)
			waitFor(t, "the pending checkpoint to complete", func() bool { return j.coord.Stats().LastCompleted >= pending })
			if !open() {
				t.Errorf("checkpoint %d, triggered exactly-once before the switch, ended the at-least-once period: %v", pending, periods.Spans())
			}
			from := j.coord.NextID()
			waitFor(t, "an at-least-once checkpoint with records past its barrier", func() bool {
				for _, c := range j.coord.Stats().History {
					if c.ID >= from && c.Status == checkpoint.StatusCompleted && afterBarrier(c) > 0 {
						return true
					}
				}
				return false
			})
			if err := j.Inject(Fault{Kind: FaultPanic, Task: "join/1"}); err != nil {
				t.Error(err)
			}
			waitFor(t, "the restart", func() bool { return j.RestartView().Restarts >= 1 })
			j.SetMode(barrier.ExactlyOnce, false)
			back := j.coord.NextID()
			waitFor(t, "an exactly-once checkpoint again", func() bool { return j.coord.Stats().LastCompleted >= back })
			if open() {
				t.Errorf("checkpoint %d, triggered exactly-once after the switch back, did not end the period: %v", back, periods.Spans())
			}
		}}).do(t)
	if r.res.Status != JobCanceled || !r.verify.OK || r.verify.Lost != 0 || r.verify.Expected == 0 {
		t.Fatalf("status %s verify %+v", r.res.Status, r.verify)
	}
	// The failure's duplicates, when it restored a checkpoint with records
	// past its barrier (a newer one may have completed first), are all
	// at-least-once's.
	if r.verify.Duplicates != r.verify.DuplicatesAtLeastOnce {
		t.Fatalf("verify %+v: duplicates beyond at-least-once's", r.verify)
	}
	t.Logf("verify %+v, periods %v", r.verify, periods.Spans())
}

// afterBarrier adds up the records c's subtasks handled past its barrier.
func afterBarrier(c checkpoint.CheckpointStats) int64 {
	var n int64
	for _, a := range c.AckedTasks {
		n += a.AfterBarrier
	}
	return n
}

// Inject leaves room in the fault queue for every configured fault: the
// UI's faults past 64 waiting are refused, so that a timed or
// after-checkpoints fault is always queued without waiting.
func TestInjectLeavesRoomForTheConfiguredFaults(t *testing.T) {
	faults := []Fault{{Kind: FaultPanic, Task: "join/0", AfterCheckpoints: 1}, {Kind: FaultPanic, Task: "join/1", After: time.Hour}}
	gen := newTestInput(1, 10, 0)
	env := &Env{Sources: map[string]Source{}, Outputs: map[string]TxnOutput{"revenue": NewMemoryOutput()}}
	for _, topic := range []string{topicOrders, topicPayments} {
		src, err := gen.Source(topic)
		if err != nil {
			t.Fatal(err)
		}
		env.Sources[topic] = src
	}
	j, err := New(Config{Types: testJob.Types, Job: testJob.Spec(), Env: env, Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for range 100 {
		if j.Inject(Fault{Kind: FaultPanic, Task: "join/1"}) == nil {
			taken++
		}
	}
	if taken != 64 || cap(j.faultCh)-len(j.faultCh) != len(faults) {
		t.Fatalf("%d injected, room for %d of the %d configured faults", taken, cap(j.faultCh)-len(j.faultCh), len(faults))
	}
}
