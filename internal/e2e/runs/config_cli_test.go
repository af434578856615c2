package runs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// essence is what a run's events say of its settings and its course,
// without what differs from one run to the next (times, paths, ports,
// which checkpoint a restart found).
func essence(r e2e.Result) []string {
	keep := map[string][]string{
		"run_started":       {"checkpoint_interval_ms", "mode", "state_backend", "sink_guarantee", "records", "seed", "incremental"},
		"task_failed":       {"task", "fault"},
		"job_status":        {"status"},
		"failover":          {"failed", "strategy"},
		"restart_scheduled": {"description", "strategy", "failover", "delay_ms"},
	}
	var out []string
	for _, e := range r.Events {
		fields, ok := keep[e["event"].(string)]
		if !ok {
			continue
		}
		line := e["event"].(string)
		for _, f := range fields {
			line += fmt.Sprintf(" %s=%v", f, e[f])
		}
		out = append(out, line)
	}
	return out
}

// Settings by Flink key (-D, a config file, FAULTLINE_* variables) make the
// same run as the flags they stand for.
func TestFlinkKeysRunAsTheirFlags(t *testing.T) {
	t.Parallel()
	common := []string{"run", "--headless", "--records", "6000", "--rate", "3000",
		"--inject", "after-records=2000,task=join/0,fault=panic"}
	byFlags := e2e.Faultline(t, append(common, "--checkpoint-interval", "500ms", "--restart-strategy", "failure-rate",
		"--failure-rate-delay", "200ms", "--state-backend", "heap")...)
	byKeys := e2e.Faultline(t, append(common, "-D", "execution.checkpointing.interval=500ms",
		"-D", "restart-strategy.type=failure-rate", "-D", "restart-strategy.failure-rate.delay=200 ms",
		"-D", "state.backend.type=hashmap")...)
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte("execution:\n  checkpointing:\n    interval: 500 ms\nrestart-strategy:\n  type: failure-rate\n  failure-rate.delay: 200 ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	byFile := e2e.Faultline(t, append(common, "--config", config)...)
	for name, r := range map[string]e2e.Result{"flags": byFlags, "-D": byKeys, "--config": byFile} {
		if r.Code != 0 || r.Report == nil || r.Report["verify"].(map[string]any)["ok"] != true {
			t.Fatalf("%s: exit %d, report %v, stderr %s", name, r.Code, r.Report, r.Stderr)
		}
	}
	want := essence(byFlags)
	if !slices.ContainsFunc(want, func(l string) bool {
		return strings.Contains(l, "failure-rate (at most 1 failure per 1m0s, delay 200ms)")
	}) {
		t.Fatalf("the run by flags did not restart by failure-rate:\n%s", strings.Join(want, "\n"))
	}
	for name, r := range map[string]e2e.Result{"-D": byKeys, "--config": byFile} {
		if got := essence(r); !slices.Equal(got, want) {
			t.Errorf("the run by %s differs from the run by flags:\n%s\n--- by flags:\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// An unknown key stops the run before it starts, with exit 2 and the
// nearest key; --print-config prints where each value came from.
func TestConfigKeysFromTheCommandLine(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "-D", "execution.checkpointing.intervall=1s")
	if r.Code != 2 || !strings.Contains(r.Stderr, "did you mean execution.checkpointing.interval?") {
		t.Errorf("unknown key: exit %d, stderr %q; want 2 and a suggestion", r.Code, r.Stderr)
	}
	out, err := e2e.Command(t, "run", "--print-config", "-D", "state.backend.type=hashmap", "--min-pause", "1s").Output()
	if err != nil {
		t.Fatalf("--print-config: %v", err)
	}
	for _, want := range []string{"state.backend.type: heap  # -D\n", "execution.checkpointing.min-pause: 1 s  # flag\n",
		"restart-strategy.type: fixed-delay  # default (Flink 2.x: exponential-delay when checkpointing is on"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("--print-config lacks %q:\n%s", want, out)
		}
	}
}
