package rest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/internal/rest/resttest"
)

// get serves method path on srv and decodes the JSON answer.
func get(t *testing.T, srv http.Handler, method, path, body string) (int, any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(method, path, rd))
	var v any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("%s %s: not JSON: %v\n%s", method, path, err, rec.Body)
	}
	return rec.Code, v
}

// TestAnswersAreFlinks serves every path of the API and holds each answer
// to the schema Flink's documentation gives that path.
func TestAnswersAreFlinks(t *testing.T) {
	api := resttest.Load(t)
	job := &fakeJob{snap: fixture()}
	s := &Server{id: NewJobID(), job: job, ops: newOperations()}
	h := s.handler()
	join := VertexID("orders", "join")
	j := "/jobs/" + s.id
	for _, c := range []struct{ method, path, flink, body string }{
		{"GET", "/jobs", "/jobs", ""},
		{"GET", "/jobs/overview", "/jobs/overview", ""},
		{"GET", j, "/jobs/{jobid}", ""},
		{"GET", j + "/exceptions", "/jobs/{jobid}/exceptions", ""},
		{"GET", j + "/vertices/" + join + "/backpressure", "/jobs/{jobid}/vertices/{vertexid}/backpressure", ""},
		{"GET", j + "/vertices/" + join, "/jobs/{jobid}/vertices/{vertexid}", ""},
		{"GET", j + "/checkpoints/config", "/jobs/{jobid}/checkpoints/config", ""},
		{"GET", j + "/jobmanager/config", "/jobs/{jobid}/jobmanager/config", ""},
		{"GET", j + "/checkpoints", "/jobs/{jobid}/checkpoints", ""},
		{"GET", j + "/checkpoints/details/2", "/jobs/{jobid}/checkpoints/details/{checkpointid}", ""},
		{"GET", j + "/checkpoints/details/3", "/jobs/{jobid}/checkpoints/details/{checkpointid}", ""},
		{"GET", j + "/checkpoints/details/5", "/jobs/{jobid}/checkpoints/details/{checkpointid}", ""},
		{"GET", j + "/checkpoints/details/5/subtasks/" + join, "/jobs/{jobid}/checkpoints/details/{checkpointid}/subtasks/{vertexid}", ""},
		{"GET", j + "/checkpoints/details/2/subtasks/" + join, "/jobs/{jobid}/checkpoints/details/{checkpointid}/subtasks/{vertexid}", ""},
		{"POST", j + "/checkpoints", "/jobs/{jobid}/checkpoints", `{"checkpointType":"CONFIGURED"}`},
		{"POST", j + "/savepoints", "/jobs/{jobid}/savepoints", `{"cancel-job":false,"formatType":"CANONICAL"}`},
		{"POST", j + "/stop", "/jobs/{jobid}/stop", `{"drain":false}`},
	} {
		code, v := get(t, h, c.method, c.path, c.body)
		if code/100 != 2 {
			t.Errorf("%s %s: %d %v", c.method, c.path, code, v)
			continue
		}
		if c.flink == "/jobs/{jobid}/checkpoints/config" {
			// Flink 2.2 writes the mode in small letters ("exactly_once",
			// internal/attach/testdata/flink), its documentation in
			// capitals: the answer is Flink's, held to the rest.
			m := resttest.Obj(v)
			m["mode"] = strings.ToUpper(m["mode"].(string))
		}
		api.Check(t, c.method+" "+c.path, v, api.Response(t, strings.ToLower(c.method), c.flink))
	}
	// A metrics answer is a list of {id, value} as Flink 2.2 writes it
	// (internal/attach/testdata/flink/metrics.json), not the object its
	// documentation describes (MetricCollectionResponseBody).
	for _, path := range []string{j + "/vertices/" + join + "/watermarks", j + "/metrics?get=numRestarts"} {
		code, v := get(t, h, "GET", path, "")
		list, _ := v.([]any)
		if code != http.StatusOK || len(list) == 0 {
			t.Errorf("GET %s: %d %v", path, code, v)
		}
		for _, e := range list {
			m := resttest.Obj(e)
			if _, ok := m["value"].(string); len(m) != 2 || m["id"] == nil || !ok {
				t.Errorf("GET %s: %v is not a metric as Flink writes one", path, e)
			}
		}
	}
	// Each field of the richest answers is there: Flink's clients and
	// its web UI read them.
	_, v := get(t, h, "GET", j+"/checkpoints", "")
	for _, k := range []string{"counts", "summary", "latest", "history"} {
		if resttest.Obj(v)[k] == nil {
			t.Errorf("/checkpoints has no %q", k)
		}
	}
	latest := resttest.Obj(resttest.Obj(v)["latest"])
	for _, k := range []string{"completed", "savepoint", "failed", "restored"} {
		if latest[k] == nil {
			t.Errorf("/checkpoints latest has no %q", k)
		}
	}
}
