package runs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// The tests here run the real binary as a user would and read what it
// prints: JSON lines on stdout, one-line errors on stderr, exit codes.

func TestHeadlessRunWithFailureIsExact(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "--records", "50000",
		"--inject", "after-records=20000,task=join/1,fault=panic",
		"--checkpoint-interval", "200ms", "--restart-delay", "50ms")
	if r.Code != 0 {
		t.Fatalf("exit %d, stderr %s", r.Code, r.Stderr)
	}
	if r.Report == nil {
		t.Fatalf("no report line; stdout ends %q", r.Stdout[max(0, len(r.Stdout)-300):])
	}
	if e2e.Num(r.Report, "restarts") < 1 || e2e.Num(r.Report, "verify", "duplicates") != 0 || e2e.Num(r.Report, "verify", "lost") != 0 {
		t.Fatalf("report %v", r.Report)
	}
	if r.Report["status"] != "FINISHED" || r.Report["verify"].(map[string]any)["ok"] != true {
		t.Fatalf("report %v", r.Report)
	}
	if v := r.EventsNamed("verify_started"); len(v) != 1 || v[0]["job_status"] != "FINISHED" {
		t.Fatalf("verify_started events %v, want one after the job FINISHED", v)
	}
	// Every event has a name and a time, as the headless contract says.
	names := map[string]bool{}
	for _, e := range r.Events {
		if _, ok := e["event"].(string); !ok {
			t.Fatalf("event without a name: %v", e)
		}
		if _, ok := e["at_ms"].(float64); !ok {
			t.Fatalf("event without at_ms: %v", e)
		}
		names[e["event"].(string)] = true
	}
	for _, want := range []string{"job_status", "task_status", "checkpoint_triggered", "checkpoint_completed", "task_failed", "restart_scheduled", "restored"} {
		if !names[want] {
			t.Errorf("no %s event", want)
		}
	}
}

// The engine's failure runs, on the embedded broker: panics in the join,
// revenue, parse and source tasks, and several failures in one run, all
// counted from the committed output topic as a read_committed consumer sees
// it.
func TestFailureRunsOnKafkaAreExact(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		// Of 30,000 records each subtask of revenue, parse-orders and the
		// sources handles about 7,000, of join about 15,000.
		"revenue panics": {"after-records=4000,task=revenue/0,fault=panic"},
		"parse panics":   {"after-records=5000,task=parse-orders/1,fault=panic"},
		"source panics":  {"after-records=4000,task=payments-source/1,fault=panic"},
		"three failures": {
			"after-records=6000,task=join/1,fault=panic",
			"after-records=4500,task=revenue/0,fault=error",
			"after-records=6000,task=orders-source/0,fault=panic",
		},
	}
	for name, faults := range cases {
		t.Run(name, func(t *testing.T) {
			args := []string{"run", "--headless", "--records", "30000", "--checkpoint-interval", "100ms", "--restart-delay", "50ms"}
			for _, f := range faults {
				args = append(args, "--inject", f)
			}
			r := e2e.Faultline(t, args...)
			if r.Code != 0 || r.Report == nil {
				t.Fatalf("exit %d, stderr %s", r.Code, r.Stderr)
			}
			if e2e.Num(r.Report, "restarts") < float64(len(faults)) || e2e.Num(r.Report, "verify", "duplicates") != 0 ||
				e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "expected") == 0 {
				t.Fatalf("report %v", r.Report)
			}
		})
	}
}

// Without transactions the sink's output shows the replay after a failure:
// duplicates appear, records never go missing. No checkpoint completes
// before the failure (the interval is ten minutes), so the job starts again
// from the beginning and every batch the sink flushed before it (4,096
// records per partition: some have filled by then) is written twice.
func TestAtLeastOnceSinkDuplicatesButNeverLoses(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "--records", "60000", "--sink-guarantee", "at-least-once",
		"--checkpoint-interval", "10m", "--restart-delay", "50ms",
		"--inject", "after-records=6000,task=revenue/1,fault=panic")
	expected, committed := e2e.Num(r.Report, "verify", "expected"), e2e.Num(r.Report, "verify", "committed")
	dups := e2e.Num(r.Report, "verify", "duplicates")
	if r.Code != 0 || e2e.Num(r.Report, "verify", "lost") != 0 || expected == 0 {
		t.Fatalf("exit %d report %v stderr %s", r.Code, r.Report, r.Stderr)
	}
	if dups == 0 || committed != expected+dups {
		t.Fatalf("no duplicate after a failure with an at-least-once sink, or they do not add up: %v", r.Report["verify"])
	}
}

func TestAtLeastOnceExitsZeroWithoutLoss(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "--records", "50000", "--mode", "at-least-once",
		"--inject", "after-records=20000,task=join/1,fault=panic",
		"--checkpoint-interval", "200ms", "--restart-delay", "50ms")
	if r.Code != 0 || e2e.Num(r.Report, "verify", "lost") != 0 || r.Report["mode"] != "at-least-once" {
		t.Fatalf("exit %d report %v stderr %s", r.Code, r.Report, r.Stderr)
	}
}

// An at-least-once run with a failure, stopped by Ctrl-C, counts the output
// its join let out past the last checkpoint as after_checkpoint: nothing
// unexpected, exit 0.
func TestStoppedAtLeastOnceRunExitsZero(t *testing.T) {
	t.Parallel()
	cmd, stderr, lines := e2e.StartRun(t, "run", "--headless", "--mode", "at-least-once", "--rate", "5000",
		"--checkpoint-interval", "200ms", "--restart-delay", "50ms", "--inject", "after=1s,task=join/1,fault=panic",
		"--listen", "0", "--state-dir", t.TempDir())
	e2e.WaitEvents(t, lines, "restored", 1) // after the failover
	e2e.WaitEvents(t, lines, "checkpoint_completed", 5)
	cmd.Process.Signal(syscall.SIGINT)
	report := e2e.ReportOf(lines)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 || report == nil || e2e.Num(report, "verify", "unexpected") != 0 || e2e.Num(report, "verify", "lost") != 0 {
		t.Fatalf("exit %d, report %v, stderr %q", code, report, stderr)
	}
	t.Logf("after_checkpoint %v", e2e.Num(report, "verify", "after_checkpoint"))
}

func TestBadInputExitsTwoWithOneLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: x\noperators:\n  - name: src\n    type: source\n    topic: orders\n    parallelism: two\n"), 0o644)
	big := filepath.Join(dir, "big.yaml")
	os.WriteFile(big, bytes.Repeat([]byte("# \n"), 1<<20), 0o644)
	direct := filepath.Join(dir, "direct.yaml")
	os.WriteFile(direct, []byte("name: direct\noperators:\n  - name: src\n    type: source\n    topic: orders\n  - name: out\n    type: sink\n    topic: enriched\n    inputs: [{from: src, edge: forward}]\n"), 0o644)
	cases := []struct {
		name string
		args []string
		want []string // substrings of the one line
	}{
		{"bad duration", []string{"run", "--headless", "--checkpoint-interval", "banana"}, []string{"--checkpoint-interval", "banana"}},
		{"bad mode", []string{"run", "--headless", "--mode", "twice"}, []string{"--mode", "unaligned (exactly-once with --unaligned) or at-least-once"}},
		{"malformed job file", []string{"run", "--headless", "--job", bad}, []string{bad + ":6:", "parallelism", `"two"`}},
		{"missing job file", []string{"run", "--headless", "--job", filepath.Join(dir, "nope.yaml")}, []string{"nope.yaml"}},
		{"unknown fault", []string{"run", "--headless", "--inject", "task=join/1,fault=meteor"}, []string{"meteor", "panic"}},
		{"unknown task", []string{"run", "--headless", "--inject", "task=join/7,fault=panic"}, []string{"join/0 to join/1"}},
		{"unknown flag", []string{"run", "--headles"}, []string{"--headles"}},
		{"bad parallelism", []string{"run", "--headless", "--parallelism", "join=0"}, []string{"join"}},
		{"transaction timeout within the interval", []string{"run", "--headless", "--sink-transaction-timeout", "1s"}, []string{"--sink-transaction-timeout 1s", "--checkpoint-interval 2s"}},
		{"transaction timeout past the embedded broker's", []string{"run", "--headless", "--sink-transaction-timeout", "1h"}, []string{"--sink-transaction-timeout 1h", "at most 15m"}},
		{"negative rate", []string{"run", "--headless", "--rate=-5"}, []string{"--rate -5", "0 or more"}},
		{"rate NaN", []string{"run", "--headless", "--rate", "NaN"}, []string{"--rate NaN"}},
		{"rate Inf", []string{"run", "--headless", "--rate", "Inf"}, []string{"--rate +Inf"}},
		{"bad topic name", []string{"run", "--headless", "--topic", "orders-source=bad topic!"}, []string{`"bad topic!" is not a Kafka topic name`}},
		{"unwritable log file", []string{"run", "--headless", "--log-file", filepath.Join(dir, "no", "such", "dir", "x.log")}, []string{"--log-file", "no such file or directory"}},
		{"job file is a device", []string{"run", "--headless", "--job", "/dev/zero"}, []string{"/dev/zero", "not a regular file"}},
		{"job file is a folder", []string{"run", "--headless", "--job", dir}, []string{dir, "is a folder"}},
		{"job file too large", []string{"run", "--headless", "--job", big}, []string{"big.yaml", "more than the 1048576"}},
		{"broker-down with --brokers", []string{"run", "--headless", "--brokers", "127.0.0.1:1", "--inject", "after=1s,fault=broker-down"}, []string{"broker-down", "with --brokers there is none"}},
		{"source wired to the sink", []string{"run", "--headless", "--job", direct}, []string{"direct.yaml:9:", "emits raw bytes"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e2e.Faultline(t, tc.args...)
			if r.Code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", r.Code, r.Stderr)
			}
			line := strings.TrimRight(r.Stderr, "\n")
			if strings.Count(line, "\n") != 0 {
				t.Fatalf("error is not one line: %q", r.Stderr)
			}
			if strings.Contains(line, "goroutine") || strings.Contains(line, ".go:") {
				t.Fatalf("error looks like a stack trace: %q", line)
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Fatalf("error %q does not mention %q", line, w)
				}
			}
		})
	}
}

func TestRestartStrategyNoneFailsWithExitThree(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "--records", "20000", "--restart-strategy", "none",
		"--inject", "after-records=3000,task=revenue/1,fault=error")
	if r.Code != 3 || r.Report["status"] != "FAILED" {
		t.Fatalf("exit %d report %v", r.Code, r.Report)
	}
}

func TestFailureRateGivesUpWithExitThree(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "--records", "60000", "--checkpoint-interval", "100ms",
		"--restart-strategy", "failure-rate", "--failure-rate-max-failures", "1", "--failure-rate-interval", "1m", "--failure-rate-delay", "20ms",
		"--inject", "after-records=3000,task=join/0,fault=panic", "--inject", "after-records=5000,task=join/1,fault=panic")
	if r.Code != 3 || r.Report["status"] != "FAILED" {
		t.Fatalf("exit %d report %v", r.Code, r.Report)
	}
	if g, _ := r.Report["gave_up"].(string); !strings.Contains(g, "failure-rate") || !strings.Contains(g, "more than the 1 allowed") {
		t.Fatalf("gave_up %q", g)
	}
	if e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 {
		t.Fatalf("a failed job's committed output must still be exact up to its last checkpoint: %v", r.Report["verify"])
	}
}

func TestExponentialDelayGrowsItsBackoff(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "--records", "60000", "--checkpoint-interval", "100ms",
		"--restart-strategy", "exponential-delay", "--backoff-initial", "20ms", "--backoff-jitter", "0",
		"--inject", "after-records=3000,task=join/0,fault=panic", "--inject", "after-records=5000,task=join/1,fault=panic")
	if r.Code != 0 {
		t.Fatalf("exit %d %s", r.Code, r.Stderr)
	}
	var delays []float64
	for _, e := range r.Events {
		if e["event"] == "restart_scheduled" {
			delays = append(delays, e["delay_ms"].(float64))
		}
	}
	if len(delays) != 2 || delays[0] != 20 || delays[1] != 30 {
		t.Fatalf("delays %v ms, want [20 30] (initial 20ms, multiplier 1.5)", delays)
	}
}

// With a state TTL shorter than the time between many orders and their
// payments, those pairs are not joined, and the verification expects
// exactly the others: the oracle, reading the Kafka timestamps on its own,
// finds as many pairs too far apart as the join counted, and nothing lost.
func TestStateTTLVerifiesWhatItLetsThrough(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "--records", "20000", "--rate", "5000", "--state-ttl", "20ms",
		"--checkpoint-interval", "200ms", "--inject", "after-records=3000,task=join/1,fault=panic", "--restart-delay", "50ms")
	if r.Code != 0 {
		t.Fatalf("exit %d, stderr %s", r.Code, r.Stderr)
	}
	ttl, _ := r.Report["state_ttl"].(map[string]any)
	notJoined := e2e.Num(r.Report, "verify", "not_joined")
	if ttl == nil || ttl["ttl_ms"] != 20.0 || notJoined == 0 || e2e.Num(r.Report, "verify", "expected") == 0 {
		t.Fatalf("report: state_ttl %v, verify %v", ttl, r.Report["verify"])
	}
	// After the restart the join meets some pairs twice; each time it
	// counts them: at least as many as the oracle.
	if ttl["not_joined"].(float64) < notJoined {
		t.Fatalf("the join counted %v pairs too far apart, the oracle %v", ttl["not_joined"], notJoined)
	}
	if e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 {
		t.Fatalf("verify %v", r.Report["verify"])
	}
}

// After a break longer than the state TTL and its slack, a resumed run's
// sources replay the records from before the break (from the restored
// checkpoint's offsets) while their other partitions already hold today's:
// the join sweeps by its watermark, which the partitions still replaying
// hold back, so no restored side is dropped before its partner comes.
// Sweeping goes on all the same once every input has caught up.
func TestResumeAfterABreakLongerThanTheTTLLosesNothing(t *testing.T) {
	t.Parallel()
	const ttl = 500 * time.Millisecond
	const slack = 5 * time.Second // runtime's ttlSlack: max(TTL, 5 s)
	args := []string{"run", "--headless", "--listen", "0", "--state-dir", t.TempDir(), "--rate", "2000",
		"--checkpoint-interval", "500ms", "--state-ttl", ttl.String()}
	// run runs until it completed n checkpoints and went half the way to
	// the next (the records read since, and those written but not yet
	// read, are replayed after the break), then stops it as Ctrl-C does and
	// returns its report and when the input writer stopped.
	run := func(n int, extra ...string) (map[string]any, time.Time) {
		t.Helper()
		cmd, stderr, lines := e2e.StartRun(t, append(args, extra...)...)
		e2e.WaitEvents(t, lines, "checkpoint_completed", n)
		time.Sleep(250 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGINT)
		stopped := time.Now()
		report := e2e.ReportOf(lines)
		// Exit code 4 is a verification that failed: the report says how.
		if err := cmd.Wait(); report == nil || err != nil && cmd.ProcessState.ExitCode() != 4 {
			t.Fatalf("%v: %v, report %v\n%s", extra, err, report, stderr)
		}
		return report, stopped
	}
	first, stopped := run(4)
	if e2e.Num(first, "verify", "lost") != 0 || e2e.Num(first, "verify", "expected") == 0 {
		t.Fatalf("first run: verify %v", first["verify"])
	}
	// The break: the records written after it are more than the TTL and
	// its slack newer than those before.
	time.Sleep(time.Until(stopped.Add(ttl + slack + time.Second)))
	second, _ := run(6, "--resume")
	if restored, _ := second["checkpoints"].(map[string]any)["restored_from"].([]any); len(restored) == 0 {
		t.Fatalf("the second run did not resume: checkpoints %v", second["checkpoints"])
	}
	v := second["verify"].(map[string]any)
	if e2e.Num(second, "verify", "lost") != 0 || e2e.Num(second, "verify", "duplicates") != 0 || v["ok"] != true ||
		e2e.Num(second, "verify", "expected") <= e2e.Num(first, "verify", "expected") {
		t.Fatalf("resumed run: verify %v (the first run's %v), state_ttl %v", v, first["verify"], second["state_ttl"])
	}
	// The sides left from before the break that never find a partner (the
	// unpaid orders) are swept once every input is past them.
	if e2e.Num(second, "state_ttl", "expired") == 0 {
		t.Fatalf("the resumed run swept nothing: state_ttl %v", second["state_ttl"])
	}
}
