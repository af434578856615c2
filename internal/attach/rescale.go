package attach

import (
	"context"
	"fmt"

	"github.com/faultline-dev/faultline/tui"
)

var _ tui.Rescaler = (*Attached)(nil)

// requirements are a job's resource requirements (GET and PUT
// /jobs/:jobid/resource-requirements): each vertex's parallelism bounds,
// which Flink's adaptive scheduler rescales the job within.
type requirements map[string]struct {
	Parallelism struct {
		LowerBound int `json:"lowerBound"`
		UpperBound int `json:"upperBound"`
	} `json:"parallelism"`
}

// Rescale asks for delta subtasks more (or fewer) of operator, within 1
// and the job's bounds: its upper bound is moved from the operator's
// parallelism now, its lower bound kept at most that. Only the adaptive
// scheduler (jobmanager.scheduler: adaptive) has the endpoint; the others
// answer that they have none.
func (a *Attached) Rescale(operator string, delta int) error {
	a.mu.Lock()
	vid, parallelism := "", 0
	for _, op := range a.snap.Operators {
		if op.Name == operator {
			parallelism = op.Parallelism
		}
	}
	vid = a.vertexIDs[operator]
	a.mu.Unlock()
	if vid == "" {
		return fmt.Errorf("no operator %s in the job", operator)
	}
	want := max(parallelism+delta, 1)
	return a.call(func(ctx context.Context) error {
		path := "/jobs/" + a.jobID + "/resource-requirements"
		var req requirements
		if err := a.client.Get(ctx, path, &req); err != nil {
			if notFound(err) {
				return fmt.Errorf("the job's scheduler does not rescale through the REST API (the adaptive scheduler does: jobmanager.scheduler: adaptive)")
			}
			return err
		}
		r, ok := req[vid]
		if !ok {
			return fmt.Errorf("the job's resource requirements name no vertex %s", vid)
		}
		r.Parallelism.UpperBound = want
		r.Parallelism.LowerBound = min(r.Parallelism.LowerBound, want)
		req[vid] = r
		return a.client.Put(ctx, path, req, nil)
	})
}
