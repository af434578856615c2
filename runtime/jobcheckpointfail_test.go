package runtime

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/fault"
	"github.com/faultline-dev/faultline/runtime/verify"
	"github.com/faultline-dev/faultline/runtime/view"
)

// storage-fail: checkpoint writes fail, the checkpoints are declined and
// count against the tolerable failures; past them the job fails over and
// recovers.
func TestStorageFailDeclinesCheckpointsThenFailsOver(t *testing.T) {
	_, out, env := genEnv(3, 80000, 40000)
	_ = out
	fault, err := fault.Parse("after=400ms,fault=storage-fail,count=30")
	if err != nil {
		t.Fatal(err)
	}
	obs := NewObserver(nil, 1<<16)
	var failed, storage, thresholds int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range obs.Events() {
			switch ev := e.Event.(type) {
			case view.CheckpointFailed:
				failed++
				if ev.Reason == "storage failure" {
					storage++
				}
			case view.TaskFailed:
				if strings.Contains(ev.Error, "tolerable") {
					thresholds++
				}
			}
		}
	}()
	// Each failed write fails a checkpoint, and how many of the 30 one
	// checkpoint takes depends on how far its other subtasks got: from one
	// (a loaded machine) to all of them. So up to 30 checkpoints fail, and
	// with one tolerated every second fails over: 15 restarts must be
	// allowed for the run to finish however the writes fall. At least
	// ceil(30/subtasks) checkpoints fail, two of them in a row.
	j, err := New(Config{Types: testJob.Types, Job: testJob.Spec(), Env: env, Observer: obs, Faults: []Fault{fault},
		Checkpoint: checkpoint.Config{Interval: 50 * time.Millisecond, TolerableFailures: 1},
		Restart:    restart.NewFixedDelay(15, 10*time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := j.Run(context.Background(), RunOptions{})
	obs.Close()
	<-done
	t.Logf("%d checkpoints failed (%d by storage), %d threshold failovers, %d restarts", failed, storage, thresholds, res.Restarts)
	if err != nil || res.Status != JobFinished {
		t.Fatalf("%v status %s, gave up: %s, failures %+v", err, res.Status, res.GaveUp, res.Failures)
	}
	if storage < 2 || thresholds < 1 || res.Restarts < 1 {
		t.Fatalf("%d checkpoints failed (%d by storage), %d threshold failovers, %d restarts", failed, storage, thresholds, res.Restarts)
	}
}

// A slow join: back-pressure builds, barriers wait behind it, checkpoints
// take longer than their timeout and expire; the job still ends exact.
func TestSlowTaskMakesCheckpointsExpire(t *testing.T) {
	// On fake time (a synctest bubble): the slow subtask holds its records
	// for a stretch of the job's clock, the same on a busy machine.
	synctest.Test(t, func(t *testing.T) {
		gen, out, env := genEnv(5, 60000, 30000)
		fault, err := fault.Parse("after=300ms,task=join/1,fault=slow,factor=200,for=1500ms")
		if err != nil {
			t.Fatal(err)
		}
		obs := NewObserver(nil, 1<<16)
		var expired, slowed int
		done := make(chan struct{})
		go func() {
			defer close(done)
			for e := range obs.Events() {
				switch ev := e.Event.(type) {
				case view.CheckpointFailed:
					if ev.Reason == "expired" {
						expired++
					}
				case view.TaskSlowed:
					slowed++
				}
			}
		}()
		j, err := New(Config{Types: testJob.Types, Job: testJob.Spec(), Env: env, Observer: obs, Faults: []Fault{fault},
			Checkpoint: checkpoint.Config{Interval: 100 * time.Millisecond, Timeout: 150 * time.Millisecond, TolerableFailures: 100}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := j.Run(context.Background(), RunOptions{})
		obs.Close()
		<-done
		if err != nil || res.Status != JobFinished || slowed != 1 {
			t.Fatalf("%v status %s slowed %d", err, res.Status, slowed)
		}
		if expired == 0 {
			t.Fatal("no checkpoint expired while join/1 was slow")
		}
		v, err := verify.Verify(context.Background(), gen, verify.ExpectOf(testJob.Spec()), "exactly-once", nil, out.Committed())
		if err != nil || !v.OK {
			t.Fatalf("verify %+v %v", v, err)
		}
	})
}
