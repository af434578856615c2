package cli

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// waitEvents reads lines until n events named name have come, or fails.
func waitEvents(t *testing.T, lines <-chan map[string]any, name string, n int) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for seen := 0; seen < n; {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatalf("the run ended after %d %s events, before %d", seen, name, n)
			}
			if m["event"] == name {
				seen++
			}
		case <-deadline:
			t.Fatalf("waited two minutes for %d %s events", n, name)
		}
	}
}

// An unbounded run on the embedded broker deletes from its log what no
// recovery and no verification needs, across a crash of the whole process
// and a resumed run, and the resumed run's verdict still covers everything
// from the first record: nothing lost, nothing duplicated.
func TestRetentionTrimsTheBrokerLogAndKeepsTheVerdictWhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"run", "--headless", "--rate", "20000", "--checkpoint-interval", "200ms",
		"--retention-interval", "300ms", "--listen", "0", "--state-dir", dir}
	cmd, _, lines := startRun(t, args...)
	waitEvents(t, lines, "checkpoint_completed", 15)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for range lines {
	}

	cmd, stderr, lines := startRun(t, append(args, "--resume")...)
	waitEvents(t, lines, "checkpoint_completed", 15)
	cmd.Process.Signal(syscall.SIGINT)
	report := reportOf(lines)
	if err := cmd.Wait(); err != nil || report == nil {
		t.Fatalf("resumed run: %v, report %v\n%s", err, report, stderr)
	}
	if num(report, "verify", "lost") != 0 || num(report, "verify", "duplicates") != 0 || num(report, "verify", "expected") < 10000 {
		t.Fatalf("verify %v", report["verify"])
	}

	// The log no longer starts at 0, for the input and the output.
	b, addr := startBrokerWith(t, "--state-dir", dir)
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
	deleteAllCheckpoints(t, dir)
	r := faultline(t, append(args, "--resume")...)
	if r.code != 1 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "holds no checkpoint of job orders") || !strings.Contains(r.stderr, "--fresh") {
		t.Fatalf("resume with no checkpoint over a trimmed log: exit %d, stderr %q; want exit 1 and one line naming --fresh", r.code, r.stderr)
	}
	if r := faultline(t, "run", "--headless", "--records", "5000", "--fresh", "--state-dir", dir); r.code != 0 || num(r.report, "verify", "duplicates") != 0 {
		t.Fatalf("--fresh after the refusal: exit %d\n%s", r.code, r.stderr)
	}
}
