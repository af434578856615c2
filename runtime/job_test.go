package runtime

import (
	"cmp"
	"context"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/clock"
	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/barrier"
	"github.com/faultline-dev/faultline/runtime/fault"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/verify"
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
	// realTime runs the job on the wall clock. Otherwise it runs in a
	// synctest bubble, where time moves only when every goroutine of the
	// test waits: a run that waits on its clock (rates, restart delays,
	// intervals, a frozen world) takes milliseconds, the same way every
	// time, and nothing counts time the job spent computing. A run that
	// mostly computes (its input at a high rate, failures one after the
	// other) is quicker on the wall clock, where it computes while the
	// input comes, and sets realTime: under -race, measured, such runs
	// take two to three times as long in a bubble.
	realTime bool
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
	if r.realTime || r.clk != nil {
		return r.doHere(t)
	}
	synctest.Test(t, func(t *testing.T) { r.doHere(t) })
	return r
}

// doHere is do in the test's own time.
func (r *run) doHere(t *testing.T) *run {
	t.Helper()
	if r.job == nil {
		r.job = testJob.Spec()
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
	gen := newTestInput(r.seed, r.records, r.rate)
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
		f, err := fault.Parse(s)
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
	j, err := New(Config{Types: testJob.Types,
		Job: r.job, Env: env, Mode: r.mode, Unaligned: r.unaligned, AlignedTimeout: r.alignedTimeout, Observer: obs, Clock: clk,
		StateConfig: StateConfig{StateBackend: r.backend, WorkDir: t.TempDir()},
		Checkpoint:  checkpoint.Config{Interval: r.interval, Timeout: time.Minute},
		Restart:     cmp.Or[restart.BackoffStrategy](r.backoff, restart.NewFixedDelay(r.attempts, 10*time.Millisecond)),
		Failover:    r.failover,
		Faults:      faults,
		AtLeastOnce: r.periods,
		LoadEvery:   r.loadEvery,
		Hooks: Hooks{Crash: crash, AfterTeardown: func(_ int64, live int64) {
			r.live = append(r.live, live)
		}},
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
	l, err := verify.New(expect)
	if err != nil {
		t.Fatal(err)
	}
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
	r := (&run{realTime: true, records: 60000, rate: 40000, interval: 100 * time.Millisecond, backend: "badger", faults: []string{
		"after-records=9000,task=join/1,fault=panic",
		"after-records=8000,task=revenue/0,fault=error",
	}}).do(t)
	if r.res.Status != JobFinished || r.res.Restarts < 2 || !r.verify.OK || len(r.res.RestoredFrom) == 0 {
		t.Fatalf("status %s restarts %d restored %v verify %+v", r.res.Status, r.res.Restarts, r.res.RestoredFrom, r.verify)
	}
}

func TestNoGoroutineOutlivesItsAttempt(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := (&run{realTime: true, records: 40000, rate: 40000, interval: 100 * time.Millisecond, faults: []string{
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
	job, err := spec.Load("../fixtures/jobs/pipeline.yaml", testJob.Catalogue)
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
	job := testJob.Spec()
	gen, out, env := genEnv(7, 0, 20000)
	j, err := New(Config{Types: testJob.Types, Job: job, Env: env, Checkpoint: checkpoint.Config{Interval: 50 * time.Millisecond}})
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
	job, err := spec.Load("../fixtures/jobs/pipeline.yaml", testJob.Catalogue)
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
	r := (&run{realTime: true, records: 40000, rate: 20000, interval: 100 * time.Millisecond, faults: []string{
		"after=300ms,task=join/0,fault=panic",
		"after=300ms,task=join/1,fault=panic",
	}}).do(t)
	if r.res.Status != JobFinished || len(r.res.Failures) != 2 || !r.verify.OK {
		t.Fatalf("status %s failures %+v verify %+v", r.res.Status, r.res.Failures, r.verify)
	}
}
