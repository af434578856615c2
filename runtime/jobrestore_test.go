package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/fault"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/verify"
	"github.com/faultline-dev/faultline/runtime/view"
)

// A damaged newest checkpoint is passed over: recovery restores the one
// before it and says so. Nothing is lost; what the damaged checkpoint had
// already committed is written again (the price of falling back).
func TestRecoveryFallsBackFromADamagedCheckpoint(t *testing.T) {
	job := testJob.Spec()
	gen, out, env := genEnv(1, 60000, 30000)
	store := checkpoint.NewMemoryStore(3)
	var damaged int64
	fault, _ := fault.Parse("after-records=12000,task=join/1,fault=panic")
	obs := NewObserver(nil, 1<<16)
	j, err := New(Config{Types: testJob.Types,
		Job: job, Env: env, Store: store, Observer: obs, Faults: []Fault{fault},
		Checkpoint: checkpoint.Config{Interval: 50 * time.Millisecond},
		Restart:    restart.NewFixedDelay(3, 10*time.Millisecond),
		Hooks: Hooks{AfterTeardown: func(attempt, _ int64) {
			if attempt != 1 {
				return
			}
			all, _ := store.All(context.Background())
			if len(all) < 2 {
				t.Errorf("only %d checkpoints before the failure", len(all))
				return
			}
			newest := all[len(all)-1]
			damaged = newest.ID
			for _, ack := range newest.Tasks {
				store.Corrupt(ack.Handle.Key)
				break
			}
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var invalid []view.CheckpointInvalid
	var restored []view.Restored
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range obs.Events() {
			switch ev := e.Event.(type) {
			case view.CheckpointInvalid:
				invalid = append(invalid, ev)
			case view.Restored:
				restored = append(restored, ev)
			}
		}
	}()
	res, err := j.Run(context.Background(), RunOptions{})
	obs.Close()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RestoredFrom) != 1 || res.RestoredFrom[0] >= damaged || res.RestoredFrom[0] == 0 {
		t.Fatalf("restored from %v, want one checkpoint before the damaged %d", res.RestoredFrom, damaged)
	}
	if len(invalid) == 0 || invalid[0].ID != damaged {
		t.Fatalf("checkpoint_invalid events %v, want one for %d", invalid, damaged)
	}
	// The restore says which checkpoint it passed over, and the history
	// shows it damaged from then on.
	if len(restored) != 1 || len(restored[0].PassedOver) == 0 || restored[0].PassedOver[0] != damaged {
		t.Fatalf("restored events %+v, want one passing over %d", restored, damaged)
	}
	marked := false
	for _, c := range j.coord.Stats().History {
		if c.ID == damaged {
			marked = c.Damaged != ""
		}
	}
	if !marked {
		t.Fatalf("checkpoint %d is not marked damaged in the history", damaged)
	}
	v, err := verify.Verify(context.Background(), gen, verify.ExpectOf(job), "exactly-once", nil, out.Committed())
	if err != nil || v.Lost != 0 || v.Unexpected != 0 {
		t.Fatalf("verify %+v %v", v, err)
	}
}

// A job stopped with a savepoint at parallelism 2 on heap state continues
// from it at parallelism 3 and at 1, and with its keyed state in Badger
// (keyed state moves by key group in one canonical format, source offsets
// by partition, the sink's transactions to the subtask that now owns them),
// and the committed output ends up exact.
func TestSavepointRestoresAtOtherParallelisms(t *testing.T) {
	for _, tc := range []struct {
		p       int
		backend string
	}{{3, "heap"}, {1, "heap"}, {2, "badger"}, {3, "badger"}} {
		p := tc.p
		t.Run(fmt.Sprintf("to parallelism %d on %s", p, tc.backend), func(t *testing.T) {
			gen, out, env := genEnv(4, 30000, 20000)
			store := checkpoint.NewMemoryStore(3)
			newJob := func(job *spec.Job, backend string) (*Job, *Observer) {
				obs := NewObserver(nil, 1<<16)
				go func() {
					for range obs.Events() {
					}
				}()
				j, err := New(Config{Types: testJob.Types, Job: job, Env: env, Store: store, Observer: obs, StateConfig: StateConfig{StateBackend: backend, WorkDir: t.TempDir()},
					Checkpoint: checkpoint.Config{Interval: 50 * time.Millisecond}})
				if err != nil {
					t.Fatal(err)
				}
				return j, obs
			}
			// First run: stopped part way, with a savepoint.
			j1, obs1 := newJob(testJob.Spec(), "heap")
			ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
			defer cancel()
			res1, err := j1.Run(ctx, RunOptions{SavepointOnExit: true})
			obs1.Close()
			if err != nil || res1.Status != JobCanceled || res1.ExitSavepoint == 0 {
				t.Fatalf("first run: %v status %s savepoint %d", err, res1.Status, res1.ExitSavepoint)
			}
			// Second run: another parallelism, from the savepoint.
			job := testJob.Spec()
			if err := job.SetParallelisms(map[string]int{"join": p, "revenue": p}); err != nil {
				t.Fatal(err)
			}
			j2, obs2 := newJob(job, tc.backend)
			res2, err := j2.Run(context.Background(), RunOptions{FromSavepoint: res1.ExitSavepoint})
			obs2.Close()
			if err != nil || res2.Status != JobFinished || res2.Resumed != res1.ExitSavepoint {
				t.Fatalf("second run: %v status %s resumed %d", err, res2.Status, res2.Resumed)
			}
			if res2.RecordsIn == 0 || res2.RecordsIn >= 30000 {
				t.Fatalf("the second run read %d records; it should go on from the savepoint, not start over", res2.RecordsIn)
			}
			v, err := verify.Verify(context.Background(), gen, verify.ExpectOf(job), "exactly-once", nil, out.Committed())
			if err != nil || !v.OK {
				t.Fatalf("verify %+v %v", v, err)
			}
		})
	}
}

func TestFromSavepointChecksItsOperators(t *testing.T) {
	_, _, env := genEnv(4, 20000, 20000)
	store := checkpoint.NewMemoryStore(3)
	obs := NewObserver(nil, 1<<16)
	go func() {
		for range obs.Events() {
		}
	}()
	j, _ := New(Config{Types: testJob.Types, Job: testJob.Spec(), Env: env, Store: store, Observer: obs, Checkpoint: checkpoint.Config{Interval: 50 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := j.Run(ctx, RunOptions{SavepointOnExit: true})
	if err != nil || res.ExitSavepoint == 0 {
		t.Fatalf("%v %+v", err, res)
	}
	// A job without the revenue operator cannot take the savepoint's revenue state…
	yaml := strings.Replace(testJob.YAML, "name: revenue", "name: totals", 1)
	yaml = strings.Replace(yaml, "from: revenue", "from: totals", 1)
	other, err := spec.Parse("renamed.yaml", []byte(yaml), testJob.Catalogue)
	if err != nil {
		t.Fatal(err)
	}
	j2, _ := New(Config{Types: testJob.Types, Job: other, Env: env, Store: store, Observer: obs})
	if _, err := j2.Run(context.Background(), RunOptions{FromSavepoint: res.ExitSavepoint}); err == nil || !strings.Contains(err.Error(), "revenue") {
		t.Fatalf("restore into a job without revenue: %v", err)
	}
	// …unless told to drop it.
	j3, _ := New(Config{Types: testJob.Types, Job: other, Env: env, Store: store, Observer: obs, Checkpoint: checkpoint.Config{Interval: 50 * time.Millisecond}})
	if res3, err := j3.Run(context.Background(), RunOptions{FromSavepoint: res.ExitSavepoint, AllowNonRestoredState: true}); err != nil || res3.Status != JobFinished {
		t.Fatalf("with AllowNonRestoredState: %v", err)
	}
	if _, err := j3.Run(context.Background(), RunOptions{FromSavepoint: 999}); !errors.Is(err, ErrNoSavepoint) {
		t.Fatalf("unknown savepoint: %v", err)
	}
	obs.Close()
}

// Incremental checkpoints on the Badger backend: checkpoints after the
// first store only what changed, recovery composes the chain, and the output
// stays exact.
func TestIncrementalCheckpointsRestoreFromTheirChain(t *testing.T) {
	job := testJob.Spec()
	gen, out, env := genEnv(2, 40000, 40000)
	store := checkpoint.NewMemoryStore(3)
	fault, _ := fault.Parse("after-records=7000,task=revenue/1,fault=panic")
	obs := NewObserver(nil, 1<<16)
	go func() {
		for range obs.Events() {
		}
	}()
	var chained bool
	j, err := New(Config{Types: testJob.Types,
		Job: job, Env: env, Store: store, Observer: obs, Faults: []Fault{fault},
		// MaxChain: never a full one again, so the newest is incremental.
		StateConfig: StateConfig{StateBackend: "badger", WorkDir: t.TempDir(), Incremental: true, MaxChain: 1 << 20},
		Checkpoint:  checkpoint.Config{Interval: 50 * time.Millisecond},
		Restart:     restart.NewFixedDelay(3, 10*time.Millisecond),
		Hooks: Hooks{AfterTeardown: func(attempt, _ int64) {
			if attempt != 1 {
				return
			}
			latest, _ := store.Latest(context.Background())
			for id, ack := range latest.Tasks {
				if id.Operator == "revenue" && len(ack.Chain) > 0 && ack.IncrementalBytes < ack.Bytes {
					chained = true
				}
			}
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := j.Run(context.Background(), RunOptions{})
	obs.Close()
	if err != nil || res.Status != JobFinished || len(res.RestoredFrom) != 1 || res.RestoredFrom[0] == 0 {
		t.Fatalf("%v status %s restored %v", err, res.Status, res.RestoredFrom)
	}
	if !chained {
		t.Fatal("the checkpoint restored from had no incremental snapshot of revenue")
	}
	v, err := verify.Verify(context.Background(), gen, verify.ExpectOf(job), "exactly-once", nil, out.Committed())
	if err != nil || !v.OK {
		t.Fatalf("verify %+v %v", v, err)
	}
}
