package attach

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// flinkAPI serves the answers Flink 2.2 gave about the peer job
// (testdata/flink), each path as Flink routes it; what was not captured
// is 404, as an answer Flink does not have. It counts the requests.
func flinkAPI(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	dir := filepath.Join("testdata", "flink")
	routes := []struct {
		re   *regexp.Regexp
		file string // $1 is the path's vertex id
	}{
		{regexp.MustCompile(`^/jobs/overview$`), "overview.json"},
		{regexp.MustCompile(`^/jobs/\w+$`), "job.json"},
		{regexp.MustCompile(`^/jobs/\w+/checkpoints$`), "checkpoints.json"},
		{regexp.MustCompile(`^/jobs/\w+/checkpoints/config$`), "checkpoints_config.json"},
		{regexp.MustCompile(`^/jobs/\w+/checkpoints/details/7/subtasks/(\w+)$`), "cps_7_$1.json"},
		{regexp.MustCompile(`^/jobs/\w+/exceptions$`), "exceptions.json"},
		{regexp.MustCompile(`^/jobs/\w+/jobmanager/config$`), "jm_config.json"},
		{regexp.MustCompile(`^/jobs/\w+/metrics$`), "metrics.json"},
		{regexp.MustCompile(`^/jobs/\w+/vertices/(\w+)$`), "v_$1.json"},
		{regexp.MustCompile(`^/jobs/\w+/vertices/(\w+)/backpressure$`), "bp_$1.json"},
		{regexp.MustCompile(`^/jobs/\w+/vertices/(\w+)/watermarks$`), "wm_$1.json"},
	}
	requests := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		for _, rt := range routes {
			if m := rt.re.FindStringSubmatchIndex(r.URL.Path); m != nil {
				name := string(rt.re.ExpandString(nil, rt.file, r.URL.Path, m))
				if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
					w.Header().Set("Content-Type", "application/json")
					w.Write(b)
					return
				}
			}
		}
		http.Error(w, `{"errors":["Not found: `+r.URL.Path+`"]}`, http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	return srv, requests
}

// The screen of a Flink job is Flink's own figures: its vertices with
// their chained operators, their parallelism and states, its checkpoint
// history with each subtask's alignment as Flink measured it, its
// exception's root cause and its restart strategy.
func TestAFlinkJobIsShownWithFlinksOwnFigures(t *testing.T) {
	srv, _ := flinkAPI(t)
	a, err := Dial(context.Background(), Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	s := a.Snapshot()
	if s.Job.Name != "orders" || s.Job.Status != "RUNNING" || s.Job.Mode != "exactly-once" || s.Job.Interval != time.Second {
		t.Fatalf("job %+v", s.Job)
	}
	var ops []string
	for _, op := range s.Operators {
		ops = append(ops, op.Name+" "+op.Type+" "+itoa(op.Parallelism))
	}
	want := []string{"orders-source→parse-orders source 2", "payments-source→parse-payments source 2",
		"join join 2", "revenue operator 2", "sink sink 1"}
	if !slices.Equal(ops, want) {
		t.Fatalf("operators %q, want %q", ops, want)
	}
	join := s.Operators[2]
	if len(join.Inputs) != 2 || join.Inputs[0] != (view.Edge{From: "orders-source→parse-orders", Kind: "hash"}) ||
		join.Inputs[1].From != "payments-source→parse-payments" {
		t.Fatalf("join's inputs %+v", join.Inputs)
	}
	j0 := s.Tasks["join/0"]
	if j0.Status != "RUNNING" || j0.RecordsIn != 78051 || j0.RecordsOut != 26761 || j0.Restarts != 1 || j0.Watermark != 1796469812081 {
		t.Fatalf("join/0 %+v", j0)
	}
	cps := s.Checkpoints
	if cps.Completed != 7 || cps.Failed != 3 || cps.LastCompleted != 7 || len(cps.History) != 7 || len(cps.Restored) != 1 {
		t.Fatalf("checkpoints %+v", cps)
	}
	// Flink's own summary, over every completed checkpoint (the history
	// holds fewer).
	if rep := cps.Reported; rep == nil || rep.EndToEnd.Min != 77*time.Millisecond || rep.EndToEnd.Max != 877*time.Millisecond ||
		rep.EndToEnd.Avg != 290*time.Millisecond || rep.EndToEnd.P99 != 877*time.Millisecond {
		t.Fatalf("Flink's summary %+v", cps.Reported)
	}
	c7 := cps.History[0]
	if c7.ID != 7 || c7.Status != view.StatusCompleted || c7.Acked != 9 || c7.Total != 9 || c7.Duration != 85*time.Millisecond {
		t.Fatalf("checkpoint 7 %+v", c7)
	}
	// Flink's per-subtask figures of checkpoint 7 (cps_7_…): join's
	// subtasks aligned for 4 and 2 ms.
	if got := c7.AckedTasks["join/0"]; got.Alignment != 4*time.Millisecond || got.AsyncDuration != 52*time.Millisecond ||
		got.StartDelay != 4*time.Millisecond || got.Bytes != 2838374 {
		t.Fatalf("join/0's part of checkpoint 7 %+v", got)
	}
	if got := c7.AckedTasks["join/1"].Alignment; got != 2*time.Millisecond {
		t.Fatalf("join/1 aligned for %s, want 2ms", got)
	}
	if len(c7.AckedTasks) != 9 || c7.MaxAlignment < 4*time.Millisecond {
		t.Fatalf("checkpoint 7: %d acknowledgements, longest alignment %s", len(c7.AckedTasks), c7.MaxAlignment)
	}
	r := s.Restart
	if r.Restarts != 1 || s.Job.Attempt != 2 || r.Description != "fixed-delay (attempts 10, delay 1s)" || r.Status.MaxAttempts != 10 {
		t.Fatalf("restart %+v", r)
	}
	if len(r.Failures) != 1 || r.Failures[0].Task != "join/0" ||
		r.Failures[0].Error != "java.lang.RuntimeException: injected panic after 60000 records" {
		t.Fatalf("failures %+v", r.Failures)
	}
}

// The first poll's events tell the history as it stands: the job's
// state, each checkpoint's trigger and end once, the failure, the
// restore; a second poll of the same answers tells nothing new.
func TestTheEventsTellEachChangeOnce(t *testing.T) {
	srv, _ := flinkAPI(t)
	a, err := Dial(context.Background(), Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	completed := 0
	for len(a.events) > 0 {
		e := <-a.events
		kinds = append(kinds, e.Event.Name())
		if _, ok := e.Event.(view.CheckpointCompleted); ok {
			completed++
		}
	}
	if completed != 7 || !slices.Contains(kinds, "task_failed") || !slices.Contains(kinds, "restored") {
		t.Fatalf("events %q", kinds)
	}
	ans, err := a.fetcher.poll(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	a.apply(context.Background(), ans)
	if n := len(a.events); n != 0 {
		t.Fatalf("the same answers again told %d events", n)
	}
}

// What does not change is asked once: the configuration, and the
// subtasks' parts of the checkpoints that have ended.
func TestAPollAsksForWhatEndedOnce(t *testing.T) {
	srv, requests := flinkAPI(t)
	a, err := Dial(context.Background(), Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	first := requests.Load()
	if _, err := a.fetcher.poll(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	// Again: the job, its checkpoints, exceptions and restarts, and each
	// of five vertices' details, back pressure and watermarks; checkpoint
	// 7's subtasks, the configurations and the other checkpoints' parts
	// (404: not captured) are not asked again.
	if again := requests.Load() - first; again != 4+5*3 {
		t.Fatalf("a second poll asked %d requests, want %d (the first: %d)", again, 4+5*3, first)
	}
}
