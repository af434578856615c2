//go:build kafka

package runs

import (
	"bytes"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
	"github.com/faultline-dev/faultline/internal/kafkalane"
)

// Kafka's own tools (the Java console consumer at read_committed, the
// console producer, kafka-consumer-groups and kafka-topics, from the
// lane's Apache Kafka jars) on the broker faultline embeds: `faultline
// broker` on the state dir of a finished run counts what the run's report
// says it committed, and the broker inside `faultline run` answers them
// while the job runs.
func TestRealKafkaToolsOnTheEmbeddedBroker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"run", "--headless", "--records", "20000", "--checkpoint-interval", "300ms",
		"--group", "lane-embedded", "--listen", "0", "--state-dir", dir}
	code, report, stderr := runToEnd(t, 3*time.Minute, args...)
	if code != 0 || report == nil {
		t.Fatalf("exit %d, report %v; stderr:\n%s", code, report, stderr)
	}
	committed := reportedCommitted(t, report)

	_, addr := e2e.StartBrokerWith(t, "--state-dir", dir)
	tools := kafkalane.ToolsFor(t, addr)
	c := countRun(t, tools, defaultTopics)
	c.exactlyOnce(t, "the finished run, read from faultline broker")
	if len(c.output) != committed {
		t.Errorf("the console consumer read %d committed records of revenue, the run's report says %d", len(c.output), committed)
	}
	for p, off := range groupOffsets(t, tools, "lane-embedded", "after the run", defaultTopics) {
		if off.Lag != 0 {
			t.Errorf("%s: lag %d after the run read everything", p, off.Lag)
		}
	}
	describesTopics(t, tools, "faultline broker")
	if groups := tools.ListGroups(t); !slices.Contains(groups, "lane-embedded") {
		t.Errorf("kafka-consumer-groups --list = %v, want lane-embedded among them", groups)
	}

	// Kafka's Java producer writes through the broker, and its consumer
	// reads that back.
	tools.CreateTopic(t, "lane-notes", 2)
	tools.ProduceRecords(t, "lane-notes", []kafkalane.Record{{Key: "k1", Value: "first"}, {Key: "k2", Value: "second"}})
	if got := tools.ReadCommitted(t, "lane-notes"); len(got) != 2 {
		t.Errorf("read back %d records of the 2 Kafka's console producer wrote: %v", len(got), got)
	}

	// Kafka's transactional producer and read_committed consumer, with
	// aborted transactions among the committed ones.
	tools.CreateTopic(t, "lane-copied", 1)
	tools.CopyTransactionally(t, "revenue", 0, "lane-copied", 500)
	if got := tools.ReadCommitted(t, "lane-copied"); len(got) != 500 {
		t.Errorf("read %d committed records of the 500 the copier copied", len(got))
	}
}

// The broker inside a running `faultline run` answers Kafka's tools while
// the job reads and writes through it.
func TestRealKafkaToolsOnTheBrokerOfARun(t *testing.T) {
	t.Parallel()
	cmd, stderr, lines, addr := runningBroker(t, "--group", "lane-running")
	tools := kafkalane.ToolsFor(t, addr)
	describesTopics(t, tools, "faultline run")
	groupOffsets(t, tools, "lane-running", "while the job runs", defaultTopics)
	if groups := tools.ListGroups(t); !slices.Contains(groups, "lane-running") {
		t.Errorf("kafka-consumer-groups --list = %v, want lane-running among them", groups)
	}
	tools.ReadCommittedFirst(t, "revenue", 100)
	cmd.Process.Signal(syscall.SIGTERM)
	if report := e2e.ReportOf(lines); report == nil {
		t.Fatalf("no report after SIGTERM; stderr:\n%s", stderr)
	}
}

// describesTopics fails t unless kafka-topics --describe (Kafka's admin
// client, as Flink's Kafka source uses it) finds the default job's topics
// with a leader for every partition.
func describesTopics(t *testing.T, tools *kafkalane.Tools, broker string) {
	t.Helper()
	for topic, want := range map[string]int{"orders": 4, "payments": 4, "revenue": 1} {
		parts := tools.DescribeTopic(t, topic)
		if len(parts) != want {
			t.Errorf("%s: kafka-topics --describe %s lists %d partitions, want %d", broker, topic, len(parts), want)
		}
		for _, p := range parts {
			if p.Leader < 0 || p.Replicas == "" {
				t.Errorf("%s: %s/%d has leader %d, replicas %q", broker, topic, p.Partition, p.Leader, p.Replicas)
			}
		}
	}
}

// reportedCommitted is the number of output records the run's report says
// the sink committed.
func reportedCommitted(t *testing.T, report map[string]any) int {
	t.Helper()
	v, _ := report["verify"].(map[string]any)
	n, ok := v["committed"].(float64)
	if !ok {
		t.Fatalf("the report's verify has no committed count: %v", report["verify"])
	}
	return int(n)
}

// runningBroker starts a headless run on its embedded broker (with extra
// flags), and returns it with the broker's address once three checkpoints
// have completed.
func runningBroker(t *testing.T, extra ...string) (*exec.Cmd, *bytes.Buffer, <-chan map[string]any, string) {
	t.Helper()
	cmd, stderr, lines := e2e.StartRun(t, append([]string{"run", "--headless", "--listen", "0",
		"--checkpoint-interval", "500ms", "--state-dir", t.TempDir()}, extra...)...)
	var addr string
	for ev := range lines {
		if ev["event"] == "broker_started" {
			addr, _ = ev["address"].(string)
			break
		}
	}
	if addr == "" {
		t.Fatalf("the run named no broker; stderr:\n%s", stderr)
	}
	e2e.WaitEvents(t, lines, "checkpoint_completed", 3)
	return cmd, stderr, lines, addr
}
