package rest

// The job's answers in Flink's shapes: /jobs, /jobs/overview, /jobs/:id,
// /jobs/:id/exceptions and /jobs/:id/vertices/:vid/backpressure. Pure:
// each is built from one snapshot.

import (
	"fmt"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// millis is t in milliseconds since the epoch, as Flink's timestamps;
// -1 for the zero time (Flink: not reached).
func millis(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

// ended says whether a job status is terminal (Flink: globally terminal).
func ended(status string) bool {
	switch status {
	case "FINISHED", "CANCELED", "FAILED":
		return true
	}
	return false
}

// executionStates are Flink's ExecutionState names, which a subtask's
// status is one of.
var executionStates = []string{"CREATED", "SCHEDULED", "DEPLOYING", "RUNNING", "FINISHED",
	"CANCELING", "CANCELED", "FAILED", "RECONCILING", "INITIALIZING"}

// jobIDStatus is Flink's JobIdWithStatus.
type jobIDStatus struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// jobSummary is Flink's JobDetails, a row of /jobs/overview.
type jobSummary struct {
	JID              string         `json:"jid"`
	Name             string         `json:"name"`
	StartTime        int64          `json:"start-time"`
	EndTime          int64          `json:"end-time"`
	Duration         int64          `json:"duration"`
	State            string         `json:"state"`
	LastModification int64          `json:"last-modification"`
	Tasks            map[string]int `json:"tasks"`
	PendingOperators int            `json:"pending-operators"`
}

// times are a job's start, end (-1 while it runs: when it entered its
// final status), duration (to its end, or now) and now.
func times(s view.Snapshot) (start, end, duration, now int64) {
	start, now = millis(s.Started), s.Now.UnixMilli()
	end, duration = -1, now-start
	if ended(s.Job.Status) {
		end = now
		if !s.Job.StatusSince.IsZero() {
			end = s.Job.StatusSince.UnixMilli()
		}
		duration = end - start
	}
	return start, end, duration, now
}

func summaryOf(id string, s view.Snapshot) jobSummary {
	start, end, duration, now := times(s)
	counts := map[string]int{"total": len(s.Tasks)}
	for _, st := range executionStates {
		counts[strings.ToLower(st)] = 0
	}
	for _, t := range s.Tasks {
		counts[strings.ToLower(t.Status)]++
	}
	return jobSummary{JID: id, Name: s.Job.Name, StartTime: start, EndTime: end, Duration: duration,
		State: s.Job.Status, LastModification: now, Tasks: counts}
}

// jobDetails is Flink's JobDetailsInfo, /jobs/:id.
type jobDetails struct {
	JID              string           `json:"jid"`
	Name             string           `json:"name"`
	IsStoppable      bool             `json:"isStoppable"`
	State            string           `json:"state"`
	JobType          string           `json:"job-type"`
	StartTime        int64            `json:"start-time"`
	EndTime          int64            `json:"end-time"`
	Duration         int64            `json:"duration"`
	MaxParallelism   int              `json:"maxParallelism"`
	Now              int64            `json:"now"`
	Timestamps       map[string]int64 `json:"timestamps"`
	Vertices         []vertexDetails  `json:"vertices"`
	StatusCounts     map[string]int   `json:"status-counts"`
	Plan             plan             `json:"plan"`
	PendingOperators int              `json:"pending-operators"`
}

// vertexDetails is Flink's JobDetailsVertexInfo: an operator.
type vertexDetails struct {
	ID             string         `json:"id"`
	Name           string         `json:"name"`
	MaxParallelism int            `json:"maxParallelism"`
	Parallelism    int            `json:"parallelism"`
	Status         string         `json:"status"`
	StartTime      int64          `json:"start-time"`
	EndTime        int64          `json:"end-time"`
	Duration       int64          `json:"duration"`
	Tasks          map[string]int `json:"tasks"`
	Metrics        ioMetrics      `json:"metrics"`
}

// ioMetrics is the part of Flink's IOMetricsInfo faultline counts: records,
// not bytes (which it does not measure, and leaves out).
type ioMetrics struct {
	ReadRecords          int64 `json:"read-records"`
	ReadRecordsComplete  bool  `json:"read-records-complete"`
	WriteRecords         int64 `json:"write-records"`
	WriteRecordsComplete bool  `json:"write-records-complete"`
}

// plan is Flink's Plan: the job graph.
type plan struct {
	JID   string     `json:"jid"`
	Name  string     `json:"name"`
	Type  string     `json:"type"`
	Nodes []planNode `json:"nodes"`
}

type planNode struct {
	ID          string      `json:"id"`
	Parallelism int         `json:"parallelism"`
	Operator    string      `json:"operator"`
	Description string      `json:"description"`
	Inputs      []planInput `json:"inputs,omitempty"`
}

type planInput struct {
	Num          int    `json:"num"`
	ID           string `json:"id"`
	ShipStrategy string `json:"ship_strategy"`
	Exchange     string `json:"exchange"`
}

// shipStrategies are Flink's names of faultline's edge kinds.
var shipStrategies = map[string]string{"forward": "FORWARD", "hash": "HASH", "rebalance": "REBALANCE", "broadcast": "BROADCAST"}

func detailsOf(id string, s view.Snapshot) jobDetails {
	start, end, duration, now := times(s)
	d := jobDetails{JID: id, Name: s.Job.Name, State: s.Job.Status, JobType: "STREAMING",
		StartTime: start, EndTime: end, Duration: duration, MaxParallelism: -1, Now: now,
		Timestamps: map[string]int64{"CREATED": start}, StatusCounts: map[string]int{},
		Plan: plan{JID: id, Name: s.Job.Name, Type: "STREAMING"}}
	for _, st := range executionStates {
		d.StatusCounts[st] = 0
	}
	if !s.Job.StatusSince.IsZero() {
		d.Timestamps[s.Job.Status] = s.Job.StatusSince.UnixMilli()
	}
	for _, op := range s.Operators {
		v := vertexDetails{ID: VertexID(s.Job.Name, op.Name), Name: op.Name, MaxParallelism: -1,
			Parallelism: op.Parallelism, StartTime: start, EndTime: end, Duration: duration, Tasks: map[string]int{}}
		for _, st := range executionStates {
			v.Tasks[st] = 0
		}
		v.Metrics.ReadRecordsComplete, v.Metrics.WriteRecordsComplete = true, true
		for _, t := range subtasksOf(s, op) {
			v.Tasks[t.Status]++
			d.StatusCounts[t.Status]++
			v.Metrics.ReadRecords += t.RecordsIn
			v.Metrics.WriteRecords += t.RecordsOut
		}
		v.Status = aggregateState(v.Tasks, op.Parallelism)
		d.Vertices = append(d.Vertices, v)
		node := planNode{ID: v.ID, Parallelism: op.Parallelism, Operator: op.Type, Description: op.Name}
		for i, e := range op.Inputs {
			node.Inputs = append(node.Inputs, planInput{Num: i, ID: VertexID(s.Job.Name, e.From),
				ShipStrategy: shipStrategies[e.Kind], Exchange: "pipelined_bounded"})
		}
		d.Plan.Nodes = append(d.Plan.Nodes, node)
	}
	return d
}

// subtasksOf are op's subtasks in s, by index (missing ones left out).
func subtasksOf(s view.Snapshot, op view.Operator) []view.Task {
	var ts []view.Task
	for i := range op.Parallelism {
		if t, ok := s.Tasks[fmt.Sprintf("%s/%d", op.Name, i)]; ok {
			ts = append(ts, t)
		}
	}
	return ts
}

// aggregateState is an operator's state from its subtasks', as Flink's
// ExecutionJobVertex aggregates them: one state when all share it, else
// the first of failed, canceling, canceled, running, deploying that any
// has, else created.
func aggregateState(counts map[string]int, parallelism int) string {
	for st, n := range counts {
		if n == parallelism && n > 0 {
			return st
		}
	}
	for _, st := range []string{"FAILED", "CANCELING", "CANCELED", "RUNNING", "DEPLOYING"} {
		if counts[st] > 0 {
			return st
		}
	}
	return "CREATED"
}

// exceptions is Flink's JobExceptionsInfoWithHistory.
type exceptions struct {
	History exceptionHistory `json:"exceptionHistory"`
}

type exceptionHistory struct {
	Entries   []rootException `json:"entries"`
	Truncated bool            `json:"truncated"`
}

// rootException is Flink's RootExceptionInfo: a failure the job reacted
// to. faultline runs no task managers, so it names none.
type rootException struct {
	ExceptionName        string            `json:"exceptionName"`
	Stacktrace           string            `json:"stacktrace"`
	Timestamp            int64             `json:"timestamp"`
	TaskName             string            `json:"taskName,omitempty"`
	FailureLabels        map[string]string `json:"failureLabels"`
	ConcurrentExceptions []rootException   `json:"concurrentExceptions"`
}

// exceptionsOf are s's failures, newest first, at most limit (0: all
// kept).
func exceptionsOf(s view.Snapshot, limit int) exceptions {
	fs := s.Restart.Failures
	ex := exceptions{History: exceptionHistory{Entries: []rootException{}, Truncated: s.Restart.Restarts > len(fs)}}
	if limit > 0 && len(fs) > limit {
		fs, ex.History.Truncated = fs[:limit], true
	}
	for _, f := range fs {
		e := rootException{ExceptionName: "error", Stacktrace: f.Error, Timestamp: millis(f.At),
			TaskName: taskName(s, f.Task), FailureLabels: map[string]string{}, ConcurrentExceptions: []rootException{}}
		if f.Fault != "" {
			e.ExceptionName = "injected fault: " + f.Fault
			e.FailureLabels["fault"] = f.Fault
		}
		ex.History.Entries = append(ex.History.Entries, e)
	}
	return ex
}

// taskName is a subtask as Flink names it: "join (2/4)" for join/1 of 4.
func taskName(s view.Snapshot, task string) string {
	t, ok := s.Tasks[task]
	if !ok {
		return task
	}
	for _, op := range s.Operators {
		if op.Name == t.Operator {
			return fmt.Sprintf("%s (%d/%d)", op.Name, t.Index+1, op.Parallelism)
		}
	}
	return task
}

// backPressure is Flink's JobVertexBackPressureInfo.
type backPressure struct {
	Status       string               `json:"status"`
	Level        string               `json:"backpressureLevel"`
	EndTimestamp int64                `json:"end-timestamp"`
	Subtasks     []subtaskBackPressue `json:"subtasks"`
}

type subtaskBackPressue struct {
	Subtask       int     `json:"subtask"`
	AttemptNumber int     `json:"attempt-number"`
	Level         string  `json:"backpressureLevel"`
	Ratio         float64 `json:"ratio"`
	IdleRatio     float64 `json:"idleRatio"`
	BusyRatio     float64 `json:"busyRatio"`
}

// levels orders the back-pressure levels.
var levels = map[string]int{"ok": 0, "low": 1, "high": 2}

func backPressureOf(s view.Snapshot, op view.Operator) backPressure {
	bp := backPressure{Status: "ok", Level: "ok", EndTimestamp: s.Now.UnixMilli(), Subtasks: []subtaskBackPressue{}}
	for _, t := range subtasksOf(s, op) {
		level := strings.ToLower(string(t.BackPressure))
		if level == "" {
			level = "ok"
		}
		if levels[level] > levels[bp.Level] {
			bp.Level = level
		}
		bp.Subtasks = append(bp.Subtasks, subtaskBackPressue{Subtask: t.Index, AttemptNumber: t.Restarts, Level: level,
			Ratio: t.BackPressureRatio, IdleRatio: max(0, 1-t.Busy-t.BackPressureRatio), BusyRatio: t.Busy})
	}
	return bp
}
