// Package attach is the terminal UI's Controller for a job that runs
// elsewhere: an Apache Flink job, or a faultline run, reached through
// Flink's REST API (a JobManager's address, or a run's --rest-addr). It
// polls the API, turns its answers into the Snapshot the UI draws and the
// changes between polls into the events a run emits, and drives the job
// with what the API allows: trigger a checkpoint, take a savepoint, stop
// with a savepoint, cancel. Faults go through a Kafka control topic to a
// job that reads it (see Control); what neither can do says so.
package attach

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/internal/rest"
	"github.com/faultline-dev/faultline/runtime/view"
)

// Options say where the job is and what else attach may use.
type Options struct {
	// URL is the REST API's address (http://host:8081, or host:port).
	URL string
	// JobID picks the job ("": the one job that runs there).
	JobID string
	// Period is how often the API is polled (DefaultPeriod when 0).
	Period time.Duration
	// Brokers are the Kafka cluster the job reads and writes, shown in
	// the header ("": not known).
	Brokers string
	// Control writes faults into the job (nil: none can be injected).
	Control *Control
	// Verify gives the live verification line of a snapshot (nil: not
	// checked; see LiveVerify).
	Verify func(view.Snapshot) view.Verify
}

// DefaultPeriod is how often the API is polled: a checkpoint Flink
// reports is on the screen within a period and the request's time.
const DefaultPeriod = time.Second

// eventBuffer bounds the events waiting for the UI; when it is full the
// poller waits, as a run's observer does.
const eventBuffer = 1024

// Attached is a job reached through the REST API.
type Attached struct {
	opts   Options
	client *rest.Client
	jobID  string
	events chan view.Stamped
	// Only the poller (Dial, then Run) touches these.
	fetcher *fetcher
	tracker *tracker
	rates   rates

	mu   sync.Mutex
	snap view.Snapshot
	err  error // the last poll's, nil when it succeeded
	// notices wait for the next poll to tell them in the events (the
	// poller alone sends on events).
	notices []view.Notice
	// vertexIDs are the vertices' ids by the screen's operator names.
	vertexIDs map[string]string
}

// notice tells text (and advice) in the events with the next poll.
func (a *Attached) notice(text, advice string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.notices = append(a.notices, view.Notice{Text: text, Advice: advice})
}

// Dial finds the job at opts.URL: the one named, or the one running
// there. It fails when the API cannot be reached, or when it cannot tell
// which job is meant.
func Dial(ctx context.Context, opts Options) (*Attached, error) {
	c, err := rest.NewClientURL(opts.URL)
	if err != nil {
		return nil, err
	}
	var ov overview
	if err := c.Get(ctx, "/jobs/overview", &ov); err != nil {
		var apiErr *rest.APIError
		if errors.As(err, &apiErr) {
			return nil, fmt.Errorf("%s answers GET /jobs/overview with %w: is it a Flink REST API?", c.Base(), err)
		}
		return nil, fmt.Errorf("no REST API answers at %s (%w): give a Flink JobManager's (rest.port, 8081 by default) or a run's --rest-addr", c.Base(), err)
	}
	id, err := pickJob(ov, opts.JobID)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Base(), err)
	}
	if opts.Period <= 0 {
		opts.Period = DefaultPeriod
	}
	a := &Attached{opts: opts, client: c, jobID: id, events: make(chan view.Stamped, eventBuffer),
		fetcher: newFetcher(c, id), tracker: newTracker(), rates: rates{}}
	// The first poll before the UI's first frame, which then shows the
	// job as it is (a header that saw no attempt before would call the
	// job's attempt a restart).
	ans, err := a.fetcher.poll(ctx, time.Now())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Base(), err)
	}
	a.apply(ctx, ans)
	return a, nil
}

// terminal are the job states after which a job does not run again.
var terminal = map[string]bool{"FINISHED": true, "CANCELED": true, "FAILED": true, "SUSPENDED": true}

// pickJob is the job id attach watches: want when the API lists it; else
// the one job not ended, or, when every job has ended, the newest.
func pickJob(ov overview, want string) (string, error) {
	jobs := ov.Jobs
	if want != "" {
		for _, j := range jobs {
			if j.JID == want {
				return want, nil
			}
		}
		return "", fmt.Errorf("no job %s there (%s)", want, listJobs(ov))
	}
	if len(jobs) == 0 {
		return "", errors.New("no job runs there yet")
	}
	var live []string
	for _, j := range jobs {
		if !terminal[j.State] {
			live = append(live, j.JID)
		}
	}
	switch {
	case len(live) == 1:
		return live[0], nil
	case len(live) > 1:
		return "", fmt.Errorf("%d jobs run there; pick one with --job (%s)", len(live), listJobs(ov))
	}
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].StartTime > jobs[j].StartTime })
	return jobs[0].JID, nil
}

func listJobs(ov overview) string {
	var s []string
	for _, j := range ov.Jobs {
		s = append(s, fmt.Sprintf("%s %s %s", j.JID, j.Name, j.State))
	}
	if len(s) == 0 {
		return "none listed"
	}
	return strings.Join(s, "; ")
}

// JobID is the id of the job attached to.
func (a *Attached) JobID() string { return a.jobID }

// Events are the job's lifecycle events as the polls tell them; closed
// when Run returns.
func (a *Attached) Events() <-chan view.Stamped { return a.events }

// Run polls the API every period until ctx ends.
func (a *Attached) Run(ctx context.Context) {
	defer close(a.events)
	next := time.Now().Add(a.opts.Period)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		now := time.Now()
		next = now.Add(a.opts.Period)
		ans, err := a.fetcher.poll(ctx, now)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			a.apply(ctx, ans)
		}
		a.mu.Lock()
		was := a.err
		a.err = err
		a.mu.Unlock()
		if (was == nil) != (err == nil) {
			a.tell(ctx, reachability(a.client.Base(), err))
		}
	}
}

// reachability is the notice of the API no longer answering (err), or
// answering again (nil).
func reachability(base string, err error) view.Notice {
	if err != nil {
		return view.Notice{Text: "the REST API at " + base + " does not answer: " + err.Error(),
			Advice: "the job's JobManager (or the run) is gone, or the network is; attach asks again every period"}
	}
	return view.Notice{Text: "the REST API at " + base + " answers again"}
}

// tell sends e to the UI now, stamped with the wall clock; only the
// poller calls it.
func (a *Attached) tell(ctx context.Context, e view.Event) {
	a.mu.Lock()
	started := a.snap.Started
	a.mu.Unlock()
	now := time.Now()
	select {
	case a.events <- view.Stamped{At: now.Sub(started), Wall: now, Event: e}:
	case <-ctx.Done():
	}
}

// apply makes ans the snapshot and sends the events it tells.
func (a *Attached) apply(ctx context.Context, ans *answers) {
	s := snapshotOf(ans, figures{Brokers: a.opts.Brokers})
	s.Job.Remote = a.client.Base()
	if a.opts.Verify != nil {
		s.Verify = a.opts.Verify(s)
	} else {
		s.Verify.Off = "not checked while attached: give --brokers and --output, or run faultline verify"
	}
	a.rates.apply(&s)
	ids := map[string]string{}
	for _, v := range ans.Job.Vertices {
		ids[OperatorName(v.Name)] = v.ID
	}
	a.mu.Lock()
	a.snap, a.vertexIDs = s, ids
	notices := a.notices
	a.notices = nil
	a.mu.Unlock()
	events := a.tracker.changes(s)
	for _, n := range notices {
		events = append(events, view.Stamped{At: s.Now.Sub(s.Started), Wall: s.Now, Event: n})
	}
	for _, e := range events {
		select {
		case a.events <- e:
		case <-ctx.Done():
			return
		}
	}
}

// Snapshot is the job as the last poll saw it; when the last poll failed,
// its status says the API is unreachable, unless the job had ended.
func (a *Attached) Snapshot() view.Snapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.snap
	// A job seen ending keeps its end: its API going away after is
	// expected (a JobManager of one job stops with it, as a run does).
	if a.err != nil && !terminal[s.Job.Status] {
		s.Job.Status = "UNREACHABLE"
	}
	return s
}
