package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"faultline/internal/clock"
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
		j.SetMode(barrier.AtLeastOnce)
		from := j.coord.NextID()
		waitFor(t, "an at-least-once checkpoint", func() bool { return j.coord.Stats().LastCompleted >= from+1 })
		j.SetMode(barrier.ExactlyOnce)
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

// Freezing stops every task before its next batch; a step moves each by
// one batch; normal tempo lets the job finish. The job runs on a fake
// clock, so the generator's rate lets the sources read only as far as the
// test has moved time: the test waits for what the tasks do, never for
// time to pass.
func TestTempoFreezeAndStep(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	sources := map[string]bool{"orders-source/0": true, "orders-source/1": true, "payments-source/0": true, "payments-source/1": true}
	// waiting: every source subtask waits for its rate's next record, and
	// the only other timer is the periodic checkpoint trigger's (no
	// checkpoint was triggered yet: none is pending with its timeout).
	waiting := func() bool { return clk.Pending() == 1+len(sources) }
	r := (&run{records: 40000, rate: 40000, interval: 100 * time.Millisecond, clk: clk, during: func(j *Job) {
		waitFor(t, "the sources waiting for their first records", waiting)
		waitFor(t, "records flowing", func() bool {
			if recordsIn(j) > 2000 {
				return true
			}
			clk.Advance(time.Millisecond) // 10 more records for each source
			return false
		})
		if clk.Now().Sub(start) >= 100*time.Millisecond {
			t.Errorf("the clock passed the first checkpoint's trigger before records flowed")
		}
		// With the clock standing, the sources stop where the rate says,
		// and nothing is left between them and the parse subtasks: the
		// batches a step sends fit in those channels.
		waitFor(t, "the sources waiting again, their channels drained", func() bool {
			return waiting() && sourceChannelsEmpty(j, sources)
		})
		j.SetTempo(TempoFrozen)
		frozen := recordsIn(j)
		idle := map[string]int64{}
		for name := range sources {
			idle[name] = j.Metrics()[name].IdleNanos.Load()
		}
		// A second of the job's time: the rate now lets each source read
		// far more than a batch, and checkpoints are triggered.
		clk.Advance(time.Second)
		// A source whose wait ended counts it as idle time and goes on to
		// the tempo before it reads again.
		waitFor(t, "every source past its wait", func() bool {
			for name := range sources {
				if j.Metrics()[name].IdleNanos.Load() == idle[name] {
					return false
				}
			}
			return true
		})
		if got := recordsIn(j); got != frozen {
			t.Errorf("frozen, yet the sources read %d more records", got-frozen)
		}
		j.Step()
		// One batch per source subtask: 4 sources, batches of 256.
		waitFor(t, "a step", func() bool { return recordsIn(j) >= frozen+4*256 })
		if stepped := recordsIn(j) - frozen; stepped != 4*256 {
			t.Errorf("one step let %d records in, want one batch of 256 per source", stepped)
		}
		j.SetTempo(TempoSlow)
		j.SetTempo(TempoNormal)
		waitFor(t, "the job to finish", func() bool {
			if s := j.Status(); s == JobFinished || s == JobFailed || s == JobCanceled {
				return true
			}
			clk.Advance(10 * time.Millisecond)
			return false
		})
	}}).do(t)
	if r.res.Status != JobFinished || !r.verify.OK {
		t.Fatalf("status %s verify %+v", r.res.Status, r.verify)
	}
	if r.count("tempo_changed") != 3 {
		t.Fatalf("%d tempo_changed events, want 3", r.count("tempo_changed"))
	}
}

// sourceChannelsEmpty reports whether every channel from a subtask in
// sources holds nothing its receiver has not handled.
func sourceChannelsEmpty(j *Job, sources map[string]bool) bool {
	for name := range j.Metrics() {
		ins, _, ok := j.Inputs(name)
		if !ok {
			return false
		}
		for _, in := range ins {
			if sources[in.From] && in.Queue.Queued != 0 {
				return false
			}
		}
	}
	return true
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
