package runs

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// scrape reads url's metrics: each job-level sample by name.
func scrape(t *testing.T, url string) (string, map[string]float64) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	job := map[string]float64{}
	for _, m := range regexp.MustCompile(`(?m)^(\w+)\{job_name="orders"\} (\S+)$`).FindAllStringSubmatch(string(b), -1) {
		job[m[1]], _ = strconv.ParseFloat(m[2], 64)
	}
	return string(b), job
}

// --metrics-addr serves Flink's metrics while the job runs; once it has
// finished they say what the report says.
func TestMetricsWhileTheJobRuns(t *testing.T) {
	t.Parallel()
	cmd, stderr, lines := e2e.StartRun(t, "run", "--headless", "--records", "60000", "--rate", "6000",
		"--checkpoint-interval", "300ms", "--restart-delay", "100ms", "--metrics-addr", "127.0.0.1:0",
		"--inject", "after-records=15000,task=join/1,fault=panic", "--state-dir", t.TempDir())
	url := ""
	for ev := range lines {
		if text, _ := ev["text"].(string); ev["event"] == "notice" && strings.Contains(text, "/metrics") {
			url = regexp.MustCompile(`http://\S+/metrics`).FindString(text)
			break
		}
	}
	if url == "" {
		t.Fatalf("no notice of the metrics' address; stderr:\n%s", stderr)
	}
	e2e.WaitEvents(t, lines, "checkpoint_completed", 2)
	body, _ := scrape(t, url)
	for _, name := range []string{"flink_jobmanager_job_numRestarts", "flink_jobmanager_job_lastCheckpointDuration",
		"flink_jobmanager_job_lastCheckpointSize", "flink_jobmanager_job_numberOfCompletedCheckpoints",
		"flink_jobmanager_job_numberOfFailedCheckpoints", "flink_jobmanager_job_numberOfInProgressCheckpoints",
		`flink_taskmanager_job_task_numRecordsIn{job_name="orders",subtask_index="1",task_name="join"}`,
		"flink_taskmanager_job_task_numRecordsOut", "flink_taskmanager_job_task_numRecordsInPerSecond",
		"flink_taskmanager_job_task_busyTimeMsPerSecond", "flink_taskmanager_job_task_idleTimeMsPerSecond",
		"flink_taskmanager_job_task_backPressuredTimeMsPerSecond", "flink_taskmanager_job_task_checkpointAlignmentTime",
		"flink_taskmanager_job_task_checkpointStartDelayNanos", "faultline_verify_duplicates", "faultline_verify_lost",
		`flink_taskmanager_job_task_operator_KafkaSourceReader_KafkaConsumer_records_lag_max{job_name="orders",operator_name="orders-source",subtask_index="1",task_name="orders-source"}`} {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	var final map[string]float64
	for ev := range lines {
		if ev["event"] == "job_status" && ev["status"] == "FINISHED" {
			_, final = scrape(t, url) // the verification that follows leaves the job's figures as they are
			break
		}
	}
	report := e2e.ReportOf(lines)
	cmd.Wait()
	if report == nil || final == nil {
		t.Fatalf("report %v, final metrics %v; stderr:\n%s", report, final, stderr)
	}
	cps := report["checkpoints"].(map[string]any)
	verdict := report["verify"].(map[string]any)
	for name, want := range map[string]float64{
		"faultline_verify_duplicates":                       verdict["duplicates"].(float64),
		"faultline_verify_lost":                             verdict["lost"].(float64),
		"flink_jobmanager_job_numRestarts":                  report["restarts"].(float64),
		"flink_jobmanager_job_numberOfCompletedCheckpoints": cps["completed"].(float64),
		"flink_jobmanager_job_numberOfFailedCheckpoints":    cps["failed"].(float64),
	} {
		if final[name] != want {
			t.Errorf("%s = %v at the end, the report says %v", name, final[name], want)
		}
	}
	if final["flink_jobmanager_job_numRestarts"] < 1 {
		t.Errorf("numRestarts %v after an injected panic", final["flink_jobmanager_job_numRestarts"])
	}
}
