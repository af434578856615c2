package metrics

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/faultline-dev/faultline/runtime/view"
)

func snapshot() view.Snapshot {
	return view.Snapshot{
		Job: view.JobInfo{Name: "orders"},
		Tasks: map[string]view.Task{
			"join/1": {Name: "join/1", Operator: "join", Index: 1, RecordsIn: 120, RecordsOut: 60, RateIn: 40, Busy: 0.25, BackPressureRatio: 0.5, Lag: 42},
		},
		Checkpoints: view.Checkpoints{Completed: 3, Failed: 1, InProgress: 1, History: []view.Checkpoint{
			{ID: 5, Status: view.StatusPending},
			{ID: 4, Status: view.StatusCompleted, Duration: 1500 * time.Millisecond, FullBytes: 4096,
				AckedTasks: map[string]view.SubtaskAck{"join/1": {Alignment: 3 * time.Millisecond, StartDelay: time.Millisecond}}},
			{ID: 3, Status: view.StatusCompleted, Duration: time.Second},
		}},
		Restart: view.Restart{Restarts: 2},
		Verify:  view.Verify{Available: true, Committed: 50, Duplicates: 1, Lost: 2},
	}
}

// gathered is every sample c gives, as the exposition format writes it:
// name{label="value",…} (labels sorted) → value.
func gathered(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetType() != dto.MetricType_GAUGE {
			t.Errorf("%s is a %s, want a gauge as Flink's reporter exports it", f.GetName(), f.GetType())
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}

// Every metric, under Flink's name and scope, with the snapshot's values:
// the last completed checkpoint's (not the pending one's) for the
// checkpoint figures.
func TestCollectorSpeaksFlinksNames(t *testing.T) {
	job := `{job_name="orders"}`
	task := `{job_name="orders",subtask_index="1",task_name="join"}`
	want := map[string]float64{
		"flink_jobmanager_job_numRestarts" + job:                         2,
		"flink_jobmanager_job_numberOfCompletedCheckpoints" + job:        3,
		"flink_jobmanager_job_numberOfFailedCheckpoints" + job:           1,
		"flink_jobmanager_job_numberOfInProgressCheckpoints" + job:       1,
		"flink_jobmanager_job_lastCheckpointDuration" + job:              1500,
		"flink_jobmanager_job_lastCheckpointSize" + job:                  4096,
		"flink_taskmanager_job_task_numRecordsIn" + task:                 120,
		"flink_taskmanager_job_task_numRecordsOut" + task:                60,
		"flink_taskmanager_job_task_numRecordsInPerSecond" + task:        40,
		"flink_taskmanager_job_task_busyTimeMsPerSecond" + task:          250,
		"flink_taskmanager_job_task_backPressuredTimeMsPerSecond" + task: 500,
		"flink_taskmanager_job_task_idleTimeMsPerSecond" + task:          250,
		"flink_taskmanager_job_task_checkpointAlignmentTime" + task:      3e6,
		"flink_taskmanager_job_task_checkpointStartDelayNanos" + task:    1e6,
		"flink_taskmanager_job_task_operator_KafkaSourceReader_KafkaConsumer_records_lag_max" +
			`{job_name="orders",operator_name="join",subtask_index="1",task_name="join"}`: 42,
		"faultline_verify_committed" + job:  50,
		"faultline_verify_duplicates" + job: 1,
		"faultline_verify_lost" + job:       2,
	}
	got := gathered(t, New(snapshot))
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (served: %v), want %v", k, g, ok, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d samples served, want %d: %v", len(got), len(want), got)
	}
	// A subtask whose lag is not known (not a Kafka source, or before its
	// first fetch) has no records-lag-max.
	unknown := func() view.Snapshot {
		s := snapshot()
		t := s.Tasks["join/1"]
		t.Lag = -1
		s.Tasks["join/1"] = t
		return s
	}
	for k := range gathered(t, New(unknown)) {
		if strings.Contains(k, "records_lag_max") {
			t.Errorf("%s served for a lag not known", k)
		}
	}
}

// The server serves the metrics at /metrics, and the profiles only when
// asked.
func TestServe(t *testing.T) {
	for _, pprofToo := range []bool{false, true} {
		s, err := Serve("127.0.0.1:0", New(snapshot), pprofToo)
		if err != nil {
			t.Fatal(err)
		}
		body := get(t, "http://"+s.Addr()+"/metrics", 200)
		if !strings.Contains(body, `flink_jobmanager_job_numRestarts{job_name="orders"} 2`) {
			t.Errorf("/metrics lacks numRestarts:\n%s", body)
		}
		want := 404
		if pprofToo {
			want = 200
		}
		get(t, "http://"+s.Addr()+"/debug/pprof/", want)
		s.Close()
	}
	if _, err := Serve("256.0.0.1:1", New(snapshot), false); err == nil || !strings.Contains(err.Error(), "--metrics-addr 256.0.0.1:1") {
		t.Errorf("Serve on a bad address = %v, want an error naming it", err)
	}
}

func get(t *testing.T, url string, code int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != code {
		t.Errorf("GET %s: %d, want %d", url, resp.StatusCode, code)
	}
	return string(b)
}

// The Grafana dashboard in docs/ draws only metrics the collector serves.
func TestDashboardNamesServedMetrics(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, d := range descs {
		served[d.name] = true
	}
	drawn := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			name := tg.Expr[:strings.IndexAny(tg.Expr, "{(")]
			if !served[name] {
				t.Errorf("the dashboard draws %s, which is not served", name)
			}
			drawn++
		}
	}
	if drawn < len(descs) {
		t.Errorf("the dashboard draws %d series, fewer than the %d metrics", drawn, len(descs))
	}
}
