package runtime

import (
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/view"
)

// completedCheckpoints are the checkpoint_completed events of a run.
func completedCheckpoints(evs []Event) []view.CheckpointCompleted {
	var out []view.CheckpointCompleted
	for _, e := range evs {
		if c, ok := e.Event.(view.CheckpointCompleted); ok {
			out = append(out, c)
		}
	}
	return out
}

// untilFirstFinished are the events before the first subtask finished.
func untilFirstFinished(evs []Event) []Event {
	for i, e := range evs {
		if s, ok := e.Event.(view.TaskStatus); ok && s.Status == "FINISHED" {
			return evs[:i]
		}
	}
	return evs
}

// Unaligned checkpoints under back-pressure (a slowed join subtask) with
// failures in a join and a revenue subtask: the barriers overtake the
// queued records, which are stored with the snapshots and replayed into
// their channels on restore, and the output is exactly once.
func TestUnalignedCheckpointsThroughFailures(t *testing.T) {
	r := (&run{records: 40000, rate: 20000, interval: 100 * time.Millisecond, unaligned: true,
		faults: []string{
			"after-records=1000,task=join/0,fault=slow,factor=20,for=2s",
			"after-records=6000,task=join/1,fault=panic",
			"after-records=4000,task=revenue/0,fault=panic",
		}}).do(t)
	if r.res.Status != JobFinished || !r.verify.OK || r.verify.Duplicates != 0 || r.verify.Lost != 0 {
		t.Fatalf("status %s verify %+v", r.res.Status, r.verify)
	}
	if r.res.Restarts < 2 {
		t.Fatalf("%d restarts, want the two panics", r.res.Restarts)
	}
	if !r.res.Unaligned {
		t.Fatal("the result does not say the run used unaligned checkpoints")
	}
	var persisted int64
	for _, c := range completedCheckpoints(untilFirstFinished(r.events)) {
		// Once subtasks finish, a checkpoint may be left with only those
		// of one input channel: nothing to align, nothing to overtake.
		if !c.Unaligned && c.Kind == "checkpoint" {
			t.Errorf("checkpoint %d completed aligned in an unaligned run", c.ID)
		}
		persisted = max(persisted, c.PersistedInFlightBytes)
	}
	if persisted == 0 {
		t.Fatal("no checkpoint stored in-flight records, though the join was slowed")
	}
	t.Logf("%d restarts, most in-flight data in one checkpoint %d bytes", r.res.Restarts, persisted)
}

// With the aligned-checkpoint timeout, checkpoints start aligned: those
// that a slowed join subtask holds up past the timeout switch to unaligned
// on their way, the others complete aligned, and the output is exactly
// once through a failure.
func TestAlignedTimeoutSwitchesSlowCheckpoints(t *testing.T) {
	r := (&run{records: 40000, rate: 20000, interval: 100 * time.Millisecond, alignedTimeout: 100 * time.Millisecond,
		faults: []string{
			"after-records=8000,task=join/0,fault=slow,factor=20,for=1s",
			"after-records=12000,task=join/1,fault=panic",
		}}).do(t)
	if r.res.Status != JobFinished || !r.verify.OK || r.verify.Duplicates != 0 || r.verify.Lost != 0 {
		t.Fatalf("status %s verify %+v", r.res.Status, r.verify)
	}
	var aligned, timedOut []int64
	for _, c := range completedCheckpoints(r.events) {
		switch {
		case len(c.TimedOut) > 0:
			timedOut = append(timedOut, c.ID)
			if !c.Unaligned {
				t.Errorf("checkpoint %d timed out at %v but does not say it became unaligned", c.ID, c.TimedOut)
			}
		case !c.Unaligned:
			aligned = append(aligned, c.ID)
		}
	}
	if len(aligned) == 0 || len(timedOut) == 0 {
		t.Fatalf("aligned checkpoints %v, timed out to unaligned %v: want some of each", aligned, timedOut)
	}
	if !r.res.Unaligned {
		t.Fatal("the result does not say the run used unaligned checkpoints")
	}
	t.Logf("aligned %v; timed out to unaligned %v", aligned, timedOut)
}

// A savepoint is always aligned, as in Flink: in an unaligned run with a
// slowed join subtask, the savepoint's barriers queue behind the records
// and it stores nothing in flight, while the checkpoints around it do.
func TestSavepointIsAlwaysAligned(t *testing.T) {
	var sp int64
	r := (&run{records: 40000, rate: 20000, interval: 100 * time.Millisecond, unaligned: true,
		faults: []string{"after-records=1000,task=join/0,fault=slow,factor=10,for=2s"},
		during: func(j *Job) {
			waitFor(t, "an unaligned checkpoint with in-flight data", func() bool {
				for _, c := range j.coord.Stats().History {
					if c.Status == checkpoint.StatusCompleted && c.PersistedInFlight > 0 {
						return true
					}
				}
				return false
			})
			var err error
			for sp == 0 {
				if sp, err = j.coord.Trigger(checkpoint.KindSavepoint); err != nil {
					elapse(10 * time.Millisecond) // another checkpoint is in progress
				}
			}
		}}).do(t)
	if r.res.Status != JobFinished || !r.verify.OK {
		t.Fatalf("status %s verify %+v", r.res.Status, r.verify)
	}
	for _, c := range completedCheckpoints(r.events) {
		if c.ID == sp {
			if c.Kind != "savepoint" || c.Unaligned || c.PersistedInFlightBytes != 0 {
				t.Fatalf("savepoint %d: %+v, want aligned with nothing in flight", sp, c)
			}
			return
		}
	}
	t.Fatalf("savepoint %d never completed", sp)
}

// Region failover on the pipeline job with unaligned checkpoints: the
// restarted region's channels get the in-flight records of the restored
// checkpoint back, the other regions run on, and the output is exact.
func TestRegionFailoverReplaysTheRegionsInFlightRecords(t *testing.T) {
	job, err := spec.Load("../fixtures/jobs/pipeline.yaml", testJob.Catalogue)
	if err != nil {
		t.Fatal(err)
	}
	// enrich/2 fails once a checkpoint has stored in-flight records: the
	// slowed sink keeps its queue full, so the ones after it do too, and
	// the coordinator stops as the failure reaches the master.
	r := (&run{job: job, records: 40000, rate: 20000, interval: 50 * time.Millisecond, failover: restart.FailoverRegion, unaligned: true,
		faults: []string{"after-records=500,task=sink/2,fault=slow,factor=10,for=5s"},
		during: func(j *Job) {
			waitFor(t, "an unaligned checkpoint with in-flight data", func() bool {
				for _, c := range j.coord.Stats().History {
					if c.Status == checkpoint.StatusCompleted && c.PersistedInFlight > 0 {
						return true
					}
				}
				return false
			})
			if err := j.Inject(Fault{Kind: FaultPanic, Task: "enrich/2"}); err != nil {
				t.Error(err)
			}
		}}).do(t)
	if r.res.Status != JobFinished || !r.verify.OK || r.verify.Duplicates != 0 || r.verify.Lost != 0 {
		t.Fatalf("status %s verify %+v", r.res.Status, r.verify)
	}
	if len(r.res.RestoredFrom) != 1 {
		t.Fatalf("restored from %v, want one checkpoint", r.res.RestoredFrom)
	}
	for _, c := range completedCheckpoints(r.events) {
		if c.ID == r.res.RestoredFrom[0] {
			if c.PersistedInFlightBytes == 0 {
				t.Fatalf("the restored checkpoint %d held nothing in flight: %+v", c.ID, c)
			}
			return
		}
	}
	t.Fatalf("no checkpoint_completed for the restored checkpoint %d", r.res.RestoredFrom[0])
}
