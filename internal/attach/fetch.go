package attach

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/internal/rest"
)

// fetcher asks a REST API for one job's state, poll after poll. It keeps
// what does not change: the job's configuration, and the subtasks' parts
// of checkpoints that have ended.
type fetcher struct {
	c     *rest.Client
	jobID string
	// ended are the subtasks' parts of checkpoints fetched once they had
	// completed or failed.
	ended     map[int64]map[string][]subtaskCheckpoint
	config    *checkpointConfig
	jobConfig map[string]string
	// absent are the optional answers the API does not serve (404): not
	// asked again.
	absent map[string]bool
}

// parallelGets bounds the requests of a poll in flight at once.
const parallelGets = 8

func newFetcher(c *rest.Client, jobID string) *fetcher {
	return &fetcher{c: c, jobID: jobID, ended: map[int64]map[string][]subtaskCheckpoint{}, absent: map[string]bool{}}
}

// get is one request of a poll: its path, where its answer goes, and
// whether the poll needs it (an optional one that fails is left out).
type get struct {
	path     string
	out      any
	optional string // the answer's kind, for absent; "" when required
}

// poll asks for everything the screen shows of the job.
func (f *fetcher) poll(ctx context.Context, now time.Time) (*answers, error) {
	a := &answers{At: now, Vertices: map[string]vertexDetails{}, BackPressure: map[string]backPressure{},
		Watermarks: map[string]metricValues{}, Restarts: -1}
	job := "/jobs/" + f.jobID
	if err := f.c.Get(ctx, job, &a.Job); err != nil {
		return nil, fmt.Errorf("job %s: %w", f.jobID, err)
	}
	var cps checkpointing
	var exc exceptions
	var restarts metricValues
	gets := []get{
		{path: job + "/checkpoints", out: &cps, optional: "checkpoints"},
		{path: job + "/exceptions?maxExceptions=" + itoa(16), out: &exc, optional: "exceptions"},
		{path: job + "/metrics?get=numRestarts", out: &restarts, optional: "metrics"},
	}
	var conf checkpointConfig
	var jobConf configEntries
	if f.config == nil {
		gets = append(gets, get{path: job + "/checkpoints/config", out: &conf, optional: "checkpoint config"})
	}
	if f.jobConfig == nil {
		gets = append(gets, get{path: job + "/jobmanager/config", out: &jobConf, optional: "job config"})
	}
	vs := make([]vertexDetails, len(a.Job.Vertices))
	bps := make([]backPressure, len(a.Job.Vertices))
	wms := make([]metricValues, len(a.Job.Vertices))
	for i, v := range a.Job.Vertices {
		vp := job + "/vertices/" + v.ID
		gets = append(gets, get{path: vp, out: &vs[i], optional: "vertices"},
			get{path: vp + "/backpressure", out: &bps[i], optional: "back pressure"},
			get{path: vp + "/watermarks", out: &wms[i], optional: "watermarks"})
	}
	errs := f.run(ctx, gets)
	for i, v := range a.Job.Vertices {
		a.Vertices[v.ID], a.BackPressure[v.ID], a.Watermarks[v.ID] = vs[i], bps[i], wms[i]
	}
	if errs[0] == nil {
		a.Checkpoints = &cps
		a.Subtasks = f.subtasks(ctx, job, a)
	}
	a.Exceptions = exc.History.Entries
	if n, known := restarts.value("numRestarts"); known {
		a.Restarts = int(n)
	}
	if f.config == nil && errs[3] == nil {
		f.config = &conf
	}
	if f.jobConfig == nil && jobConf != nil {
		f.jobConfig = jobConf.lookup()
	}
	a.Config, a.JobConfig = f.config, f.jobConfig
	return a, ctx.Err()
}

// errSkipped is the error of an optional get not asked: the API does not
// serve it.
var errSkipped = errors.New("not served")

// run does gets, parallelGets at a time, and returns each one's error. An
// optional answer the API does not serve is not asked again.
func (f *fetcher) run(ctx context.Context, gets []get) []error {
	errs := make([]error, len(gets))
	sem := make(chan struct{}, parallelGets)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, g := range gets {
		mu.Lock()
		skip := g.optional != "" && f.absent[g.optional]
		mu.Unlock()
		if skip {
			errs[i] = errSkipped
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := f.c.Get(ctx, g.path, g.out)
			mu.Lock()
			defer mu.Unlock()
			errs[i] = err
			if notFound(err) && g.optional != "" && g.optional != "vertices" {
				f.absent[g.optional] = true
			}
		}()
	}
	wg.Wait()
	return errs
}

// notFound says whether err is the API's 404.
func notFound(err error) bool {
	var apiErr *rest.APIError
	return errors.As(err, &apiErr) && apiErr.Code == http.StatusNotFound
}

// subtasks are the subtasks' parts of each checkpoint of the history: of
// an ended one as fetched once it had ended, of a pending one afresh.
func (f *fetcher) subtasks(ctx context.Context, job string, a *answers) map[int64]map[string][]subtaskCheckpoint {
	out := map[int64]map[string][]subtaskCheckpoint{}
	keep := map[int64]bool{}
	var gets []get
	fetched := map[int64]map[string]*subtaskCheckpoints{}
	for _, h := range a.Checkpoints.History {
		keep[h.ID] = true
		if parts, ok := f.ended[h.ID]; ok {
			if parts != nil {
				out[h.ID] = parts
			}
			continue
		}
		fetched[h.ID] = map[string]*subtaskCheckpoints{}
		for _, v := range a.Job.Vertices {
			d := &subtaskCheckpoints{}
			fetched[h.ID][v.ID] = d
			gets = append(gets, get{path: fmt.Sprintf("%s/checkpoints/details/%d/subtasks/%s", job, h.ID, v.ID), out: d})
		}
	}
	errs := f.run(ctx, gets)
	k := 0
	for _, h := range a.Checkpoints.History {
		byVertex, asked := fetched[h.ID]
		if !asked {
			continue
		}
		// A part the API no longer has (404: statistics it let go) is
		// not asked again; another failure is, next poll.
		parts, all, gone := map[string][]subtaskCheckpoint{}, true, false
		for _, v := range a.Job.Vertices {
			all = all && errs[k] == nil
			gone = gone || notFound(errs[k])
			k++
			parts[v.ID] = byVertex[v.ID].Subtasks
		}
		if gone && h.Status != "IN_PROGRESS" {
			f.ended[h.ID] = nil
			continue
		}
		if !all {
			continue // asked again next poll
		}
		out[h.ID] = parts
		if h.Status != "IN_PROGRESS" {
			f.ended[h.ID] = parts
		}
	}
	for id := range f.ended {
		if !keep[id] {
			delete(f.ended, id)
		}
	}
	return out
}
