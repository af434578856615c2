package runtime

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/view"
)

// A job whose restart strategy gave up stays FAILED until resubmitted;
// Resubmit starts it again from its newest checkpoint with its restart
// count afresh, and the output comes out exactly once.
func TestResubmitAFailedJob(t *testing.T) {
	r := (&run{records: 20000, rate: 5000, interval: 200 * time.Millisecond, attempts: -1,
		opts:   RunOptions{WaitToResubmit: true},
		faults: []string{"after-records=8000,task=join/1,fault=panic"},
		during: func(j *Job) {
			if err := j.Resubmit(); !errors.Is(err, ErrNotFailed) {
				t.Errorf("Resubmit of a running job: %v, want ErrNotFailed", err)
			}
			waitFor(t, "the job to fail", func() bool { return j.Status() == JobFailed })
			if err := j.Resubmit(); err != nil {
				t.Error(err)
			}
			waitFor(t, "the job to run again", func() bool { return j.Status() == JobRunning })
		}}).do(t)
	if r.res.Status != JobFinished || !r.verify.OK || r.res.GaveUp != "" {
		t.Fatalf("status %s gave up %q verify %+v", r.res.Status, r.res.GaveUp, r.verify)
	}
	if len(r.res.RestoredFrom) != 1 {
		t.Errorf("restored from %v, want the newest checkpoint once", r.res.RestoredFrom)
	}
	if r.restarts.GaveUp != "" {
		t.Errorf("restarts view still says it gave up: %q", r.restarts.GaveUp)
	}
}

// The throwing strategy grants the restart and throws when it is carried
// out: the job goes RESTARTING, then FAILED with the exception raised at
// the restart (none, by contrast, fails it at the failure).
func TestThrowingStrategyFailsAtTheRestart(t *testing.T) {
	r := (&run{records: 20000, rate: 5000, interval: 200 * time.Millisecond, backoff: &restart.Throwing{},
		faults: []string{"after-records=6000,task=join/1,fault=panic"}}).do(t)
	if r.res.Status != JobFailed || !strings.Contains(r.res.GaveUp, "was attempted and threw") || !strings.Contains(r.res.GaveUp, "join/1") {
		t.Fatalf("status %s, gave up %q; want FAILED at the restart", r.res.Status, r.res.GaveUp)
	}
	var restarting, scheduled bool
	for _, e := range r.events {
		switch ev := e.Event.(type) {
		case view.JobStatus:
			restarting = restarting || ev.Status == string(JobRestarting)
		case view.RestartScheduled:
			scheduled = true
		}
	}
	if !restarting || !scheduled {
		t.Errorf("RESTARTING %v, restart scheduled %v: the throwing strategy grants the restart before it throws", restarting, scheduled)
	}
	if !r.verify.OK {
		t.Errorf("verify %+v", r.verify)
	}
}

// In a tour, the crash fault ends the run's context (Config.Crash): the
// run ends as the process's death would end it, with no savepoint on exit
// and nothing settled, and says it crashed.
func TestACrashThatReturnsEndsTheRunAsACrash(t *testing.T) {
	r := (&run{records: 200000, rate: 5000, interval: 200 * time.Millisecond, crashEnds: true,
		opts: RunOptions{SavepointOnExit: true, SavepointTimeout: 5 * time.Second},
		during: func(j *Job) {
			waitFor(t, "a completed checkpoint", func() bool { return j.Coordinator().Stats().Completed > 0 })
			if err := j.Inject(Fault{Kind: FaultCrash}); err != nil {
				t.Error(err)
			}
		}}).do(t)
	if !r.res.Crashed || r.res.Status != JobCanceled || r.res.ExitSavepoint != 0 || r.res.Latest != nil {
		t.Fatalf("crashed %v, status %s, exit savepoint %d, latest %v: want a crash, with no savepoint and nothing settled",
			r.res.Crashed, r.res.Status, r.res.ExitSavepoint, r.res.Latest)
	}
	if n := r.count("savepoint_completed"); n != 0 {
		t.Errorf("%d savepoints completed after the crash", n)
	}
}
