package metrics

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"faultline/runtime/view"
)

func snapshot() view.Snapshot {
	return view.Snapshot{
		Job: view.JobInfo{Name: "orders"},
		Tasks: map[string]view.Task{
			"join/1": {Name: "join/1", Operator: "join", Index: 1, RecordsIn: 120, RecordsOut: 60, RateIn: 40, Busy: 0.25, BackPressureRatio: 0.5},
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

// Every metric, under Flink's name and scope, with the snapshot's values:
// the last completed checkpoint's (not the pending one's) for the
// checkpoint figures.
func TestCollectorSpeaksFlinksNames(t *testing.T) {
	want := `
flink_jobmanager_job_numRestarts{job_name="orders"} 2
flink_jobmanager_job_numberOfCompletedCheckpoints{job_name="orders"} 3
flink_jobmanager_job_numberOfFailedCheckpoints{job_name="orders"} 1
flink_jobmanager_job_numberOfInProgressCheckpoints{job_name="orders"} 1
flink_jobmanager_job_lastCheckpointDuration{job_name="orders"} 1500
flink_jobmanager_job_lastCheckpointSize{job_name="orders"} 4096
flink_taskmanager_job_task_numRecordsIn{job_name="orders",subtask_index="1",task_name="join"} 120
flink_taskmanager_job_task_numRecordsOut{job_name="orders",subtask_index="1",task_name="join"} 60
flink_taskmanager_job_task_numRecordsInPerSecond{job_name="orders",subtask_index="1",task_name="join"} 40
flink_taskmanager_job_task_busyTimeMsPerSecond{job_name="orders",subtask_index="1",task_name="join"} 250
flink_taskmanager_job_task_backPressuredTimeMsPerSecond{job_name="orders",subtask_index="1",task_name="join"} 500
flink_taskmanager_job_task_idleTimeMsPerSecond{job_name="orders",subtask_index="1",task_name="join"} 250
flink_taskmanager_job_task_checkpointAlignmentTime{job_name="orders",subtask_index="1",task_name="join"} 3e+06
flink_taskmanager_job_task_checkpointStartDelayNanos{job_name="orders",subtask_index="1",task_name="join"} 1e+06
faultline_verify_committed{job_name="orders"} 50
faultline_verify_duplicates{job_name="orders"} 1
faultline_verify_lost{job_name="orders"} 2
`
	c := New(snapshot)
	if n := testutil.CollectAndCount(c); n != 17 {
		t.Errorf("%d metrics, want 17", n)
	}
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		name := line[:strings.IndexAny(line, "{ ")]
		if err := testutil.CollectAndCompare(c, strings.NewReader(typed(name)+line+"\n"), name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// typed is the # HELP and # TYPE lines the exposition format puts before
// a metric, as the collector describes it.
func typed(name string) string {
	for _, d := range descs {
		if strings.Contains(d.d.String(), `"`+name+`"`) {
			help := d.d.String()
			help = help[strings.Index(help, "help: \"")+7:]
			help = help[:strings.Index(help, "\"")]
			return "# HELP " + name + " " + help + "\n# TYPE " + name + " gauge\n"
		}
	}
	return ""
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
		s := d.d.String()
		s = s[strings.Index(s, `fqName: "`)+9:]
		served[s[:strings.Index(s, `"`)]] = true
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
