package rest

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/rest/resttest"
	"github.com/faultline-dev/faultline/runtime/view"
)

func newTestServer() (*Server, *fakeJob, http.Handler) {
	job := &fakeJob{snap: fixture(), next: 5}
	s := &Server{id: NewJobID(), job: job, ops: newOperations()}
	return s, job, s.handler()
}

// status asks how the operation under the request id of answer stands.
func status(t *testing.T, h http.Handler, path string, answer any) (string, map[string]any) {
	t.Helper()
	tid, _ := resttest.Obj(answer)["request-id"].(string)
	if !triggerIDPattern.MatchString(tid) {
		t.Fatalf("no trigger id in %v", answer)
	}
	code, v := get(t, h, "GET", path+"/"+tid, "")
	if code != http.StatusOK {
		t.Fatalf("%s/%s: %d %v", path, tid, code, v)
	}
	return resttest.Obj(resttest.Obj(v)["status"])["id"].(string), resttest.Obj(resttest.Obj(v)["operation"])
}

// keysIn checks that op's fields are among those of Flink's class for it
// (the documentation leaves the operation's shape open).
func keysIn(t *testing.T, op map[string]any, flinks ...string) {
	t.Helper()
	for k := range op {
		if !slices.Contains(flinks, k) {
			t.Errorf("operation field %q is not one of Flink's %v", k, flinks)
		}
	}
}

func TestSavepointIsInProgressThenAtItsLocation(t *testing.T) {
	_, job, h := newTestServer()
	j := "/v1/jobs/" + must(t, h)
	_, v := get(t, h, "POST", j+"/savepoints", `{}`)
	if st, _ := status(t, h, j+"/savepoints", v); st != "IN_PROGRESS" {
		t.Fatalf("status %s before the savepoint completed", st)
	}
	job.complete(6, "")
	st, op := status(t, h, j+"/savepoints", v)
	if st != "COMPLETED" || op["location"] != "6" {
		t.Fatalf("status %s, operation %v; want COMPLETED at 6", st, op)
	}
	keysIn(t, op, "location", "failure-cause")
	// A checkpoint that fails says why, under Flink's field.
	_, v = get(t, h, "POST", j+"/checkpoints", ``)
	job.complete(7, "checkpoint expired before completing")
	st, op = status(t, h, j+"/checkpoints", v)
	cause := resttest.Obj(op["failureCause"])
	if st != "COMPLETED" || cause["stack-trace"] != "checkpoint expired before completing" {
		t.Fatalf("status %s, operation %v", st, op)
	}
	keysIn(t, op, "checkpointId", "failureCause")
	// A trigger refused is a failed operation.
	job.triggerErr = errors.New("a checkpoint is being taken")
	_, v = get(t, h, "POST", j+"/savepoints", `{}`)
	if _, op = status(t, h, j+"/savepoints", v); resttest.Obj(op["failure-cause"])["stack-trace"] != "a checkpoint is being taken" {
		t.Fatalf("operation %v", op)
	}
}

// must is the id of the job h serves, from /jobs.
func must(t *testing.T, h http.Handler) string {
	t.Helper()
	_, v := get(t, h, "GET", "/jobs", "")
	return resttest.Obj(resttest.Obj(v)["jobs"].([]any)[0])["id"].(string)
}

func TestStopTakesASavepointAndIsAnsweredAfterTheRunEnded(t *testing.T) {
	s, job, h := newTestServer()
	j := "/jobs/" + s.id
	_, v := get(t, h, "POST", j+"/stop", `{"drain":false}`)
	if !slices.Equal(job.stops, []bool{true}) {
		t.Fatalf("stops %v, want one with a savepoint", job.stops)
	}
	if st, _ := status(t, h, j+"/savepoints", v); st != "IN_PROGRESS" {
		t.Fatalf("status %s before the run ended", st)
	}
	// The savepoint completes and the run ends: Close waits until the
	// client has read how the stop ended, and no longer.
	s.Ended(9)
	closed := make(chan struct{})
	go func() { s.ops.linger(time.Minute); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close did not wait for the stop's answer")
	case <-time.After(20 * time.Millisecond):
	}
	if st, op := status(t, h, j+"/savepoints", v); st != "COMPLETED" || op["location"] != "9" {
		t.Fatalf("status %s, operation %v; want the run's savepoint 9", st, op)
	}
	<-closed
}

func TestStopWhoseSavepointFailedSaysSo(t *testing.T) {
	s, job, h := newTestServer()
	j := "/jobs/" + s.id
	_, v := get(t, h, "POST", j+"/stop", `{}`)
	job.set(func(sn *view.Snapshot) {
		sn.Checkpoints.History = append([]view.Checkpoint{{ID: 6, Savepoint: true, Status: view.StatusFailed,
			TriggerTime: time.Now(), Failure: "join/0 failed"}}, sn.Checkpoints.History...)
	})
	if _, op := status(t, h, j+"/savepoints", v); resttest.Obj(op["failure-cause"])["stack-trace"] != "join/0 failed" {
		t.Fatalf("operation %v", op)
	}
}

func TestRefusals(t *testing.T) {
	s, job, h := newTestServer()
	j := "/jobs/" + s.id
	for _, c := range []struct {
		method, path, body string
		code               int
	}{
		{"GET", "/jobs/" + NewJobID(), "", http.StatusNotFound},
		{"GET", j + "/vertices/nope/backpressure", "", http.StatusNotFound},
		{"GET", j + "/checkpoints/details/99", "", http.StatusNotFound},
		{"GET", j + "/savepoints/" + NewJobID(), "", http.StatusNotFound},
		{"GET", "/taskmanagers", "", http.StatusNotFound},
		{"POST", j + "/stop", `{"drain":true}`, http.StatusBadRequest},
		{"POST", j + "/savepoints", `{"target-directory":"/tmp/sp"}`, http.StatusBadRequest},
		{"POST", j + "/savepoints", `{"cancel-job":`, http.StatusBadRequest},
		{"PATCH", j + "?mode=suspend", "", http.StatusBadRequest},
		{"GET", j + "/exceptions?maxExceptions=x", "", http.StatusBadRequest},
	} {
		code, v := get(t, h, c.method, c.path, c.body)
		if code != c.code || len(resttest.Obj(v)["errors"].([]any)) != 1 {
			t.Errorf("%s %s %s: %d %v, want %d with Flink's errors list", c.method, c.path, c.body, code, v, c.code)
		}
	}
	if len(job.stops) != 0 || job.cancels != 0 {
		t.Fatalf("a refused request stopped the job: %v, %d", job.stops, job.cancels)
	}
	// Cancel and stop end a running job, once it ended they are refused.
	if code, _ := get(t, h, "PATCH", j+"?mode=cancel", ""); code != http.StatusAccepted || job.cancels != 1 {
		t.Fatalf("cancel: %d, %d cancels", code, job.cancels)
	}
	job.set(func(sn *view.Snapshot) { sn.Job.Status = "CANCELED" })
	if code, _ := get(t, h, "PATCH", j+"?mode=stop", ""); code != http.StatusConflict || len(job.stops) != 0 {
		t.Fatalf("stop of a CANCELED job: %d, stops %v", code, job.stops)
	}
	// A FAILED job's run may wait for a resubmit: it can be ended, but
	// takes no savepoint.
	job.set(func(sn *view.Snapshot) { sn.Job.Status = "FAILED" })
	if code, _ := get(t, h, "PATCH", j+"?mode=cancel", ""); code != http.StatusAccepted || job.cancels != 2 {
		t.Fatalf("cancel of a FAILED job: %d, %d cancels", code, job.cancels)
	}
	if code, _ := get(t, h, "POST", j+"/savepoints", `{}`); code != http.StatusConflict {
		t.Fatalf("savepoint of a FAILED job: %d", code)
	}
}

func TestExceptionsAreTheFailuresNewestFirst(t *testing.T) {
	s, _, h := newTestServer()
	_, v := get(t, h, "GET", "/jobs/"+s.id+"/exceptions?maxExceptions=1", "")
	hist := resttest.Obj(resttest.Obj(v)["exceptionHistory"])
	entries := hist["entries"].([]any)
	if len(entries) != 1 || hist["truncated"] != true {
		t.Fatalf("history %v, want one entry, truncated", hist)
	}
	e := resttest.Obj(entries[0])
	want := map[string]any{"exceptionName": "injected fault: panic", "stacktrace": "join/1: injected fault: panic",
		"taskName": "join (2/2)", "timestamp": float64(t0.Add(25 * time.Second).UnixMilli())}
	for k, w := range want {
		if e[k] != w {
			t.Errorf("%s = %v, want %v", k, e[k], w)
		}
	}
	if !maps.Equal(resttest.Obj(e["failureLabels"]), map[string]any{"fault": "panic"}) {
		t.Errorf("failureLabels %v", e["failureLabels"])
	}
}

// An ended job's end time is when it entered its final status, however
// long after the API is asked.
func TestEndTimeIsWhenTheJobEnded(t *testing.T) {
	s, job, h := newTestServer()
	endedAt := t0.Add(50 * time.Second)
	job.set(func(sn *view.Snapshot) { sn.Job.Status, sn.Job.StatusSince = "CANCELED", endedAt })
	for range 2 {
		job.set(func(sn *view.Snapshot) { sn.Now = sn.Now.Add(time.Minute) })
		_, v := get(t, h, "GET", "/jobs/"+s.id, "")
		d := resttest.Obj(v)
		if d["end-time"] != float64(endedAt.UnixMilli()) || d["duration"] != float64(50_000) ||
			resttest.Obj(d["timestamps"])["CANCELED"] != float64(endedAt.UnixMilli()) {
			t.Fatalf("end-time %v, duration %v, timestamps %v", d["end-time"], d["duration"], d["timestamps"])
		}
	}
}
