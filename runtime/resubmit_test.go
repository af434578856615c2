package runtime

import (
	"errors"
	"testing"
	"time"
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
