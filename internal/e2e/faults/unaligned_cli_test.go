package faults

import (
	"strings"
	"syscall"
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// unalignedArgs run the default job unaligned with join/0 slowed tenfold
// from early on, so that the barriers have full queues to overtake.
func unalignedArgs(records string, more ...string) []string {
	return append([]string{"run", "--headless", "--records", records, "--rate", "20000", "--unaligned",
		"--checkpoint-interval", "100ms", "--restart-delay", "50ms",
		"--inject", "after-records=2000,task=join/0,fault=slow,factor=10,for=3s"}, more...)
}

// persistedMost is the most in-flight data one completed checkpoint of
// the run stored, and how many completed unaligned.
func persistedMost(events []map[string]any) (most float64, unaligned int) {
	for _, e := range events {
		if e["event"] != "checkpoint_completed" {
			continue
		}
		most = max(most, e2e.Num(e, "persisted_in_flight_bytes"))
		if e["unaligned"] == true {
			unaligned++
		}
	}
	return most, unaligned
}

// Unaligned checkpoints on Kafka, with a join subtask slowed and panics in
// a join and a revenue subtask: the restores replay the stored in-flight
// records, and the committed output is exactly once.
func TestUnalignedRunsAreExact(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, unalignedArgs("60000",
		"--inject", "after-records=14000,task=join/1,fault=panic",
		"--inject", "after-records=9000,task=revenue/0,fault=panic")...)
	if r.Code != 0 || r.Report == nil {
		t.Fatalf("exit %d, stderr %s", r.Code, r.Stderr)
	}
	if e2e.Num(r.Report, "restarts") < 2 || e2e.Num(r.Report, "verify", "duplicates") != 0 ||
		e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "expected") == 0 {
		t.Fatalf("report %v", r.Report)
	}
	if r.Report["unaligned"] != true {
		t.Fatalf("the report's unaligned is %v", r.Report["unaligned"])
	}
	most, n := persistedMost(r.Events)
	if most == 0 || n == 0 {
		t.Fatalf("%d checkpoints completed unaligned, the most in-flight data one stored is %v bytes", n, most)
	}
	t.Logf("%d unaligned checkpoints, the most in-flight data %v bytes, %v restarts", n, most, r.Report["restarts"])
}

// killAfterInFlight runs faultline until a checkpoint completed with
// in-flight data, then kills the whole process, its embedded broker with
// it.
func killAfterInFlight(t *testing.T, args ...string) {
	t.Helper()
	if !e2e.KillWhen(t, func(m map[string]any) bool {
		return m["event"] == "checkpoint_completed" && e2e.Num(m, "persisted_in_flight_bytes") > 0
	}, args...) {
		t.Fatal("the run ended before a checkpoint stored in-flight records")
	}
}

// Killed (SIGKILL, embedded broker and all) right after an unaligned
// checkpoint stored in-flight records, the job resumes from the state dir,
// replays them into their channels and loses and duplicates nothing; the
// same checkpoint cannot be restored at another parallelism.
func TestUnalignedCheckpointSurvivesAKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	killAfterInFlight(t, unalignedArgs("60000", "--state-dir", dir, "--listen", "0")...)
	rescaled := e2e.Faultline(t, "run", "--headless", "--records", "60000", "--resume", "--state-dir", dir, "--parallelism", "join=3")
	if rescaled.Code == 0 || !strings.Contains(rescaled.Stderr, "is unaligned") || !strings.Contains(rescaled.Stderr, "savepoint") {
		t.Fatalf("restoring at another parallelism: exit %d, stderr %s", rescaled.Code, rescaled.Stderr)
	}
	r := e2e.Faultline(t, unalignedArgs("60000", "--state-dir", dir, "--resume")...)
	if r.Code != 0 || r.Report == nil {
		t.Fatalf("exit %d, stderr %s", r.Code, r.Stderr)
	}
	restored := r.EventsNamed("restored")
	if len(restored) == 0 || e2e.Num(restored[0], "checkpoint") == 0 {
		t.Fatalf("the resumed run did not restore a checkpoint: %v", restored)
	}
	if e2e.Num(r.Report, "verify", "duplicates") != 0 || e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "expected") == 0 {
		t.Fatalf("report %v", r.Report)
	}
}

// With the aligned-checkpoint timeout, a slowed join subtask makes some
// checkpoints switch to unaligned on their way; they say which subtasks
// switched, and the output is exactly once.
func TestAlignedTimeoutRunIsExact(t *testing.T) {
	t.Parallel()
	r := e2e.Faultline(t, "run", "--headless", "--records", "60000", "--rate", "20000", "--aligned-checkpoint-timeout", "100ms",
		"--checkpoint-interval", "100ms", "--restart-delay", "50ms",
		"--inject", "after-records=16000,task=join/0,fault=slow,factor=10,for=2s",
		"--inject", "after-records=30000,task=join/1,fault=panic")
	if r.Code != 0 || r.Report == nil {
		t.Fatalf("exit %d, stderr %s", r.Code, r.Stderr)
	}
	if e2e.Num(r.Report, "verify", "duplicates") != 0 || e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "expected") == 0 {
		t.Fatalf("report %v", r.Report)
	}
	timedOut, aligned := 0, 0
	for _, e := range r.EventsNamed("checkpoint_completed") {
		switch {
		case e["timed_out"] != nil:
			timedOut++
		case e["unaligned"] == false:
			aligned++
		}
	}
	if timedOut == 0 || aligned == 0 {
		t.Fatalf("%d checkpoints timed out to unaligned, %d completed aligned: want some of each", timedOut, aligned)
	}
}

// The flags are checked before anything starts.
func TestUnalignedFlagsAreChecked(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--aligned-checkpoint-timeout", "-1s"},
		{"--unaligned", "--mode", "at-least-once"},
		{"--aligned-checkpoint-timeout", "1s", "--mode", "at-least-once"},
	} {
		r := e2e.Faultline(t, append([]string{"run", "--headless", "--records", "10"}, args...)...)
		if r.Code != 2 || !strings.Contains(r.Stderr, args[0]) && !strings.Contains(r.Stderr, "at-least-once") {
			t.Errorf("%v: exit %d, stderr %q", args, r.Code, r.Stderr)
		}
	}
}

// A run stopped while its last checkpoint holds records in flight: the
// output is settled as that checkpoint left it, without them, and the
// oracle counts them as in flight, not lost.
func TestStoppedUnalignedRunLosesNothing(t *testing.T) {
	t.Parallel()
	args := unalignedArgs("0", "--listen", "0", "--state-dir", t.TempDir())
	for i, a := range args {
		if a == "for=3s" || strings.HasSuffix(a, "for=3s") {
			args[i] = strings.Replace(a, "for=3s", "for=60s", 1)
		}
	}
	cmd, stderr, lines := e2e.StartRun(t, args...)
	e2e.WaitEvents(t, lines, "checkpoint_completed", 8)
	cmd.Process.Signal(syscall.SIGINT)
	report := e2e.ReportOf(lines)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 || report == nil || e2e.Num(report, "verify", "lost") != 0 ||
		e2e.Num(report, "verify", "duplicates") != 0 || e2e.Num(report, "verify", "unexpected") != 0 {
		t.Fatalf("exit %d, report %v, stderr %q", code, report, stderr)
	}
	if e2e.Num(report, "verify", "in_flight") == 0 {
		t.Fatalf("the last checkpoint held nothing in flight, though join/0 was slowed: %v", report["verify"])
	}
	t.Logf("verify %v", report["verify"])
}

// A bounded unaligned run whose join is slowed as its sources reach their
// end finishes and is then resumed over the same state dir (as after a
// kill while it verified its output): the job's last checkpoint is
// aligned, so it holds nothing in flight that the finished run's final
// commit already wrote, and the resumed run writes nothing twice.
func TestFinishedUnalignedRunResumesWithoutDuplicates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := e2e.Faultline(t, unalignedArgs("30000", "--state-dir", dir)...)
	if first.Code != 0 || first.Report == nil || e2e.Num(first.Report, "verify", "duplicates") != 0 {
		t.Fatalf("first run: exit %d, report %v, stderr %s", first.Code, first.Report, first.Stderr)
	}
	completed := first.EventsNamed("checkpoint_completed")
	if most, n := persistedMost(first.Events); most == 0 || n == 0 {
		t.Fatalf("first run: %d checkpoints unaligned, the most in flight %v bytes: nothing overtaken to test", n, most)
	}
	last := completed[len(completed)-1]
	if last["unaligned"] == true || e2e.Num(last, "persisted_in_flight_bytes") != 0 {
		t.Errorf("the finished run's last checkpoint is unaligned with in-flight records: %v", last)
	}
	again := e2e.Faultline(t, unalignedArgs("30000", "--state-dir", dir, "--resume")...)
	if again.Code != 0 || again.Report == nil {
		t.Fatalf("resumed run: exit %d, stderr %s", again.Code, again.Stderr)
	}
	if e2e.Num(again.Report, "verify", "duplicates") != 0 || e2e.Num(again.Report, "verify", "lost") != 0 {
		t.Fatalf("resumed after finishing: verify %v", again.Report["verify"])
	}
}
