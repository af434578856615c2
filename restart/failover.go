package restart

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// FailoverStrategy decides which subtasks restart when one fails (Flink:
// FailoverStrategy, jobmanager.execution.failover-strategy).
type FailoverStrategy string

// The failover strategies.
const (
	// FailoverFull restarts every subtask (Flink: RestartAllFailoverStrategy).
	FailoverFull FailoverStrategy = "full"
	// FailoverRegion restarts the failed subtask's pipelined region: every
	// subtask joined to it by an edge, transitively (Flink:
	// RestartPipelinedRegionFailoverStrategy). The other regions keep running.
	FailoverRegion FailoverStrategy = "region"
	// FailoverIndividual restarts only the failed subtask, from its state in
	// the latest completed checkpoint, without replaying its input (Flink's
	// old RestartIndividualStrategy): what it did since that checkpoint is
	// lost, and the run says how many records that cost.
	FailoverIndividual FailoverStrategy = "individual"
	// FailoverNone does not recover: the first failure fails the job.
	FailoverNone FailoverStrategy = "none"
)

// FailoverStrategies lists them in the order the help shows them.
var FailoverStrategies = []FailoverStrategy{FailoverFull, FailoverRegion, FailoverIndividual, FailoverNone}

// ParseFailoverStrategy reads a --failover-strategy value.
func ParseFailoverStrategy(s string) (FailoverStrategy, error) {
	for _, f := range FailoverStrategies {
		if string(f) == strings.ToLower(strings.TrimSpace(s)) {
			return f, nil
		}
	}
	names := make([]string, len(FailoverStrategies))
	for i, f := range FailoverStrategies {
		names[i] = string(f)
	}
	return "", &OptionError{Key: KeyFailover, Value: fmt.Sprintf("%q", s), Want: "one of " + strings.Join(names, ", ")}
}

// ErrUnrecoverable marks a failure that no restart can cure (Flink:
// SuppressRestartsException): a job graph whose records do not fit its
// operators, a record type a sink cannot write. The job fails at once,
// whatever the restart strategy.
var ErrUnrecoverable = errors.New("unrecoverable")

// PipelinedRegions splits tasks into pipelined regions: the sets joined by
// edges, transitively (each edge joins two task names). In a streaming job
// every edge is pipelined, so a region is a connected component. Regions
// and the tasks in each keep the order of tasks.
func PipelinedRegions(tasks []string, edges [][2]string) [][]string {
	index := make(map[string]int, len(tasks))
	for i, n := range tasks {
		index[n] = i
	}
	parent := make([]int, len(tasks))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(x int) int {
		if parent[x] != x {
			parent[x] = find(parent[x])
		}
		return parent[x]
	}
	for _, e := range edges {
		a, okA := index[e[0]]
		b, okB := index[e[1]]
		if okA && okB {
			parent[find(a)] = find(b)
		}
	}
	var regions [][]string
	byRoot := map[int]int{}
	for i, n := range tasks {
		r := find(i)
		k, ok := byRoot[r]
		if !ok {
			k = len(regions)
			byRoot[r] = k
			regions = append(regions, nil)
		}
		regions[k] = append(regions[k], n)
	}
	return regions
}

// Decision is what the failure handler decided about one failure (Flink:
// FailureHandlingResult).
type Decision struct {
	// Tasks are the subtasks to restart, in the job's order; nil restarts
	// the whole job.
	Tasks []string
	// Delay is the wait before the restart.
	Delay time.Duration
	// GiveUp says why the job fails for good ("" when it restarts).
	GiveUp string
}

// Handler decides, for each failure, whether the job restarts, after what
// delay (its BackoffStrategy) and which subtasks (its FailoverStrategy over
// the job's pipelined regions) (Flink: ExecutionFailureHandler). It acts on
// nothing: the job master tears down and restarts what it is told.
//
// Its methods are safe for concurrent use as far as its BackoffStrategy's
// are (all of this package's are).
type Handler struct {
	backoff  BackoffStrategy
	failover FailoverStrategy
	regions  [][]string
}

// NewHandler returns the failure handler of a job whose subtasks form
// regions (see PipelinedRegions).
func NewHandler(backoff BackoffStrategy, failover FailoverStrategy, regions [][]string) *Handler {
	return &Handler{backoff: backoff, failover: failover, regions: regions}
}

// Backoff is the handler's backoff strategy.
func (h *Handler) Backoff() BackoffStrategy { return h.backoff }

// Failover is the handler's failover strategy.
func (h *Handler) Failover() FailoverStrategy { return h.failover }

// Regions are the job's pipelined regions.
func (h *Handler) Regions() [][]string { return h.regions }

// AllTasks names every subtask of the job, in the job's order.
func (h *Handler) AllTasks() []string {
	var all []string
	for _, r := range h.regions {
		all = append(all, r...)
	}
	return all
}

// Handle decides about the failure err of subtask task ("" for a failure
// of the job itself, such as too many failed checkpoints) at time at.
func (h *Handler) Handle(task string, err error, at time.Time) Decision {
	switch {
	case errors.Is(err, ErrUnrecoverable):
		return Decision{GiveUp: fmt.Sprintf("%s failed with an unrecoverable error; no restart can help: %v", OrJob(task), err)}
	case h.failover == FailoverNone:
		return Decision{GiveUp: fmt.Sprintf("failover strategy none: the job does not recover from the failure of %s", OrJob(task))}
	}
	h.backoff.NotifyFailure(err, at)
	if !h.backoff.CanRestart() {
		return Decision{GiveUp: h.backoff.Status().GaveUpReason}
	}
	return Decision{Tasks: h.scopeOf(task), Delay: h.backoff.Backoff()}
}

// scopeOf is what the failover strategy restarts when task fails; nil for
// the whole job (a job-wide failure, full failover, or a region that is
// the whole job).
func (h *Handler) scopeOf(task string) []string {
	if task == "" {
		return nil
	}
	switch h.failover {
	case FailoverIndividual:
		return []string{task}
	case FailoverRegion:
		if len(h.regions) == 1 {
			return nil
		}
		for _, r := range h.regions {
			if slices.Contains(r, task) {
				return slices.Clone(r)
			}
		}
	}
	return nil
}

// OrJob names a failed subtask, or the job when none failed.
func OrJob(task string) string {
	if task == "" {
		return "the job"
	}
	return task
}
