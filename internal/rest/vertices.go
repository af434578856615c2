package rest

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/faultline-dev/faultline/runtime/view"
)

// The answers about one operator's subtasks, the job's configuration and
// its metrics, in Flink's shapes: what `faultline attach` reads of a run
// as it reads them of a Flink job.

// Configured is a Job that tells its configuration, by Flink's keys
// (GET /jobs/:jobid/jobmanager/config).
type Configured interface {
	Config() map[string]string
}

// vertexSubtasks is Flink's JobVertexDetailsInfo.
type vertexSubtasks struct {
	ID             string           `json:"id"`
	Name           string           `json:"name"`
	Parallelism    int              `json:"parallelism"`
	MaxParallelism int              `json:"maxParallelism"`
	Now            int64            `json:"now"`
	Subtasks       []subtaskAttempt `json:"subtasks"`
}

// subtaskAttempt is Flink's SubtaskExecutionAttemptDetailsInfo: attempt
// counts the subtask's deployments before this one.
type subtaskAttempt struct {
	Subtask   int       `json:"subtask"`
	Status    string    `json:"status"`
	Attempt   int       `json:"attempt"`
	Endpoint  string    `json:"endpoint"`
	StartTime int64     `json:"start-time"`
	EndTime   int64     `json:"end-time"`
	Duration  int64     `json:"duration"`
	Metrics   ioMetrics `json:"metrics"`
}

func (s *Server) vertexDetails(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
	op, ok := vertex(w, r, snap)
	if !ok {
		return
	}
	start, end, duration, now := times(snap)
	d := vertexSubtasks{ID: VertexID(snap.Job.Name, op.Name), Name: op.Name, Parallelism: op.Parallelism,
		MaxParallelism: -1, Now: now, Subtasks: []subtaskAttempt{}}
	for _, t := range subtasksOf(snap, op) {
		st := subtaskAttempt{Subtask: t.Index, Status: t.Status, Attempt: t.Restarts, Endpoint: "localhost",
			StartTime: start, EndTime: end, Duration: duration}
		st.Metrics.ReadRecords, st.Metrics.WriteRecords = t.RecordsIn, t.RecordsOut
		st.Metrics.ReadRecordsComplete, st.Metrics.WriteRecordsComplete = true, true
		d.Subtasks = append(d.Subtasks, st)
	}
	reply(w, http.StatusOK, d)
}

// metricValue is one metric as Flink's metrics answers list it.
type metricValue struct {
	ID    string `json:"id"`
	Value string `json:"value"`
}

// watermarks answers GET …/vertices/:vertexid/watermarks: each subtask's
// current input watermark (Flink writes Long.MIN_VALUE before the first).
func (s *Server) watermarks(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
	op, ok := vertex(w, r, snap)
	if !ok {
		return
	}
	out := []metricValue{}
	for _, t := range subtasksOf(snap, op) {
		v := fmt.Sprint(t.Watermark)
		if t.Watermark == 0 {
			v = "-9223372036854775808"
		}
		out = append(out, metricValue{ID: fmt.Sprintf("%d.currentInputWatermark", t.Index), Value: v})
	}
	reply(w, http.StatusOK, out)
}

// jobMetrics answers GET /jobs/:jobid/metrics?get=…: the job's metrics
// that faultline counts (numRestarts), the others left out as Flink
// leaves out a metric it does not have; without get, their names.
func (s *Server) jobMetrics(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
	have := map[string]string{"numRestarts": fmt.Sprint(snap.Restart.Restarts)}
	get := r.URL.Query().Get("get")
	out := []metricValue{}
	if get == "" {
		for _, id := range slices.Sorted(maps.Keys(have)) {
			out = append(out, metricValue{ID: id})
		}
		reply(w, http.StatusOK, out)
		return
	}
	for _, id := range strings.Split(get, ",") {
		if v, ok := have[id]; ok {
			out = append(out, metricValue{ID: id, Value: v})
		}
	}
	reply(w, http.StatusOK, out)
}

// CheckpointConfig is Flink's CheckpointConfigInfo, with the fields a run
// has: what GET /jobs/:jobid/checkpoints/config answers, of a run or of
// a Flink job (attach reads it).
type CheckpointConfig struct {
	Mode                     string `json:"mode"`
	Interval                 int64  `json:"interval"`
	Timeout                  int64  `json:"timeout"`
	MinPause                 int64  `json:"min_pause"`
	MaxConcurrent            int    `json:"max_concurrent"`
	StateBackend             string `json:"state_backend"`
	CheckpointStorage        string `json:"checkpoint_storage"`
	UnalignedCheckpoints     bool   `json:"unaligned_checkpoints"`
	TolerableFailed          int    `json:"tolerable_failed_checkpoints"`
	AlignedCheckpointTimeout int64  `json:"aligned_checkpoint_timeout"`
}

// checkpointConfig answers as Flink does, which has no configuration to
// give of a job without periodic checkpoints.
func (s *Server) checkpointConfig(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
	j := snap.Job
	if j.Interval == 0 {
		fail(w, http.StatusNotFound, "Checkpointing is not enabled for this job ("+snap.Job.Name+").")
		return
	}
	c := CheckpointConfig{Mode: "exactly_once", Interval: ms(j.Interval), Timeout: ms(j.CheckpointTimeout),
		MinPause: ms(j.MinPause), MaxConcurrent: j.MaxConcurrent, StateBackend: j.StateBackend,
		CheckpointStorage: j.CheckpointStorage, UnalignedCheckpoints: j.Mode == "exactly-once unaligned",
		TolerableFailed: j.TolerableFailures, AlignedCheckpointTimeout: ms(j.AlignedTimeout)}
	if j.Mode == "at-least-once" {
		c.Mode = "at_least_once"
	}
	reply(w, http.StatusOK, c)
}

// configEntry is one key of Flink's job configuration answer.
type configEntry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// jobConfig answers GET /jobs/:jobid/jobmanager/config: the run's
// settings by Flink's keys, when the job tells them.
func (s *Server) jobConfig(w http.ResponseWriter, r *http.Request, snap view.Snapshot) {
	c, ok := s.job.(Configured)
	if !ok {
		fail(w, http.StatusNotFound, "Not found: "+r.URL.Path)
		return
	}
	conf := c.Config()
	out := []configEntry{}
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		out = append(out, configEntry{Key: k, Value: conf[k]})
	}
	reply(w, http.StatusOK, out)
}
