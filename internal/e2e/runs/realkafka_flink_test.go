//go:build kafka

package runs

import (
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
	"github.com/faultline-dev/faultline/internal/kafkalane"
)

// Flink's Kafka connector (5.0, for Flink 2.2, in a local MiniCluster) on
// the broker faultline embeds: its KafkaSource, at read_committed, counts
// on `faultline broker` what the finished run's report says it committed;
// its exactly-once KafkaSink copies that output transactionally, and both
// Flink's source and Kafka's console consumer read the copy whole; and on
// the broker inside a running `faultline run` its source reads a
// committed output with no record twice.
func TestRealKafkaFlinkConnectorOnTheEmbeddedBroker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, report, stderr := runToEnd(t, 3*time.Minute, "run", "--headless", "--records", "20000",
		"--checkpoint-interval", "300ms", "--listen", "0", "--state-dir", dir)
	if code != 0 || report == nil {
		t.Fatalf("exit %d, report %v; stderr:\n%s", code, report, stderr)
	}
	committed := reportedCommitted(t, report)

	_, addr := e2e.StartBrokerWith(t, "--state-dir", dir)
	flink := kafkalane.FlinkFor(t, addr)
	if n, distinct := flink.Count(t, "revenue"); n != committed || distinct != committed {
		t.Errorf("Flink's KafkaSource read %d records of revenue (%d distinct), the run's report says %d committed", n, distinct, committed)
	}
	tools := kafkalane.ToolsFor(t, addr)
	tools.CreateTopic(t, "flink-copied", 2)
	flink.Copy(t, "revenue", "flink-copied", "faultline-lane-copy")
	if n, distinct := flink.Count(t, "flink-copied"); n != committed || distinct != committed {
		t.Errorf("Flink's KafkaSource read %d records of the copy (%d distinct), want the %d copied", n, distinct, committed)
	}
	if got := tools.ReadCommitted(t, "flink-copied"); len(got) != committed {
		t.Errorf("Kafka's console consumer read %d committed records of Flink's copy, want %d", len(got), committed)
	}
}

func TestRealKafkaFlinkConnectorOnTheBrokerOfARun(t *testing.T) {
	t.Parallel()
	cmd, stderr, lines, addr := runningBroker(t)
	if n, distinct := kafkalane.FlinkFor(t, addr).Count(t, "revenue"); n == 0 || distinct != n {
		t.Errorf("Flink's KafkaSource read %d committed records of revenue while the job ran, %d distinct", n, distinct)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if report := e2e.ReportOf(lines); report == nil {
		t.Fatalf("no report after SIGTERM; stderr:\n%s", stderr)
	}
}
