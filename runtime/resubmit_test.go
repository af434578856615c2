package runtime

import (
	"errors"
	"strings"
	"testing"
	"time"

	"faultline/restart"
	"faultline/runtime/view"
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
