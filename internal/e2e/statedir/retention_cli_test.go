package statedir

import (
	"strings"
	"syscall"
	"testing"

	"github.com/IBM/sarama"

	"faultline/internal/e2e"
)

// An unbounded run on the embedded broker deletes from its log what no
// recovery and no verification needs, across a crash of the whole process
// and a resumed run, and the resumed run's verdict still covers everything
// from the first record: nothing lost, nothing duplicated.
func TestRetentionTrimsTheBrokerLogAndKeepsTheVerdictWhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// At 8,000 records/s the resumed run's output check, which covers the
	// input from its first record, fits in the 3.5 s a stopped run has for
	// it even on a busy machine with the race detector on.
	args := []string{"run", "--headless", "--rate", "8000", "--checkpoint-interval", "200ms",
		"--retention-interval", "300ms", "--listen", "0", "--state-dir", dir}
	cmd, _, lines := e2e.StartRun(t, args...)
	e2e.WaitEvents(t, lines, "checkpoint_completed", 15)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for range lines {
	}

	cmd, stderr, lines := e2e.StartRun(t, append(args, "--resume")...)
	e2e.WaitEvents(t, lines, "checkpoint_completed", 5)
	cmd.Process.Signal(syscall.SIGINT)
	report := e2e.ReportOf(lines)
	if err := cmd.Wait(); err != nil || report == nil {
		t.Fatalf("resumed run: %v, report %v\n%s", err, report, stderr)
	}
	if e2e.Num(report, "verify", "lost") != 0 || e2e.Num(report, "verify", "duplicates") != 0 || e2e.Num(report, "verify", "expected") < 10000 {
		t.Fatalf("verify %v", report["verify"])
	}

	// The log no longer starts at 0, for the input and the output.
	b, addr := e2e.StartBrokerWith(t, "--state-dir", dir)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cl, err := sarama.NewClient([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"orders", "payments", "revenue"} {
		start, err := cl.GetOffset(topic, 0, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		if start == 0 {
			t.Errorf("%s/0 still starts at offset 0", topic)
		}
	}
	cl.Close()
	b.Process.Signal(syscall.SIGTERM)
	b.Wait()

	// With every checkpoint deleted, a resumed run would read the input
	// from its beginning, which the broker has deleted: it is refused, in
	// one line, and --fresh goes on.
	e2e.DeleteAllCheckpoints(t, dir)
	r := e2e.Faultline(t, append(args, "--resume")...)
	if r.Code != 1 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || !strings.Contains(r.Stderr, "holds no checkpoint of job orders") || !strings.Contains(r.Stderr, "--fresh") {
		t.Fatalf("resume with no checkpoint over a trimmed log: exit %d, stderr %q; want exit 1 and one line naming --fresh", r.Code, r.Stderr)
	}
	if r := e2e.Faultline(t, "run", "--headless", "--records", "5000", "--fresh", "--state-dir", dir); r.Code != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 {
		t.Fatalf("--fresh after the refusal: exit %d\n%s", r.Code, r.Stderr)
	}
}
