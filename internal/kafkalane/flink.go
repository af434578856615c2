package kafkalane

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// FlinkLibEnv names the directory of faultline's Flink module and its
// dependencies (Apache Flink 2.2 and its Kafka connector 5.0), which
// `make flink-jars` builds and `make test-kafka` sets.
const FlinkLibEnv = "FAULTLINE_FLINK_LIB"

// Flink runs the programs of faultline's Flink module (bench/flink), each
// a local MiniCluster in a JVM of its own, against one Kafka.
type Flink struct {
	lib  string
	addr string // host:port of a listener (PLAINTEXT)
}

// FlinkFor returns the Flink programs aimed at the Kafka at addr; it fails
// t when $FAULTLINE_FLINK_LIB is not set.
func FlinkFor(t testing.TB, addr string) *Flink {
	t.Helper()
	return &Flink{lib: FlinkLib(t), addr: addr}
}

// FlinkLib is $FAULTLINE_FLINK_LIB, the directory of faultline's Flink
// module and its dependencies; it fails t when that is not set or holds no
// Kafka connector.
func FlinkLib(t testing.TB) string {
	t.Helper()
	lib := os.Getenv(FlinkLibEnv)
	if lib == "" {
		t.Fatalf("$%s is not set: run `make flink-jars` and set it to build/flink/2.2.0/lib (make test-kafka does both)", FlinkLibEnv)
	}
	if jars, _ := filepath.Glob(filepath.Join(lib, "flink-connector-kafka-*.jar")); len(jars) == 0 {
		t.Fatalf("$%s is %s, which holds no flink-connector-kafka jar: remove it and run `make flink-jars` again", FlinkLibEnv, lib)
	}
	return lib
}

// Count reads topic at read_committed with Flink's KafkaSource, bounded at
// its end as the job starts, and returns how many records it read and how
// many distinct values among them.
func (f *Flink) Count(t testing.TB, topic string) (records, distinct int) {
	t.Helper()
	out := f.run(t, "count", f.addr, topic)
	if _, err := fmt.Sscanf(lastLine(out), "records %d distinct %d", &records, &distinct); err != nil {
		t.Fatalf("Flink's KafkaSource count of %s: %q", topic, out)
	}
	return records, distinct
}

// Copy copies topic from (bounded at its end) into to with Flink's
// exactly-once KafkaSink, transactional ids prefix-…, checkpointing every
// 200 ms.
func (f *Flink) Copy(t testing.TB, from, to, prefix string) {
	t.Helper()
	if out := f.run(t, "copy", f.addr, from, to, prefix); lastLine(out) != "copied" {
		t.Fatalf("Flink's copy of %s to %s: %q", from, to, out)
	}
}

// run runs KafkaCheck with args to its end and returns its stdout; a
// failure fails t with its stderr.
func (f *Flink) run(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("java", append([]string{"-Xmx512m", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
		"-cp", filepath.Join(f.lib, "*"), "faultline.flink.KafkaCheck"}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.SysProcAttr = procAttr()
	if err := cmd.Run(); err != nil {
		t.Fatalf("KafkaCheck %s: %v\n%s", strings.Join(args, " "), err, lastLines(errOut.String(), 60))
	}
	return out.String()
}

// lastLines are s's last n lines.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// lastLine is s's last non-empty line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
