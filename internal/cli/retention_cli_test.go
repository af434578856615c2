package cli

import (
	"bufio"
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
	b := command(t, "broker", "--state-dir", dir, "--listen", "0")
	out, _ := b.StdoutPipe()
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { b.Process.Signal(syscall.SIGTERM); b.Wait() }()
	line, _ := bufio.NewReader(out).ReadString('\n')
	_, rest, _ := strings.Cut(line, "listening on ")
	addr, _, _ := strings.Cut(rest, " ")
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cl, err := sarama.NewClient([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, topic := range []string{"orders", "payments", "revenue"} {
		start, err := cl.GetOffset(topic, 0, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		if start == 0 {
			t.Errorf("%s/0 still starts at offset 0", topic)
		}
	}
}
