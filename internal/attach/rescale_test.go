package attach

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/faultline-dev/faultline/internal/rest"
)

// > on the join asks Flink's adaptive scheduler for one more join subtask:
// the job's resource requirements come back with the join's upper bound
// at its parallelism plus one, every other vertex's as it was; < at one
// subtask asks for no fewer than one.
func TestRescaleMovesTheOperatorsUpperBound(t *testing.T) {
	srv, _ := flinkAPI(t)
	a, err := Dial(context.Background(), Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	join, sink := a.vertexIDs["join"], a.vertexIDs["sink"]
	var mu sync.Mutex
	state := requirements{}
	for _, v := range []struct {
		id string
		n  int
	}{{join, 2}, {sink, 1}} {
		r := state[v.id]
		r.Parallelism.LowerBound, r.Parallelism.UpperBound = 1, v.n
		state[v.id] = r
	}
	rr := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !strings.HasSuffix(r.URL.Path, "/resource-requirements") {
			http.NotFound(w, r)
			return
		}
		if r.Method == http.MethodPut {
			state = requirements{}
			json.NewDecoder(r.Body).Decode(&state)
		}
		json.NewEncoder(w).Encode(state)
	}))
	defer rr.Close()
	a.client, _ = rest.NewClientURL(rr.URL)
	if err := a.Rescale("join", +1); err != nil {
		t.Fatal(err)
	}
	if err := a.Rescale("sink", -1); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := state[join].Parallelism; got.UpperBound != 3 || got.LowerBound != 1 {
		t.Fatalf("join's bounds %+v, want 1 to 3", got)
	}
	if got := state[sink].Parallelism; got.UpperBound != 1 || got.LowerBound != 1 {
		t.Fatalf("sink's bounds %+v, want 1 to 1", got)
	}
}

// A job whose scheduler has no resource requirements (a faultline run's
// API, Flink's default scheduler) says how one rescales.
func TestRescaleWithoutTheAdaptiveSchedulerSaysSo(t *testing.T) {
	job := &runJob{snap: runSnapshot()}
	a := dialRun(t, job)
	if err := a.Rescale("join", 1); err == nil || !strings.Contains(err.Error(), "jobmanager.scheduler: adaptive") {
		t.Fatalf("rescale without the adaptive scheduler: %v", err)
	}
}
