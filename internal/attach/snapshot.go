package attach

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// answers are one poll's answers of the REST API about one job; a field
// left nil is an answer not had (an endpoint the API does not serve, or
// one that failed this time).
type answers struct {
	At  time.Time // when the poll began
	Job jobDetails
	// By vertex id.
	Vertices     map[string]vertexDetails
	BackPressure map[string]backPressure
	Watermarks   map[string]metricValues
	Checkpoints  *checkpointing
	Config       *checkpointConfig
	// Subtasks are the subtasks' parts of the checkpoints of the history,
	// by checkpoint id, then vertex id.
	Subtasks   map[int64]map[string][]subtaskCheckpoint
	Exceptions []exceptionEntry
	// Restarts is the job's numRestarts metric (-1: not known).
	Restarts int
	// JobConfig is the job's configuration (nil: not known).
	JobConfig map[string]string
}

// figures is what the screen shows besides the API's answers: where the
// input and output live (the API does not say).
type figures struct {
	Brokers string
}

// snapshotOf is the frame the screen draws from the answers a (the rates
// are the poller's: see rates).
func snapshotOf(a *answers, f figures) view.Snapshot {
	start := time.UnixMilli(a.Job.StartTime)
	s := view.Snapshot{Now: a.At, JobNow: a.At, Started: start, Tasks: map[string]view.Task{},
		Job: jobInfo(a, f)}
	names := vertexNames(a)
	for _, v := range a.Job.Vertices {
		op := view.Operator{Name: names[v.ID], Type: vertexType(a, v.ID), Parallelism: v.Parallelism}
		op.Inputs = edges(a, v.ID, names)
		s.Operators = append(s.Operators, op)
		for i := range v.Parallelism {
			t := task(a, v.ID, op.Name, i)
			s.Tasks[t.Name] = t
		}
	}
	s.Checkpoints = checkpointsOf(a, names)
	s.Restart = restartOf(a, names)
	return s
}

// vertexNames are the screen's operator names by vertex id.
func vertexNames(a *answers) map[string]string {
	m := make(map[string]string, len(a.Job.Vertices))
	for _, v := range a.Job.Vertices {
		m[v.ID] = OperatorName(v.Name)
	}
	return m
}

// byFlinkName are the screen's operator names by Flink's vertex names.
func byFlinkName(a *answers) map[string]string {
	m := make(map[string]string, len(a.Job.Vertices))
	for _, v := range a.Job.Vertices {
		m[v.Name] = OperatorName(v.Name)
	}
	return m
}

// vertexType is what kind of operator a vertex is, as far as its place in
// the graph says: a source has no inputs, a sink feeds none, a join has
// two inputs. A faultline run's API names its operators' kinds.
func vertexType(a *answers, vid string) string {
	feeds := false
	for _, n := range a.Job.Plan.Nodes {
		for _, in := range n.Inputs {
			feeds = feeds || in.ID == vid
		}
	}
	for _, n := range a.Job.Plan.Nodes {
		if n.ID != vid {
			continue
		}
		switch {
		case len(n.Inputs) == 0:
			return "source"
		case !feeds:
			return "sink"
		case len(n.Inputs) == 2:
			return "join"
		}
	}
	return "operator"
}

// edges are a vertex's inputs, in order.
func edges(a *answers, vid string, names map[string]string) []view.Edge {
	var out []view.Edge
	for _, n := range a.Job.Plan.Nodes {
		if n.ID != vid {
			continue
		}
		ins := n.Inputs
		sort.SliceStable(ins, func(i, j int) bool { return ins[i].Num < ins[j].Num })
		for _, in := range ins {
			out = append(out, view.Edge{From: names[in.ID], Kind: shipKind(in.ShipStrategy)})
		}
	}
	return out
}

// task is subtask i of vertex vid as the screen draws it. Flink does not
// show its input queues: Inputs stays empty, Lag is not known.
func task(a *answers, vid, op string, i int) view.Task {
	t := view.Task{Name: op + "/" + itoa(i), Operator: op, Index: i, Lag: -1}
	if sub, ok := subtaskOf(a, vid, i); ok {
		t.Status, t.Restarts = sub.Status, sub.Attempt
		t.RecordsIn, t.RecordsOut = sub.Metrics.ReadRecords, sub.Metrics.WriteRecords
	}
	for _, b := range a.BackPressure[vid].Subtasks {
		if b.Subtask == i {
			t.Busy, t.BackPressureRatio = b.BusyRatio, b.Ratio
			t.BackPressure = view.BackPressureOf(b.Ratio)
		}
	}
	if t.BackPressure == "" {
		t.BackPressure = view.BackPressureOK
	}
	// Flink writes Long.MIN_VALUE before the first watermark.
	if w, ok := a.Watermarks[vid].value(itoa(i) + ".currentInputWatermark"); ok && w > 0 {
		t.Watermark = int64(w)
	}
	return t
}

func subtaskOf(a *answers, vid string, i int) (vertexSubtask, bool) {
	for _, s := range a.Vertices[vid].Subtasks {
		if s.Subtask == i {
			return s, true
		}
	}
	return vertexSubtask{}, false
}

// jobInfo is the header: the job's name, state and checkpointing.
func jobInfo(a *answers, f figures) view.JobInfo {
	j := view.JobInfo{Name: a.Job.Name, Title: a.Job.Name, Status: a.Job.State, Broker: f.Brokers,
		Attempt: int64(max(a.Restarts, 0)) + 1}
	if at := a.Job.Timestamps[a.Job.State]; at > 0 {
		j.StatusSince = time.UnixMilli(at)
	}
	if c := a.Config; c != nil {
		j.Mode = modeOf(c)
		j.Interval = ms(c.Interval)
		if c.Interval == math.MaxInt64 || c.Interval <= 0 {
			j.Interval = 0 // Flink's "periodic checkpoints off"
		}
		j.AlignedTimeout = ms(c.AlignedCheckpointTimeout)
		j.StateBackend = strings.TrimSuffix(c.StateBackend, "StateBackend")
		j.CheckpointSettings = view.CheckpointSettings{CheckpointTimeout: ms(c.Timeout), MinPause: ms(c.MinPause),
			MaxConcurrent: c.MaxConcurrent, TolerableFailures: c.TolerableFailed, Unaligned: c.UnalignedCheckpoints,
			CheckpointStorage: strings.TrimSuffix(c.CheckpointStorage, "CheckpointStorage")}
	}
	return j
}

// modeOf is the checkpointing mode as the screen names it.
func modeOf(c *checkpointConfig) string {
	switch {
	case strings.EqualFold(c.Mode, "at_least_once"):
		return "at-least-once"
	case c.UnalignedCheckpoints:
		return "exactly-once unaligned"
	}
	return "exactly-once"
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

func itoa(i int) string { return strconv.Itoa(i) }
