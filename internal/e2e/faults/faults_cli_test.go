package faults

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// The fault catalogue, one headless run per fault, as a user injects it
// with --inject. (panic and error: ../runs/cli_test.go; crash and
// corrupt-checkpoint: ../crash/kill_test.go; savepoint:
// ../crash/checkpoints_test.go.)

// A poison record makes parse fail again after every restart; failure-rate
// ends that loop and says why.
func TestPoisonEndsInFailureRateGivingUp(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "--records", "60000", "--rate", "30000", "--checkpoint-interval", "100ms",
		"--restart-strategy", "failure-rate", "--failure-rate-max-failures", "2", "--failure-rate-interval", "1m", "--failure-rate-delay", "20ms",
		"--inject", "after=500ms,fault=poison")
	if r.Code != 3 || r.Report["status"] != "FAILED" {
		t.Fatalf("exit %d, report %v, stderr %s", r.Code, r.Report, r.Stderr)
	}
	if g, _ := r.Report["gave_up"].(string); !strings.Contains(g, "failure-rate") {
		t.Fatalf("gave_up %q does not name the strategy", g)
	}
	if len(r.EventsNamed("poison_written")) != 1 {
		t.Fatal("no poison_written event")
	}
	failed := r.EventsNamed("task_failed")
	if len(failed) != 3 {
		t.Fatalf("%d task failures, want 3 (two restarts, then failure-rate gives up)", len(failed))
	}
	for _, f := range failed {
		if f["fault"] != "poison" || !strings.HasPrefix(f["task"].(string), "parse-orders/") {
			t.Fatalf("failure %v: want parse-orders failing on the poison record", f)
		}
	}
	if e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 {
		t.Fatalf("the failed job's output must be exact up to its last checkpoint: %v", r.Report["verify"])
	}
}

// With fixed-delay and many attempts the same poison restarts the job
// again and again: the run is stopped by hand (SIGTERM) while still at it.
func TestPoisonLoopsUnderFixedDelay(t *testing.T) {
	t.Parallel()
	cmd := e2e.Command(t, "run", "--headless", "--rate", "2000", "--checkpoint-interval", "100ms",
		"--restart-strategy", "fixed-delay", "--restart-attempts", "1000", "--restart-delay", "10ms",
		"--inject", "after=300ms,fault=poison", "--listen", "0", "--state-dir", t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	restarts := 0
	var report map[string]any
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if rep, ok := m["report"].(map[string]any); ok {
			report = rep
		}
		if m["event"] == "restart_scheduled" {
			if restarts++; restarts == 5 {
				cmd.Process.Signal(syscall.SIGTERM)
			}
		}
	}
	if restarts < 5 || report == nil || report["status"] != "CANCELED" {
		cmd.Wait()
		t.Fatalf("%d restarts, report %v: want a restart loop stopped by hand; stderr %q", restarts, report, stderr.String())
	}
}

// --on-bad-record dead-letter: the poison record goes to the dead-letter
// topic, the job finishes and nothing is lost.
func TestPoisonToDeadLetterTopic(t *testing.T) {
	t.Parallel()
	addr := e2e.StartBroker(t)
	r := e2e.Faultline(t, "run", "--headless", "--records", "60000", "--rate", "30000", "--checkpoint-interval", "100ms",
		"--brokers", addr, "--generate", "--on-bad-record", "dead-letter",
		"--inject", "after=500ms,fault=poison,topic=payments,partition=2")
	if r.Code != 0 || r.Report["status"] != "FINISHED" {
		t.Fatalf("exit %d, report %v, stderr %s", r.Code, r.Report, r.Stderr)
	}
	if e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 || e2e.Num(r.Report, "bad_records", "dead_lettered") != 1 {
		t.Fatalf("report %v", r.Report)
	}
	bad := r.EventsNamed("bad_record")
	if len(bad) != 1 || bad[0]["action"] != "dead-lettered" || !strings.HasPrefix(bad[0]["task"].(string), "parse-payments/") {
		t.Fatalf("bad_record events %v", bad)
	}
	got := e2e.Kcat(t, "", "-b", addr, "-C", "-t", "dead-letter", "-e", "-q", "-f", "%h %s\n")
	if !strings.Contains(got, "poison") || !strings.Contains(got, "faultline-task=parse-payments/") {
		t.Fatalf("dead-letter topic holds %q, want the poison record with its task header", got)
	}
	// Where the source read it, as Kafka Connect's error headers say.
	poison := r.EventsNamed("poison_written")
	if len(poison) != 1 {
		t.Fatalf("poison_written events %v", poison)
	}
	origin := fmt.Sprintf("faultline-topic=payments,faultline-partition=2,faultline-offset=%.0f", poison[0]["offset"])
	if !strings.Contains(got, origin) {
		t.Fatalf("dead-letter topic holds %q, want the headers %s", got, origin)
	}
}

// A source that reads payments from the orders topic meets a schema that
// can never parse: unrecoverable, the job fails at once whatever the
// restart strategy allows.
func TestWrongSchemaIsUnrecoverable(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "--records", "20000", "--topic", "orders-source=payments", "--restart-attempts", "100")
	if r.Code != 3 || r.Report["status"] != "FAILED" || e2e.Num(r.Report, "restarts") != 0 {
		t.Fatalf("exit %d report %v", r.Code, r.Report)
	}
	if g, _ := r.Report["gave_up"].(string); !strings.Contains(g, "unrecoverable") || !strings.Contains(g, "payments") {
		t.Fatalf("gave_up %q", g)
	}
}

// broker-down: the sources lose the broker, the job fails over, the restart
// strategy retries, and once the broker is back the job finishes exactly.
func TestBrokerDownAndBack(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "--records", "60000", "--rate", "15000", "--checkpoint-interval", "200ms",
		"--restart-delay", "300ms", "--inject", "after=1s,fault=broker-down,for=3s")
	if r.Code != 0 || r.Report["status"] != "FINISHED" {
		t.Fatalf("exit %d report %v stderr %s", r.Code, r.Report, r.Stderr)
	}
	if len(r.EventsNamed("broker_down")) != 1 || len(r.EventsNamed("broker_up")) != 1 || e2e.Num(r.Report, "restarts") < 1 {
		t.Fatalf("broker down/up events %d/%d, restarts %v", len(r.EventsNamed("broker_down")), len(r.EventsNamed("broker_up")), r.Report["restarts"])
	}
	if e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 {
		t.Fatalf("verify %v", r.Report["verify"])
	}
	// What failed speaks of the embedded broker being down, never of the
	// TLS and SASL settings a user would then go and check.
	if strings.Contains(r.Stdout, "security.protocol") || strings.Contains(r.Stderr, "security.protocol") {
		for _, e := range r.EventsNamed("task_failed") {
			t.Logf("task_failed: %v", e)
		}
		t.Fatal("an error during broker-down advises checking TLS and SASL")
	}
}

// slow: the slowed join holds barriers back; checkpoints expire, and
// beyond the tolerable failures the job fails over, after which it runs at
// full speed again and finishes exactly. (The timeout leaves a race-built
// binary on a busy machine ample time for a checkpoint at full speed.)
func TestSlowTaskExpiresCheckpoints(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "--records", "60000", "--rate", "15000", "--checkpoint-interval", "200ms",
		"--checkpoint-timeout", "1s", "--tolerable-failed-checkpoints", "1", "--restart-delay", "50ms",
		"--inject", "after=1s,task=join/0,fault=slow,factor=1000,for=4s")
	if r.Code != 0 || r.Report["status"] != "FINISHED" {
		t.Fatalf("exit %d report %v stderr %s", r.Code, r.Report, r.Stderr)
	}
	expired := 0
	for _, e := range r.EventsNamed("checkpoint_failed") {
		if strings.Contains(fmt.Sprint(e["reason"]), "expired") {
			expired++
		}
	}
	if len(r.EventsNamed("task_slowed")) != 1 || expired < 2 || e2e.Num(r.Report, "restarts") < 1 {
		t.Fatalf("task_slowed %d, expired checkpoints %d, restarts %v", len(r.EventsNamed("task_slowed")), expired, r.Report["restarts"])
	}
	if e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 {
		t.Fatalf("verify %v", r.Report["verify"])
	}
}

// storage-fail: the next checkpoint writes fail, the checkpoints are
// declined, and past the tolerable failures the job fails over.
func TestStorageFailDeclinesAndFailsOver(t *testing.T) {
	t.Parallel()
	// Up to 40 checkpoints fail (one per failed write, on a loaded
	// machine), and every second one fails the job over: 20 restarts must
	// be allowed for the run to finish however the writes fall.
	r := e2e.Faultline(t, "run", "--headless", "--records", "60000", "--rate", "20000", "--checkpoint-interval", "100ms",
		"--tolerable-failed-checkpoints", "1", "--restart-delay", "50ms", "--restart-attempts", "20",
		"--inject", "after=500ms,fault=storage-fail,count=40")
	if r.Code != 0 || r.Report["status"] != "FINISHED" {
		t.Fatalf("exit %d report %v stderr %s", r.Code, r.Report, r.Stderr)
	}
	declined := 0
	for _, e := range r.EventsNamed("checkpoint_failed") {
		if strings.Contains(fmt.Sprint(e["error"]), "injected storage failure") {
			declined++
		}
	}
	jobFailover := false
	for _, e := range r.EventsNamed("task_failed") {
		jobFailover = jobFailover || strings.Contains(fmt.Sprint(e["error"]), "tolerable")
	}
	if declined < 2 || !jobFailover {
		t.Fatalf("%d checkpoints declined for storage, job failover %v", declined, jobFailover)
	}
	if e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 {
		t.Fatalf("verify %v", r.Report["verify"])
	}
}

// A failure right after the newest checkpoint was damaged makes the
// recovery fall back to the one before, past output the damaged one had
// committed: the job emits it again, and the sink, which reads what the
// output holds since the checkpoint it restored, writes none of it twice.
func TestFallbackPastADamagedCheckpointDuplicatesNothing(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "--records", "60000", "--rate", "12000", "--checkpoint-interval", "1s",
		// Counted in checkpoints, not seconds (on a busy machine the first
		// checkpoint was sometimes the newest, and the only one): the
		// second is damaged as it completes; the third too, and join/0
		// fails right then. The restore falls back past both to the
		// first, past output that the second's completion certainly
		// committed (the third's commit races the failure).
		"--inject", "after-checkpoints=2,fault=corrupt-checkpoint",
		"--inject", "after-checkpoints=3,fault=corrupt-checkpoint", "--inject", "after-checkpoints=3,task=join/0,fault=panic",
		"--restart-delay", "50ms")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s\n%v", r.Code, r.Stderr, r.Report)
	}
	invalid, held := false, false
	for _, e := range r.Events {
		invalid = invalid || e["event"] == "checkpoint_invalid"
		held = held || e["event"] == "replay_held" && e["records"].(float64) > 0
		if e["event"] == "restored" && e["passed_over"] == nil {
			t.Errorf("the fallback's restored event names no damaged checkpoint: %v", e)
		}
	}
	if !held {
		t.Error("no replay_held event says what the sink does not write again")
	}
	from := r.Report["checkpoints"].(map[string]any)["restored_from"].([]any)
	if !invalid || len(from) == 0 {
		t.Fatalf("no fallback: checkpoint_invalid %v, restored from %v", invalid, from)
	}
	if e2e.Num(r.Report, "replay_skipped") == 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 || e2e.Num(r.Report, "verify", "lost") != 0 {
		t.Fatalf("replay_skipped %v, verify %v", r.Report["replay_skipped"], r.Report["verify"])
	}
}

// A run stopped right after its newest checkpoint was damaged ends as its
// newest valid checkpoint had it, behind output the damaged one had
// committed. That output is counted ahead of the checkpoint, not as
// unexpected: the verdict passes, and the resumed run, which skips it,
// writes none of it twice (read back with kcat). Before, the stop failed
// its verification with that output as unexpected, exit 4: a trainer's
// damaged-checkpoint tour ended so whenever it ended before the job caught
// up with the damaged checkpoint.
func TestStopAfterADamagedCheckpointCountsItsOutputAhead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"run", "--headless", "--records", "30000", "--rate", "4000", "--checkpoint-interval", "1s",
		"--listen", "0", "--state-dir", dir}
	// The second and the third checkpoint are damaged as they complete,
	// and the run is stopped right then, a second before the fourth: the
	// newest valid one is the first, behind output that the second's
	// completion certainly committed (the third's commit races the stop).
	cmd, stderr, lines := e2e.StartRun(t, append(args, "--inject", "after-checkpoints=2,fault=corrupt-checkpoint",
		"--inject", "after-checkpoints=3,fault=corrupt-checkpoint")...)
	e2e.WaitEvents(t, lines, "checkpoint_corrupted", 2)
	cmd.Process.Signal(syscall.SIGINT)
	report := e2e.ReportOf(lines)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 || report == nil {
		t.Fatalf("stopped run: exit %d, report %v\n%s", code, report, stderr)
	}
	if e2e.Num(report, "verify", "ahead_of_checkpoint") == 0 || e2e.Num(report, "verify", "unexpected") != 0 {
		t.Fatalf("stopped behind a damaged checkpoint: verify %v", report["verify"])
	}
	r := e2e.Faultline(t, append(args, "--resume")...)
	if r.Code != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 || e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "replay_skipped") == 0 {
		t.Fatalf("resumed run: exit %d, report %v\n%s", r.Code, r.Report, r.Stderr)
	}
	ids := e2e.CommittedIDs(t, dir)
	for id, n := range ids {
		if n != 1 {
			t.Fatalf("%s is in the output %d times", id, n)
		}
	}
	if float64(len(ids)) != e2e.Num(r.Report, "verify", "expected") {
		t.Fatalf("the output holds %d ids, the report expects %v", len(ids), r.Report["verify"])
	}
}
