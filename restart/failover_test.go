package restart

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseFailoverStrategy(t *testing.T) {
	for _, s := range []string{"full", "region", "individual", "none", " Region "} {
		if _, err := ParseFailoverStrategy(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	if _, err := ParseFailoverStrategy("partial"); err == nil || !strings.Contains(err.Error(), "full, region, individual, none") {
		t.Errorf("partial: err = %v, want the list of strategies", err)
	}
}

func TestPipelinedRegions(t *testing.T) {
	tests := []struct {
		name  string
		tasks []string
		edges [][2]string
		want  [][]string
	}{
		{"no edges: every task its own region", []string{"a/0", "a/1"}, nil, [][]string{{"a/0"}, {"a/1"}}},
		{
			"forward pipelines stay apart",
			[]string{"s/0", "s/1", "e/0", "e/1", "k/0", "k/1"},
			[][2]string{{"s/0", "e/0"}, {"s/1", "e/1"}, {"e/0", "k/0"}, {"e/1", "k/1"}},
			[][]string{{"s/0", "e/0", "k/0"}, {"s/1", "e/1", "k/1"}},
		},
		{
			"one all-to-all edge joins everything, in task order",
			[]string{"s/0", "s/1", "j/0", "j/1"},
			[][2]string{{"s/0", "j/0"}, {"s/0", "j/1"}, {"s/1", "j/0"}, {"s/1", "j/1"}},
			[][]string{{"s/0", "s/1", "j/0", "j/1"}},
		},
		{
			"joined transitively",
			[]string{"a/0", "b/0", "c/0", "d/0"},
			[][2]string{{"a/0", "c/0"}, {"d/0", "c/0"}},
			[][]string{{"a/0", "c/0", "d/0"}, {"b/0"}},
		},
		{"an edge to an unknown task is ignored", []string{"a/0"}, [][2]string{{"a/0", "zz/9"}}, [][]string{{"a/0"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PipelinedRegions(tc.tasks, tc.edges); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("PipelinedRegions = %v, want %v", got, tc.want)
			}
		})
	}
}

// The failure handler's decisions, as a table: which tasks restart, after
// what delay, or why the job gives up; no job is needed.
func TestHandlerDecides(t *testing.T) {
	two := [][]string{{"s/0", "k/0"}, {"s/1", "k/1"}}
	one := [][]string{{"s/0", "s/1", "j/0", "k/0"}}
	boom := errors.New("boom")
	bad := fmt.Errorf("%w: a sink cannot write a <nil>", ErrUnrecoverable)
	tests := []struct {
		name     string
		backoff  BackoffStrategy
		failover FailoverStrategy
		regions  [][]string
		task     string
		err      error
		want     Decision
	}{
		{"full restarts the whole job", NewFixedDelay(3, time.Second), FailoverFull, two, "k/1", boom,
			Decision{Delay: time.Second}},
		{"region restarts the failed task's region", NewFixedDelay(3, 2*time.Second), FailoverRegion, two, "k/1", boom,
			Decision{Tasks: []string{"s/1", "k/1"}, Delay: 2 * time.Second}},
		{"region that is the whole job restarts the job", NewFixedDelay(3, time.Second), FailoverRegion, one, "j/0", boom,
			Decision{Delay: time.Second}},
		{"individual restarts the task alone", NewFixedDelay(3, 0), FailoverIndividual, one, "j/0", boom,
			Decision{Tasks: []string{"j/0"}}},
		{"a failure of the job restarts the whole job under any strategy", NewFixedDelay(3, 0), FailoverIndividual, one, "", boom,
			Decision{}},
		{"none gives up", NewFixedDelay(3, 0), FailoverNone, one, "j/0", boom,
			Decision{GiveUp: "failover strategy none: the job does not recover from the failure of j/0"}},
		{"unrecoverable gives up whatever the strategies", NewFixedDelay(3, 0), FailoverFull, one, "", bad,
			Decision{GiveUp: "the job failed with an unrecoverable error; no restart can help: unrecoverable: a sink cannot write a <nil>"}},
		{"a backoff that gives up gives up", &None{}, FailoverRegion, two, "k/0", boom,
			Decision{GiveUp: "restart strategy none: the job does not restart"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHandler(tc.backoff, tc.failover, tc.regions)
			got := h.Handle(tc.task, tc.err, t0)
			if !slices.Equal(got.Tasks, tc.want.Tasks) || got.Delay != tc.want.Delay || got.GiveUp != tc.want.GiveUp {
				t.Errorf("Handle = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The backoff strategy counts every failure the handler sees, and the
// handler gives up once it does.
func TestHandlerGivesUpWithItsBackoff(t *testing.T) {
	h := NewHandler(NewFixedDelay(2, time.Second), FailoverFull, [][]string{{"a/0"}})
	for i := 1; i <= 2; i++ {
		if d := h.Handle("a/0", errors.New("boom"), t0); d.GiveUp != "" {
			t.Fatalf("failure %d: gave up: %s", i, d.GiveUp)
		}
	}
	if d := h.Handle("a/0", errors.New("boom"), t0); !strings.Contains(d.GiveUp, "all 2 restart attempts used") {
		t.Fatalf("third failure: %+v, want giving up", d)
	}
	if got := h.AllTasks(); !slices.Equal(got, []string{"a/0"}) {
		t.Fatalf("AllTasks = %v", got)
	}
}
