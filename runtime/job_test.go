package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"faultline/checkpoint"
	"faultline/internal/clock"
	"faultline/restart"
	"faultline/runtime/barrier"
	"faultline/runtime/spec"
	"faultline/runtime/verify"
	"faultline/runtime/view"
)

// run is one job run of a test: the real tasks, channels and coordinator on
// the seeded generator and the in-memory transactional output.
type run struct {
	job     *spec.Job
	records int64
	rate    float64
	seed    int64
	mode    barrier.Mode
	// unaligned and alignedTimeout are Config's.
	unaligned      bool
	alignedTimeout time.Duration
	interval       time.Duration
	faults         []string
	attempts       int                     // 0: 10; below 0: none
	backoff        restart.BackoffStrategy // nil: fixed-delay with attempts
	loadEvery      time.Duration
	opts           RunOptions
	backend        string
	failover       restart.FailoverStrategy
	// during, when set, runs in its own goroutine while the job runs.
	during func(j *Job)
	// cancelAfterDuring cancels the run once during returns, as a user's
	// cancel would: a test whose moment comes early does not wait for the
	// rest of its input, and the oracle judges the output of the last
	// checkpoint.
	cancelAfterDuring bool
	// onEvent, when set, sees each event on the goroutine that emits it,
	// as it is emitted.
	onEvent func(j *Job, e Event)
	// clk, when set, is the job's clock and the observer's (nil: the wall
	// clock); the test moves it.
	clk *clock.Fake
	// periods, when set, keeps the job's at-least-once periods, and the
	// verdict judges duplicates by them, as faultline run's does.
	periods *verify.Periods
	// crashEnds has the crash fault end the run's context, as in a tour
	// (Config.Crash), instead of killing the test.
	crashEnds bool

	// filled in by do
	restarts RestartView
	res      *Result
	verify   verify.Verification
	events   []Event
	live     []int64 // goroutines still running after each teardown
}

func (r *run) do(t *testing.T) *run {
	t.Helper()
	if r.job == nil {
		r.job = spec.Default()
	}
	if r.seed == 0 {
		r.seed = 1
	}
	switch {
	case r.attempts == 0:
		r.attempts = 10
	case r.attempts < 0:
		r.attempts = 0 // no restart: the first failure fails the job
	}
	gen := NewGenerator(r.seed, r.records, GeneratorPartitions).WithRate(r.rate)
	env := &Env{Sources: map[string]Source{}, Outputs: map[string]TxnOutput{}}
	outs := map[string]*MemoryOutput{}
	for _, op := range r.job.Operators {
		switch op.Type {
		case spec.TypeSource:
			s, err := gen.Source(op.Topic)
			if err != nil {
				t.Fatal(err)
			}
			env.Sources[op.Topic] = s
		case spec.TypeSink:
			outs[op.Topic] = NewMemoryOutput()
			env.Outputs[op.Topic] = outs[op.Topic]
		}
	}
	var faults []Fault
	for _, s := range r.faults {
		f, err := ParseFault(s)
		if err != nil {
			t.Fatal(err)
		}
		faults = append(faults, f)
	}
	var clk clock.Clock // nil, not a nil *clock.Fake, when unset
	if r.clk != nil {
		clk = r.clk
	}
	obs := NewObserver(clk, 1<<16)
	collected := make(chan []Event)
	var j *Job // set before the run emits its first event
	if r.onEvent != nil {
		obs.tap = func(e Event) { r.onEvent(j, e) }
	}
	go func() {
		var evs []Event
		for e := range obs.Events() {
			evs = append(evs, e)
		}
		collected <- evs
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	crash := func() { t.Error("the crash fault would kill the test") }
	if r.crashEnds {
		crash = cancel
	}
	j, err := New(Config{
		Crash: crash,
		Job:   r.job, Env: env, Mode: r.mode, Unaligned: r.unaligned, AlignedTimeout: r.alignedTimeout, Observer: obs, Clock: clk, StateBackend: r.backend, WorkDir: t.TempDir(),
		Checkpoint:  checkpoint.Config{Interval: r.interval, Timeout: time.Minute},
		Restart:     cmp.Or[restart.BackoffStrategy](r.backoff, restart.NewFixedDelay(r.attempts, 10*time.Millisecond)),
		Failover:    r.failover,
		Faults:      faults,
		AtLeastOnce: r.periods,
		LoadEvery:   r.loadEvery,
		AfterTeardown: func(_ int64, live int64) {
			r.live = append(r.live, live)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.during != nil {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			r.during(j)
			if r.cancelAfterDuring {
				cancel()
			}
		}()
	}
	r.res, err = j.Run(ctx, r.opts)
	r.restarts = j.RestartView()
	obs.Close()
	r.events = <-collected
	if err != nil {
		t.Fatal(err)
	}
	var committed []OutputRecord
	for _, o := range outs {
		committed = append(committed, o.Committed()...)
	}
	var bounds checkpoint.Offsets
	if r.res.Status != JobFinished {
		bounds = checkpoint.Offsets{}
		if r.res.Latest != nil {
			bounds = r.res.Latest.SourceOffsets()
		}
	}
	expect := verify.ExpectOf(r.job)
	l := verify.New(expect.Kind, expect.StateTTL)
	l.Lenient = r.periods
	r.verify, err = verify.VerifyOn(context.Background(), l, gen, r.mode.String(), bounds, committed)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *run) count(event string) int {
	n := 0
	for _, e := range r.events {
		if e.Event.Name() == event {
			n++
		}
	}
	return n
}

func TestExactlyOnceThroughFailures(t *testing.T) {
	defer goleak.VerifyNone(t)
	cases := []struct {
		name   string
		rate   float64
		faults []string
		// restoredFromCheckpoint: the failures come after checkpoints
		// completed, so recovery must restore state, not start over.
		restoredFromCheckpoint bool
	}{
		// Of 30,000 records each subtask of join handles about 15,000,
		// of revenue, parse and the sources about 7,000.
		{name: "join panics (the issue's run)", faults: []string{"after-records=6000,task=join/1,fault=panic"}},
		{name: "revenue panics", faults: []string{"after-records=4500,task=revenue/0,fault=panic"}},
		{name: "parse panics", faults: []string{"after-records=3000,task=parse-orders/1,fault=panic"}},
		{name: "source panics", faults: []string{"after-records=2400,task=payments-source/1,fault=panic"}},
		{name: "join errors after checkpoints", rate: 20000, restoredFromCheckpoint: true,
			faults: []string{"after-records=4500,task=join/1,fault=error"}},
		{name: "three failures in one run", rate: 20000, restoredFromCheckpoint: true, faults: []string{
			"after-records=3600,task=join/1,fault=panic",
			"after-records=4200,task=revenue/0,fault=error",
			"after-records=4800,task=parse-orders/1,fault=panic",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := (&run{records: 30000, rate: tc.rate, interval: 200 * time.Millisecond, faults: tc.faults}).do(t)
			if r.res.Status != JobFinished {
				t.Fatalf("status %s, want FINISHED (failures %+v)", r.res.Status, r.res.Failures)
			}
			if r.res.Restarts < len(tc.faults) {
				t.Fatalf("restarts %d, want at least %d", r.res.Restarts, len(tc.faults))
			}
			if v := r.verify; v.Duplicates != 0 || v.Lost != 0 || v.Unexpected != 0 || !v.OK || v.Expected == 0 {
				t.Fatalf("verify %+v, want exactly every paid order once", v)
			}
			if tc.restoredFromCheckpoint {
				restored := 0
				for _, id := range r.res.RestoredFrom {
					if id > 0 {
						restored++
					}
				}
				if restored == 0 {
					t.Fatalf("restored from %v: no failure came after a completed checkpoint", r.res.RestoredFrom)
				}
			}
			if got := r.count("task_failed"); got != len(tc.faults) {
				t.Fatalf("%d task_failed events, want %d", got, len(tc.faults))
			}
		})
	}
}

// At-least-once never loses a record; without alignment it can commit some
// twice after a recovery, while exactly-once on the same seeds never does.
// join/0 falls to a tenth of its rate, so that the barriers reach the joins
// and revenue at different times: without alignment they take in what was
// sent after a barrier into the checkpoint, and a recovery from that
// checkpoint sends it again.
func TestAtLeastOnceDuplicatesExactlyOnceDoesNot(t *testing.T) {
	faults := []string{
		"after=500ms,task=join/0,fault=slow,factor=10,for=3s",
		"after=1s,after-checkpoints=1,task=join/1,fault=panic",
	}
	dups := 0
	for seed := int64(1); seed <= 4; seed++ {
		for _, mode := range []barrier.Mode{barrier.ExactlyOnce, barrier.AtLeastOnce} {
			r := (&run{records: 60000, rate: 30000, seed: seed, mode: mode, interval: 100 * time.Millisecond, faults: faults}).do(t)
			if r.res.Status != JobFinished || r.verify.Lost != 0 || r.verify.Unexpected != 0 {
				t.Fatalf("seed %d %s: status %s verify %+v", seed, mode, r.res.Status, r.verify)
			}
			if mode == barrier.ExactlyOnce && r.verify.Duplicates != 0 {
				t.Fatalf("seed %d exactly-once: %d duplicates", seed, r.verify.Duplicates)
			}
			if mode == barrier.AtLeastOnce {
				dups += r.verify.Duplicates
				if !r.verify.OK {
					t.Fatalf("seed %d at-least-once: verify %+v not ok; duplicates are allowed, loss is not", seed, r.verify)
				}
			}
		}
		if dups > 0 {
			return
		}
	}
	t.Fatal("at-least-once produced no duplicates in any run; the lesson of the mode is not shown")
}

// The same failures with keyed state in Badger (Flink: the RocksDB backend).
func TestExactlyOnceThroughFailuresOnBadgerState(t *testing.T) {
	r := (&run{records: 60000, rate: 40000, interval: 100 * time.Millisecond, backend: "badger", faults: []string{
		"after-records=9000,task=join/1,fault=panic",
		"after-records=8000,task=revenue/0,fault=error",
	}}).do(t)
	if r.res.Status != JobFinished || r.res.Restarts < 2 || !r.verify.OK || len(r.res.RestoredFrom) == 0 {
		t.Fatalf("status %s restarts %d restored %v verify %+v", r.res.Status, r.res.Restarts, r.res.RestoredFrom, r.verify)
	}
}

func TestNoGoroutineOutlivesItsAttempt(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := (&run{records: 40000, rate: 40000, interval: 100 * time.Millisecond, faults: []string{
		"after-records=5000,task=join/0,fault=panic",
		"after-records=9000,task=sink/0,fault=error",
	}}).do(t)
	if len(r.live) < 3 {
		t.Fatalf("%d teardowns, want 3 (two restarts and the end)", len(r.live))
	}
	for i, n := range r.live {
		if n != 0 {
			t.Fatalf("after teardown %d, %d goroutines of the attempt still run", i+1, n)
		}
	}
}

func TestPipelineJob(t *testing.T) {
	job, err := spec.Load("../fixtures/jobs/pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := (&run{job: job, records: 40000, interval: 50 * time.Millisecond,
		faults: []string{"after-records=3000,task=enrich/2,fault=panic"}}).do(t)
	if r.res.Status != JobFinished || !r.verify.OK || r.verify.Expected == 0 {
		t.Fatalf("status %s verify %+v", r.res.Status, r.verify)
	}
}

func TestCheckpointingOffCommitsAtTheEnd(t *testing.T) {
	r := (&run{records: 30000, interval: 0, faults: []string{"after-records=5000,task=join/0,fault=panic"}}).do(t)
	if r.res.Status != JobFinished || !r.verify.OK || r.res.Restarts != 1 {
		t.Fatalf("status %s restarts %d verify %+v", r.res.Status, r.res.Restarts, r.verify)
	}
	if r.res.Checkpoints.Completed != 0 || len(r.res.RestoredFrom) != 0 || r.count("restored") != 1 {
		t.Fatalf("checkpoints %+v restored %v: with checkpointing off, recovery starts over", r.res.Checkpoints, r.res.RestoredFrom)
	}
}

func TestRestartStrategyGivesUp(t *testing.T) {
	r := (&run{records: 30000, interval: 100 * time.Millisecond, attempts: 1, faults: []string{
		"after-records=2000,task=join/0,fault=panic",
		"after-records=4000,task=join/1,fault=panic",
	}}).do(t)
	if r.res.Status != JobFailed || r.res.GaveUp == "" {
		t.Fatalf("status %s gave up %q, want FAILED with a reason", r.res.Status, r.res.GaveUp)
	}
	if r.verify.Duplicates != 0 || r.verify.Lost != 0 {
		t.Fatalf("verify %+v: the committed output of a failed job must still be exact up to its last checkpoint", r.verify)
	}
}

func TestCancelLeavesExactOutput(t *testing.T) {
	job := spec.Default()
	gen, out, env := genEnv(7, 0, 20000)
	j, err := New(Config{Job: job, Env: env, Checkpoint: checkpoint.Config{Interval: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range j.obs.Events() {
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	res, err := j.Run(ctx, RunOptions{})
	j.obs.Close()
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != JobCanceled || res.Latest == nil {
		t.Fatalf("status %s latest %v", res.Status, res.Latest)
	}
	v, err := verify.Verify(context.Background(), gen, verify.ExpectOf(job), "exactly-once", res.Latest.SourceOffsets(), out.Committed())
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK || v.Expected == 0 {
		t.Fatalf("verify %+v: a canceled run's output must be exactly its last checkpoint's", v)
	}
}

// With checkpointing off, a sink that reached its end must not commit before
// the whole job finished: a failure elsewhere restarts everything from the
// beginning, and what was committed would be written again.
func TestCheckpointingOffLateFailureDoesNotDuplicate(t *testing.T) {
	job, err := spec.Load("../fixtures/jobs/pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := (&run{job: job, records: 40000, interval: 0,
		faults: []string{"after-records=5265,task=sink/3,fault=error"}}).do(t)
	if r.res.Status != JobFinished || r.res.Restarts != 1 || !r.verify.OK {
		t.Fatalf("status %s restarts %d verify %+v", r.res.Status, r.res.Restarts, r.verify)
	}
}

// Two timed faults at the same moment in different tasks: the second fires
// in an attempt that the first is tearing down, and must fire again later.
func TestTimedFaultsAllTakeEffect(t *testing.T) {
	r := (&run{records: 40000, rate: 20000, interval: 100 * time.Millisecond, faults: []string{
		"after=300ms,task=join/0,fault=panic",
		"after=300ms,task=join/1,fault=panic",
	}}).do(t)
	if r.res.Status != JobFinished || len(r.res.Failures) != 2 || !r.verify.OK {
		t.Fatalf("status %s failures %+v verify %+v", r.res.Status, r.res.Failures, r.verify)
	}
}

// A damaged newest checkpoint is passed over: recovery restores the one
// before it and says so. Nothing is lost; what the damaged checkpoint had
// already committed is written again (the price of falling back).
func TestRecoveryFallsBackFromADamagedCheckpoint(t *testing.T) {
	job := spec.Default()
	gen, out, env := genEnv(1, 60000, 30000)
	store := checkpoint.NewMemoryStore(3)
	var damaged int64
	fault, _ := ParseFault("after-records=12000,task=join/1,fault=panic")
	obs := NewObserver(nil, 1<<16)
	j, err := New(Config{
		Job: job, Env: env, Store: store, Observer: obs, Faults: []Fault{fault},
		Checkpoint: checkpoint.Config{Interval: 50 * time.Millisecond},
		Restart:    restart.NewFixedDelay(3, 10*time.Millisecond),
		AfterTeardown: func(attempt, _ int64) {
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
		},
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
				j, err := New(Config{Job: job, Env: env, Store: store, Observer: obs, StateBackend: backend, WorkDir: t.TempDir(),
					Checkpoint: checkpoint.Config{Interval: 50 * time.Millisecond}})
				if err != nil {
					t.Fatal(err)
				}
				return j, obs
			}
			// First run: stopped part way, with a savepoint.
			j1, obs1 := newJob(spec.Default(), "heap")
			ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
			defer cancel()
			res1, err := j1.Run(ctx, RunOptions{SavepointOnExit: true})
			obs1.Close()
			if err != nil || res1.Status != JobCanceled || res1.ExitSavepoint == 0 {
				t.Fatalf("first run: %v status %s savepoint %d", err, res1.Status, res1.ExitSavepoint)
			}
			// Second run: another parallelism, from the savepoint.
			job := spec.Default()
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
	j, _ := New(Config{Job: spec.Default(), Env: env, Store: store, Observer: obs, Checkpoint: checkpoint.Config{Interval: 50 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := j.Run(ctx, RunOptions{SavepointOnExit: true})
	if err != nil || res.ExitSavepoint == 0 {
		t.Fatalf("%v %+v", err, res)
	}
	// A job without the revenue operator cannot take the savepoint's revenue state…
	yaml := strings.Replace(spec.DefaultYAML, "name: revenue", "name: totals", 1)
	yaml = strings.Replace(yaml, "from: revenue", "from: totals", 1)
	other, err := spec.Parse("renamed.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	j2, _ := New(Config{Job: other, Env: env, Store: store, Observer: obs})
	if _, err := j2.Run(context.Background(), RunOptions{FromSavepoint: res.ExitSavepoint}); err == nil || !strings.Contains(err.Error(), "revenue") {
		t.Fatalf("restore into a job without revenue: %v", err)
	}
	// …unless told to drop it.
	j3, _ := New(Config{Job: other, Env: env, Store: store, Observer: obs, Checkpoint: checkpoint.Config{Interval: 50 * time.Millisecond}})
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
	job := spec.Default()
	gen, out, env := genEnv(2, 40000, 40000)
	store := checkpoint.NewMemoryStore(3)
	fault, _ := ParseFault("after-records=7000,task=revenue/1,fault=panic")
	obs := NewObserver(nil, 1<<16)
	go func() {
		for range obs.Events() {
		}
	}()
	var chained bool
	j, err := New(Config{
		Job: job, Env: env, Store: store, Observer: obs, Faults: []Fault{fault},
		StateBackend: "badger", WorkDir: t.TempDir(), Incremental: true,
		MaxChain:   1 << 20, // never a full one again, so the newest is incremental
		Checkpoint: checkpoint.Config{Interval: 50 * time.Millisecond},
		Restart:    restart.NewFixedDelay(3, 10*time.Millisecond),
		AfterTeardown: func(attempt, _ int64) {
			if attempt != 1 {
				return
			}
			latest, _ := store.Latest(context.Background())
			for id, ack := range latest.Tasks {
				if id.Operator == "revenue" && len(ack.Chain) > 0 && ack.IncrementalBytes < ack.Bytes {
					chained = true
				}
			}
		},
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

// storage-fail: checkpoint writes fail, the checkpoints are declined and
// count against the tolerable failures; past them the job fails over and
// recovers.
func TestStorageFailDeclinesCheckpointsThenFailsOver(t *testing.T) {
	_, out, env := genEnv(3, 80000, 40000)
	_ = out
	fault, err := ParseFault("after=400ms,fault=storage-fail,count=30")
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
	j, err := New(Config{Job: spec.Default(), Env: env, Observer: obs, Faults: []Fault{fault},
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
	gen, out, env := genEnv(5, 60000, 30000)
	fault, err := ParseFault("after=300ms,task=join/1,fault=slow,factor=200,for=1500ms")
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
	j, err := New(Config{Job: spec.Default(), Env: env, Observer: obs, Faults: []Fault{fault},
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
	v, err := verify.Verify(context.Background(), gen, verify.ExpectOf(spec.Default()), "exactly-once", nil, out.Committed())
	if err != nil || !v.OK {
		t.Fatalf("verify %+v %v", v, err)
	}
}
