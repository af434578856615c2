package faults

import (
	"fmt"
	"slices"
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// Region failover on the pipeline job, as a user runs it: enrich/2 fails,
// only its pipeline (source/2, enrich/2, sink/2) restarts — the report and
// the events name them — and the committed output is still exact.
func TestRegionFailoverOnThePipelineJob(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "--job", "../../../fixtures/jobs/pipeline.yaml", "--records", "40000", "--rate", "20000",
		"--checkpoint-interval", "100ms", "--restart-delay", "50ms", "--failover-strategy", "region",
		"--inject", "after-records=2500,task=enrich/2,fault=panic")
	if r.Code != 0 || r.Report == nil {
		t.Fatalf("exit %d, stderr %s", r.Code, r.Stderr)
	}
	region := []string{"source/2", "enrich/2", "sink/2"}
	fos, _ := r.Report["failovers"].([]any)
	if r.Report["failover"] != "region" || len(fos) != 1 {
		t.Fatalf("report failover %v failovers %v", r.Report["failover"], r.Report["failovers"])
	}
	if got := fmt.Sprint(fos[0].(map[string]any)["restarted"]); got != fmt.Sprint(region) {
		t.Fatalf("report says %s restarted, want %v", got, region)
	}
	if e2e.Num(r.Report, "verify", "duplicates") != 0 || e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "expected") == 0 {
		t.Fatalf("verify %v", r.Report["verify"])
	}
	named := false
	for _, e := range r.Events {
		switch e["event"] {
		case "failover", "restart_scheduled":
			named = named || fmt.Sprint(e["tasks"]) == fmt.Sprint(region)
		case "task_status":
			if e["status"] == "CANCELED" && !slices.Contains(region, e["task"].(string)) {
				t.Errorf("%s was canceled, but it is not in the failed region", e["task"])
			}
		}
	}
	if !named {
		t.Error("no failover or restart_scheduled event names the region's tasks")
	}
}

// Individual failover loses data, and says how much: the report's
// lost_by_failover equals the oracle's lost, counted from the committed
// output topic, and the run exits 4 because the output is not complete.
func TestIndividualFailoverReportsWhatItLost(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "--records", "50000", "--rate", "50000",
		"--checkpoint-interval", "300ms", "--restart-delay", "50ms", "--failover-strategy", "individual",
		"--inject", "after-records=20000,task=join/1,fault=panic")
	if r.Code != 4 || r.Report == nil {
		t.Fatalf("exit %d, want 4 (records lost); stderr %s", r.Code, r.Stderr)
	}
	lost := e2e.Num(r.Report, "verify", "lost")
	if lost == 0 || e2e.Num(r.Report, "lost_by_failover") != lost {
		t.Fatalf("lost_by_failover %v, oracle's lost %v: want the same, above 0", r.Report["lost_by_failover"], lost)
	}
	if e2e.Num(r.Report, "verify", "duplicates") != 0 {
		t.Fatalf("verify %v", r.Report["verify"])
	}
	events := 0
	for _, e := range r.Events {
		if e["event"] == "records_lost" {
			events++
		}
	}
	if events == 0 {
		t.Fatal("no records_lost event")
	}
}

// What individual failover lost is made good when the whole job restarts
// from a checkpoint no later than the one it went back to: the report's
// lost_by_failover then drops what was replayed, and agrees with the
// oracle's lost (here both 0).
func TestFullRestartTakesBackWhatIndividualFailoverLost(t *testing.T) {
	t.Parallel()
	// The panic comes long before the first checkpoint (3s); the storage
	// failure fails that checkpoint, which fails the whole job over, back
	// to the beginning.
	r := e2e.Faultline(t, "run", "--headless", "--records", "100000", "--rate", "20000",
		"--checkpoint-interval", "3s", "--restart-delay", "50ms", "--failover-strategy", "individual",
		"--inject", "after-records=5000,task=join/1,fault=panic", "--inject", "after=1s,fault=storage-fail")
	if r.Code != 0 || r.Report == nil {
		t.Fatalf("exit %d, stderr %s", r.Code, r.Stderr)
	}
	var lost, replayed float64
	for _, e := range r.EventsNamed("records_lost") {
		lost += e["records"].(float64)
	}
	for _, e := range r.EventsNamed("records_replayed") {
		replayed += e["records"].(float64)
	}
	if lost == 0 || replayed != lost {
		t.Fatalf("records_lost %v, records_replayed %v: want the same, above 0", lost, replayed)
	}
	if e2e.Num(r.Report, "lost_by_failover") != 0 || e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 {
		t.Fatalf("lost_by_failover %v, verify %v", r.Report["lost_by_failover"], r.Report["verify"])
	}
}
