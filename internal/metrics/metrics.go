// Package metrics serves a running job's figures to Prometheus under
// Flink's metric names and scopes, as Flink's PrometheusReporter writes
// them: flink_jobmanager_job_<metric>{job_name} for the job,
// flink_taskmanager_job_task_<metric>{job_name, task_name, subtask_index}
// for each subtask; and faultline's own oracle as faultline_verify_<what>.
// Every scrape reads one snapshot of the job (runtime/view, what the
// terminal UI draws), so the figures agree with the screen and with one
// another; nothing is kept between scrapes.
package metrics

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/faultline-dev/faultline/runtime/view"
)

// Scopes of Flink's PrometheusReporter.
const (
	jobScope      = "flink_jobmanager_job_"
	taskScope     = "flink_taskmanager_job_task_"
	operatorScope = "flink_taskmanager_job_task_operator_"
)

// desc is one metric: its name in its scope, its help, and how to read it
// from a snapshot (per subtask when task is set). Every metric is a
// Prometheus gauge, counts too, as Flink's reporter exports them.
type desc struct {
	name string // with its scope
	d    *prometheus.Desc
	job  func(s view.Snapshot) float64
	task func(t view.Task, last view.SubtaskAck) float64
	// has says which subtasks have the metric (nil: all).
	has func(t view.Task) bool
	// operator: its labels name the operator too (operator scope).
	operator bool
}

func jobMetric(name, help string, f func(view.Snapshot) float64) desc {
	return desc{name: jobScope + name, d: prometheus.NewDesc(jobScope+name, help, []string{"job_name"}, nil), job: f}
}

func taskMetric(name, help string, f func(view.Task, view.SubtaskAck) float64) desc {
	return desc{name: taskScope + name, d: prometheus.NewDesc(taskScope+name, help, []string{"job_name", "task_name", "subtask_index"}, nil), task: f}
}

// sourceMetric is a metric of the source subtasks whose reader has it, in
// the operator scope, as Flink's Kafka source registers its consumer's
// metrics (the operator's group, then KafkaSourceReader.KafkaConsumer).
func sourceMetric(name, help string, has func(view.Task) bool, f func(view.Task) float64) desc {
	return desc{name: operatorScope + name, operator: true, has: has,
		d:    prometheus.NewDesc(operatorScope+name, help, []string{"job_name", "task_name", "subtask_index", "operator_name"}, nil),
		task: func(t view.Task, _ view.SubtaskAck) float64 { return f(t) }}
}

func ownMetric(name, help string, f func(view.Snapshot) float64) desc {
	return desc{name: "faultline_verify_" + name, d: prometheus.NewDesc("faultline_verify_"+name, help, []string{"job_name"}, nil), job: f}
}

// descs are the metrics served, in Flink's names.
var descs = []desc{
	jobMetric("numRestarts", "Restarts of the job since it started (Flink: numRestarts).",
		func(s view.Snapshot) float64 { return float64(s.Restart.Restarts) }),
	jobMetric("numberOfCompletedCheckpoints", "Completed checkpoints and savepoints.",
		func(s view.Snapshot) float64 { return float64(s.Checkpoints.Completed) }),
	jobMetric("numberOfFailedCheckpoints", "Failed checkpoints.",
		func(s view.Snapshot) float64 { return float64(s.Checkpoints.Failed) }),
	jobMetric("numberOfInProgressCheckpoints", "Checkpoints in progress.",
		func(s view.Snapshot) float64 { return float64(s.Checkpoints.InProgress) }),
	jobMetric("lastCheckpointDuration", "End-to-end duration of the last completed checkpoint, in milliseconds (the job's clock).",
		func(s view.Snapshot) float64 { return float64(lastCompleted(s).Duration.Milliseconds()) }),
	jobMetric("lastCheckpointSize", "Full size of the last completed checkpoint, in bytes.",
		func(s view.Snapshot) float64 { return float64(lastCompleted(s).FullBytes) }),
	taskMetric("numRecordsIn", "Records the subtask took in.",
		func(t view.Task, _ view.SubtaskAck) float64 { return float64(t.RecordsIn) }),
	taskMetric("numRecordsOut", "Records the subtask sent on.",
		func(t view.Task, _ view.SubtaskAck) float64 { return float64(t.RecordsOut) }),
	taskMetric("numRecordsInPerSecond", "Records the subtask took in per second, over the last sample.",
		func(t view.Task, _ view.SubtaskAck) float64 { return t.RateIn }),
	taskMetric("busyTimeMsPerSecond", "Milliseconds per second the subtask worked.",
		func(t view.Task, _ view.SubtaskAck) float64 { return 1000 * t.Busy }),
	taskMetric("backPressuredTimeMsPerSecond", "Milliseconds per second the subtask waited for room downstream.",
		func(t view.Task, _ view.SubtaskAck) float64 { return 1000 * t.BackPressureRatio }),
	taskMetric("idleTimeMsPerSecond", "Milliseconds per second the subtask waited for input.",
		func(t view.Task, _ view.SubtaskAck) float64 { return max(0, 1000*(1-t.Busy-t.BackPressureRatio)) }),
	taskMetric("checkpointAlignmentTime", "How long the subtask aligned its barriers for the last completed checkpoint, in nanoseconds.",
		func(_ view.Task, a view.SubtaskAck) float64 { return float64(a.Alignment.Nanoseconds()) }),
	taskMetric("checkpointStartDelayNanos", "How long the first barrier of the last completed checkpoint took to reach the subtask, in nanoseconds.",
		func(_ view.Task, a view.SubtaskAck) float64 { return float64(a.StartDelay.Nanoseconds()) }),
	sourceMetric("KafkaSourceReader_KafkaConsumer_records_lag_max", "The most records any partition of the source subtask holds past the next one it reads, as the broker last told (Kafka: records-lag-max).",
		func(t view.Task) bool { return t.Lag >= 0 }, func(t view.Task) float64 { return float64(t.Lag) }),
	ownMetric("committed", "Records in the committed output, as the live verification read it.",
		func(s view.Snapshot) float64 { return float64(s.Verify.Committed) }),
	ownMetric("duplicates", "Ids found more than once in the committed output.",
		func(s view.Snapshot) float64 { return float64(s.Verify.Duplicates) }),
	ownMetric("lost", "Ids a completed checkpoint covered that the committed output lacks.",
		func(s view.Snapshot) float64 { return float64(s.Verify.Lost) }),
}

// lastCompleted is the newest completed checkpoint of s (zero when none).
func lastCompleted(s view.Snapshot) view.Checkpoint {
	for _, c := range s.Checkpoints.History { // newest first
		if c.Status == view.StatusCompleted {
			return c
		}
	}
	return view.Checkpoint{}
}

// Collector is a prometheus.Collector of a job's snapshots.
type Collector struct {
	snapshot func() view.Snapshot
}

// New is the collector of the job whose snapshots snapshot takes.
func New(snapshot func() view.Snapshot) *Collector { return &Collector{snapshot: snapshot} }

var _ prometheus.Collector = (*Collector)(nil)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d.d
	}
}

// Collect implements prometheus.Collector: one snapshot, every metric.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.snapshot()
	last := lastCompleted(s)
	const kind = prometheus.GaugeValue
	for _, d := range descs {
		if d.job != nil {
			ch <- prometheus.MustNewConstMetric(d.d, kind, d.job(s), s.Job.Name)
			continue
		}
		for _, t := range s.Tasks {
			if d.has != nil && !d.has(t) {
				continue
			}
			labels := []string{s.Job.Name, t.Operator, strconv.Itoa(t.Index)}
			if d.operator {
				labels = append(labels, t.Operator)
			}
			ch <- prometheus.MustNewConstMetric(d.d, kind, d.task(t, last.AckedTasks[t.Name]), labels...)
		}
	}
}

// Server serves the job's metrics over HTTP at /metrics, and Go's
// profiles at /debug/pprof/ when asked.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Serve listens on addr (host:port) and serves c there until Close.
func Serve(addr string, c *Collector, pprofToo bool) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if pprofToo {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go s.srv.Serve(ln) // ends with Close
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }
