package runtime

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/view"
)

func TestPipelinedRegions(t *testing.T) {
	pipeline, err := spec.Load("../fixtures/jobs/pipeline.yaml", testJob.Catalogue)
	if err != nil {
		t.Fatal(err)
	}
	got := pipelinedRegions(pipeline)
	want := [][]string{
		{"source/0", "enrich/0", "sink/0"},
		{"source/1", "enrich/1", "sink/1"},
		{"source/2", "enrich/2", "sink/2"},
		{"source/3", "enrich/3", "sink/3"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pipeline regions = %v, want %v", got, want)
	}
	// The keyBy edges into the join join every parse subtask to every join
	// subtask, and so on downstream: one region of all 13 subtasks.
	if got := pipelinedRegions(testJob.Spec()); len(got) != 1 || len(got[0]) != 13 {
		t.Errorf("default job regions = %v, want one of 13 subtasks", got)
	}
}

// taskStatuses returns, per subtask, the statuses its task_status events
// went through.
func (r *run) taskStatuses() map[string][]string {
	out := map[string][]string{}
	for _, e := range r.events {
		if ts, ok := e.Event.(view.TaskStatus); ok {
			out[ts.Task] = append(out[ts.Task], ts.Status)
		}
	}
	return out
}

// Region failover on the pipeline job: a failure in enrich/2 restarts
// source/2, enrich/2 and sink/2 only, from the latest checkpoint, while the
// other three pipelines run on untouched; the committed output stays exact.
func TestRegionFailoverRestartsOnlyTheFailedRegion(t *testing.T) {
	defer goleak.VerifyNone(t)
	job, err := spec.Load("../fixtures/jobs/pipeline.yaml", testJob.Catalogue)
	if err != nil {
		t.Fatal(err)
	}
	r := (&run{job: job, records: 40000, rate: 20000, interval: 50 * time.Millisecond, failover: restart.FailoverRegion,
		faults: []string{"after-records=2500,task=enrich/2,fault=panic"}}).do(t)
	if r.res.Status != JobFinished || !r.verify.OK || r.verify.Expected == 0 || r.verify.Duplicates != 0 {
		t.Fatalf("status %s verify %+v", r.res.Status, r.verify)
	}
	if r.res.Restarts != 1 {
		t.Fatalf("restarts %d, want 1", r.res.Restarts)
	}
	region := []string{"source/2", "enrich/2", "sink/2"}
	var failovers []view.Failover
	for _, e := range r.events {
		if f, ok := e.Event.(view.Failover); ok {
			failovers = append(failovers, f)
		}
	}
	if len(failovers) != 1 || fmt.Sprint(failovers[0].Tasks) != fmt.Sprint(region) {
		t.Fatalf("failover events %v, want one restarting %v", failovers, region)
	}
	if !slices.Equal(r.restarts.LastRestarted, region) {
		t.Errorf("RestartView.LastRestarted = %v, want %v", r.restarts.LastRestarted, region)
	}
	for task, statuses := range r.taskStatuses() {
		canceled := slices.Contains(statuses, "CANCELED") || slices.Contains(statuses, "FAILED")
		if slices.Contains(region, task) != canceled {
			t.Errorf("%s went through %v", task, statuses)
		}
	}
	if len(r.res.RestoredFrom) != 1 || r.res.RestoredFrom[0] == 0 {
		t.Errorf("restored from %v, want one completed checkpoint", r.res.RestoredFrom)
	}
	// The job stays RUNNING through a region failover, as in Flink.
	for _, e := range r.events {
		if js, ok := e.Event.(view.JobStatus); ok && js.Status == string(JobRestarting) {
			t.Errorf("job went RESTARTING in a region failover: %+v", js)
		}
	}
}

// On the default job, region failover restarts everything: its only region
// is the whole job.
func TestRegionFailoverOfOneRegionJobRestartsAll(t *testing.T) {
	r := (&run{realTime: true, records: 40000, rate: 40000, interval: 100 * time.Millisecond, failover: restart.FailoverRegion,
		faults: []string{"after-records=6000,task=join/1,fault=panic"}}).do(t)
	if r.res.Status != JobFinished || !r.verify.OK || r.verify.Duplicates != 0 || r.res.Restarts != 1 {
		t.Fatalf("status %s restarts %d verify %+v", r.res.Status, r.res.Restarts, r.verify)
	}
	if len(r.restarts.LastRestarted) != 13 {
		t.Errorf("LastRestarted = %v, want all 13 subtasks", r.restarts.LastRestarted)
	}
}

// Individual failover restarts only the failed subtask from the latest
// checkpoint without replaying its input: a join loses the sides it buffered
// since, a sink the transactions it had open. The job counts the lost paid
// orders itself, and the oracle finds exactly as many.
func TestIndividualFailoverCountsWhatItLoses(t *testing.T) {
	defer goleak.VerifyNone(t)
	cases := []struct {
		name, fault string
		mustLose    bool
		unaligned   bool // with unaligned checkpoints and join/0 slowed: in-flight records in the restored state
	}{
		// Of 30,000 records join/1 handles about 15,000, the sink and
		// each subtask of revenue and parse about 7,000.
		{"join", "after-records=6000,task=join/1,fault=panic", true, false},
		{"join, unaligned", "after-records=6000,task=join/1,fault=panic", true, true},
		{"sink, unaligned", "after-records=2700,task=sink/0,fault=error", true, true},
		{"sink", "after-records=2700,task=sink/0,fault=error", true, false},
		{"revenue", "after-records=2700,task=revenue/0,fault=panic", false, false},
		{"parse", "after-records=2700,task=parse-payments/1,fault=panic", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			faults := []string{tc.fault}
			if tc.unaligned {
				faults = append(faults, "after-records=900,task=join/0,fault=slow,factor=5,for=2s")
			}
			r := (&run{realTime: true, records: 30000, rate: 25000, interval: 300 * time.Millisecond, failover: restart.FailoverIndividual,
				unaligned: tc.unaligned, faults: faults}).do(t)
			if r.res.Status != JobFinished || r.res.Restarts != 1 {
				t.Fatalf("status %s restarts %d", r.res.Status, r.res.Restarts)
			}
			failed := strings.TrimPrefix(strings.Split(tc.fault, ",")[1], "task=")
			if !slices.Equal(r.restarts.LastRestarted, []string{failed}) {
				t.Fatalf("LastRestarted = %v, want only %s", r.restarts.LastRestarted, failed)
			}
			if int64(r.verify.Lost) != r.restarts.LostRecords {
				t.Fatalf("the job says it lost %d records, the oracle finds %d lost (verify %+v)", r.restarts.LostRecords, r.verify.Lost, r.verify)
			}
			if tc.mustLose && r.verify.Lost == 0 {
				t.Fatalf("nothing lost: the failure came with nothing since the checkpoint to lose (verify %+v)", r.verify)
			}
			if r.verify.Duplicates != 0 {
				t.Fatalf("%d duplicates: individual failover of a non-source replays nothing", r.verify.Duplicates)
			}
			var reported int64
			for _, e := range r.events {
				if rl, ok := e.Event.(view.RecordsLost); ok {
					reported += rl.Records
				}
			}
			if reported != r.restarts.LostRecords {
				t.Fatalf("records_lost events add up to %d, RestartView says %d", reported, r.restarts.LostRecords)
			}
			for task, statuses := range r.taskStatuses() {
				if task != failed && slices.Contains(statuses, "CANCELED") {
					t.Errorf("%s was restarted too: %v", task, statuses)
				}
			}
		})
	}
}

// Failover strategy none: the first failure fails the job, whatever the
// restart strategy allows.
func TestFailoverNoneFailsTheJob(t *testing.T) {
	r := (&run{records: 20000, interval: 100 * time.Millisecond, failover: restart.FailoverNone,
		faults: []string{"after-records=3000,task=join/0,fault=panic"}}).do(t)
	if r.res.Status != JobFailed || r.res.Restarts != 0 || !strings.Contains(r.res.GaveUp, "failover strategy none") {
		t.Fatalf("status %s restarts %d gave up %q", r.res.Status, r.res.Restarts, r.res.GaveUp)
	}
}

// A restart of the whole job from checkpoint n makes good the losses of
// individual failovers that went back to n or later (their input is read
// again), not those that went back to an earlier checkpoint.
func TestFullRestartTakesBackTheLossesItReplays(t *testing.T) {
	var err error
	obs := NewObserver(nil, 1<<10)
	gen := newTestInput(1, 1000, 0)
	env := &Env{Sources: map[string]Source{}, Outputs: map[string]TxnOutput{"revenue": NewMemoryOutput()}}
	for _, topic := range []string{topicOrders, topicPayments} {
		if env.Sources[topic], err = gen.Source(topic); err != nil {
			t.Fatal(err)
		}
	}
	j, err := New(Config{Types: testJob.Types, Job: testJob.Spec(), Env: env, Observer: obs, Failover: restart.FailoverIndividual})
	if err != nil {
		t.Fatal(err)
	}
	j.ledger.reportLost("join/1", 5, 2, "before checkpoint 3")
	j.ledger.reportLost("join/0", 7, 4, "after checkpoint 3")
	j.ledger.reportLost("join/1", 11, 3, "at checkpoint 3")
	j.ledger.takeBackLosses(3)
	if got := j.RestartView().LostRecords; got != 5 {
		t.Fatalf("lost after a full restart from checkpoint 3: %d, want the 5 lost back to checkpoint 2", got)
	}
	j.ledger.takeBackLosses(0)
	if got := j.RestartView().LostRecords; got != 0 {
		t.Fatalf("lost after a full restart from the beginning: %d, want 0", got)
	}
	obs.Close()
	var replayed []int64
	for e := range obs.Events() {
		if rr, ok := e.Event.(view.RecordsReplayed); ok {
			replayed = append(replayed, rr.Records)
		}
	}
	if !slices.Equal(replayed, []int64{18, 5}) {
		t.Fatalf("records_replayed events %v, want [18 5]", replayed)
	}
}

// ResetRestarts gives a demo its attempts back: with one restart attempt,
// a second failure fails the job, unless the attempts were reset between
// the two, and then the job finishes exactly once.
func TestResetRestartsGivesTheAttemptsBack(t *testing.T) {
	faults := []string{"after-records=3000,task=join/0,fault=panic", "after-records=12000,task=join/1,fault=panic"}
	used := (&run{realTime: true, records: 40000, rate: 20000, interval: 50 * time.Millisecond, attempts: 1, faults: faults}).do(t)
	if used.res.Status != JobFailed {
		t.Fatalf("without a reset: status %s, want FAILED after the second failure", used.res.Status)
	}
	r := (&run{realTime: true, records: 40000, rate: 20000, interval: 50 * time.Millisecond, attempts: 1, faults: faults, during: func(j *Job) {
		waitFor(t, "the first restart", func() bool { return j.RestartView().Restarts >= 1 })
		j.ResetRestarts()
		if s := j.RestartView().Status; s.Attempts != 0 || s.GaveUp {
			t.Errorf("after ResetRestarts the view shows %+v", s)
		}
	}}).do(t)
	if r.res.Status != JobFinished || r.res.Restarts != 2 || r.verify.Lost != 0 || r.verify.Duplicates != 0 {
		t.Fatalf("with a reset: status %s, %d restarts, verify %+v", r.res.Status, r.res.Restarts, r.verify)
	}
	if r.count("restarts_reset") != 1 {
		t.Fatalf("%d restarts_reset events, want 1", r.count("restarts_reset"))
	}
}

// A checkpoint can be triggered the moment the job says it runs again: a
// trainer (or a tour) who presses c on seeing that gets a checkpoint, not
// "job is not running". A region failover keeps the job RUNNING, so there
// the restore is the sign; a full restart goes RESTARTING, restores, and
// then says RUNNING.
func TestACheckpointCanBeTriggeredOnceTheJobRunsAgain(t *testing.T) {
	pipeline, err := spec.Load("../fixtures/jobs/pipeline.yaml", testJob.Catalogue)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		job      *spec.Job
		failover restart.FailoverStrategy
		faults   []string
	}{
		{"region", pipeline, restart.FailoverRegion, []string{
			"after-records=1250,task=enrich/2,fault=panic",
			"after-records=2500,task=enrich/0,fault=panic",
			"after-records=3750,task=enrich/3,fault=panic",
		}},
		{"full", testJob.Spec(), restart.FailoverFull, []string{
			"after-records=6000,task=join/1,fault=panic",
			"after-records=7000,task=revenue/0,fault=error",
			"after-records=8000,task=parse-orders/1,fault=panic",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex // events come from more than one goroutine
			var tried int
			var refused []string
			restored := false
			// runsAgain says whether e tells that the job runs again.
			runsAgain := func(e Event) bool {
				mu.Lock()
				defer mu.Unlock()
				switch ev := e.Event.(type) {
				case view.Restored:
					restored = true
					return tc.failover == restart.FailoverRegion
				case view.JobStatus:
					again := restored && ev.Status == string(JobRunning)
					restored = restored && !again
					return again
				}
				return false
			}
			r := (&run{realTime: true, job: tc.job, records: 50000, rate: 25000, interval: 50 * time.Millisecond,
				failover: tc.failover, faults: tc.faults,
				onEvent: func(j *Job, e Event) {
					if !runsAgain(e) {
						return
					}
					// Not under mu: the trigger emits events of its own.
					_, err := j.Coordinator().Trigger(checkpoint.KindCheckpoint)
					mu.Lock()
					defer mu.Unlock()
					tried++
					if err != nil {
						refused = append(refused, err.Error())
					}
				}}).do(t)
			if r.res.Restarts != 3 || tried != 3 {
				t.Fatalf("%d restarts, %d checkpoints asked for as the job ran again, want 3 and 3", r.res.Restarts, tried)
			}
			if len(refused) > 0 {
				t.Fatalf("a checkpoint asked for as the job ran again was refused: %v", refused)
			}
			if !r.verify.OK || r.verify.Duplicates != 0 {
				t.Fatalf("verify %+v", r.verify)
			}
		})
	}
}
