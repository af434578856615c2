package kafkalane

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Tools runs Kafka's command-line tools from the lane's jars against one
// Kafka: a broker of the lane, or any other (faultline's embedded broker),
// so that a test counts what it holds with Kafka's own clients.
type Tools struct {
	lib, dir string
	addr     string // host:port of a listener (PLAINTEXT)
}

// ToolsFor returns the tools aimed at the Kafka listening at addr.
func ToolsFor(t testing.TB, addr string) *Tools {
	t.Helper()
	tl := &Tools{lib: Lib(t), dir: t.TempDir(), addr: addr}
	if err := os.WriteFile(filepath.Join(tl.dir, "log4j2-tools.properties"), []byte(log4jTools), 0o644); err != nil {
		t.Fatal(err)
	}
	return tl
}

// Record is one record as Kafka's console consumer printed it.
type Record struct {
	Key, Value string
	Partition  int32
	// Timestamp is the record's CreateTime in Unix milliseconds.
	Timestamp int64
}

// GroupOffset is one partition of a consumer group, as
// kafka-consumer-groups --describe shows it. Committed is -1 when the
// group has committed nothing there.
type GroupOffset struct {
	Topic               string
	Partition           int32
	Committed, End, Lag int64
}

// Idle is how long the console consumer waits for another record before
// ReadCommitted takes what it read as everything. The wait includes the
// consumer's start (joining its group, the first fetch), which on a
// machine running four lane tests side by side took over 4 s.
var Idle = 8 * time.Second

// ReadCommitted reads topic from its beginning with Kafka's console
// consumer at isolation.level read_committed, until no record came for
// Idle, and returns every record with its key, partition and timestamp.
func (tl *Tools) ReadCommitted(t testing.TB, topic string) []Record {
	t.Helper()
	return tl.ReadCommittedTopics(t, topic)
}

// The tools' options are those every Kafka 4.x takes: 4.2 renamed
// --consumer-property, --property and the producer's --property
// (--command-property, --formatter-property, --reader-property) and keeps
// the old names, deprecated; 4.1 knows only the old ones.

// ReadCommittedTopics is ReadCommitted of several topics at once, with one
// console consumer (which prints no topic names: tell the records apart by
// their values).
func (tl *Tools) ReadCommittedTopics(t testing.TB, topics ...string) []Record {
	t.Helper()
	const sep = "\t"
	start := time.Now()
	which := []string{"--topic", topics[0]}
	if len(topics) > 1 {
		quoted := make([]string, len(topics))
		for i, tp := range topics {
			quoted[i] = regexp.QuoteMeta(tp)
		}
		which = []string{"--include", "^(" + strings.Join(quoted, "|") + ")$"}
	}
	topic := strings.Join(topics, ", ")
	out, errOut, _ := tl.javaBoth(classConsumer, nil, append(which,
		"--bootstrap-server", tl.addr, "--from-beginning",
		"--isolation-level", "read_committed", "--timeout-ms", strconv.FormatInt(Idle.Milliseconds(), 10),
		"--consumer-property", "max.partition.fetch.bytes=4194304",
		"--property", "print.timestamp=true", "--property", "print.partition=true",
		"--property", "print.key=true", "--property", "print.value=true",
		"--property", "key.separator="+sep, "--property", "null.literal=")...)
	// The console consumer ends on its timeout with a TimeoutException and
	// exit code 1; what it read and the count it printed are what count.
	m := regexp.MustCompile(`Processed a total of (\d+) messages`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("the console consumer of %s did not say how many records it read:\n%s", topic, errOut)
	}
	var recs []Record
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "CreateTime:") {
			continue
		}
		f := strings.SplitN(line, sep, 4)
		if len(f) != 4 || !strings.HasPrefix(f[1], "Partition:") {
			t.Fatalf("the console consumer printed %q", line)
		}
		ts, err1 := strconv.ParseInt(strings.TrimPrefix(f[0], "CreateTime:"), 10, 64)
		p, err2 := strconv.ParseInt(strings.TrimPrefix(f[1], "Partition:"), 10, 32)
		if err1 != nil || err2 != nil {
			t.Fatalf("the console consumer printed %q", line)
		}
		recs = append(recs, Record{Timestamp: ts, Partition: int32(p), Key: f[2], Value: f[3]})
	}
	if n, _ := strconv.Atoi(m[1]); n != len(recs) {
		t.Fatalf("the console consumer of %s says it read %d records, and printed %d", topic, n, len(recs))
	}
	t.Logf("console consumer: %d committed records of %s in %s", len(recs), topic, time.Since(start).Round(100*time.Millisecond))
	return recs
}

// ReadCommittedFirst reads the first n committed records of topic with
// Kafka's console consumer at read_committed (--max-messages), for a topic
// that a running job keeps writing to, which ReadCommitted would read
// forever. It fails t unless n came within Idle.
func (tl *Tools) ReadCommittedFirst(t testing.TB, topic string, n int) {
	t.Helper()
	_, errOut, _ := tl.javaBoth(classConsumer, nil, "--topic", topic,
		"--bootstrap-server", tl.addr, "--from-beginning", "--isolation-level", "read_committed",
		"--max-messages", strconv.Itoa(n), "--timeout-ms", strconv.FormatInt(Idle.Milliseconds(), 10))
	m := regexp.MustCompile(`Processed a total of (\d+) messages`).FindStringSubmatch(errOut)
	if m == nil || m[1] != strconv.Itoa(n) {
		t.Fatalf("the console consumer did not read %d committed records of %s:\n%s", n, topic, errOut)
	}
}

// CopyTransactionally copies the first n records of partition of topic
// from into topic to with Kafka's TransactionalMessageCopier: a
// read_committed consumer and a transactional producer that commits the
// consumed offsets with each transaction of 50 records and aborts some at
// random, as Flink's Kafka source and exactly-once sink use Kafka's Java
// clients.
func (tl *Tools) CopyTransactionally(t testing.TB, from string, partition int, to string, n int) {
	t.Helper()
	out, err := tl.java(classCopier, nil, "--broker-list", tl.addr, "--input-topic", from,
		"--input-partition", strconv.Itoa(partition), "--output-topic", to,
		"--transactional-id", "lane-copier-"+to, "--consumer-group", "lane-copier-"+to,
		"--max-messages", strconv.Itoa(n), "--transaction-size", "50", "--enable-random-aborts")
	if err != nil || !strings.Contains(out, `"stage":"ShutdownComplete"`) {
		t.Fatalf("transactional-message-copier: %v\n%s", err, out)
	}
}

// ListGroups lists the consumer groups with kafka-consumer-groups --list.
func (tl *Tools) ListGroups(t testing.TB) []string {
	t.Helper()
	out, err := tl.java(classGroups, nil, "--bootstrap-server", tl.addr, "--list")
	if err != nil {
		t.Fatalf("kafka-consumer-groups --list: %v", err)
	}
	return strings.Fields(out)
}

// Groups describes consumer group group with kafka-consumer-groups: its
// committed offset, the log end offset and the lag of every partition it
// has committed to, in the order the tool prints them.
func (tl *Tools) Groups(t testing.TB, group string) []GroupOffset {
	t.Helper()
	out, err := tl.java(classGroups, nil, "--bootstrap-server", tl.addr, "--describe", "--group", group)
	if err != nil {
		t.Fatalf("kafka-consumer-groups: %v", err)
	}
	var offs []GroupOffset
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[0] != group {
			continue
		}
		p, err := strconv.ParseInt(f[2], 10, 32)
		if err != nil {
			t.Fatalf("kafka-consumer-groups printed %q", line)
		}
		off := GroupOffset{Topic: f[1], Partition: int32(p)}
		off.Committed = dashIsMinus1(f[3])
		off.End = dashIsMinus1(f[4])
		off.Lag = dashIsMinus1(f[5])
		offs = append(offs, off)
	}
	return offs
}

func dashIsMinus1(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// Produce writes one record with Kafka's console producer (parse.key=true),
// so that Kafka's Java producer picks its partition.
func (tl *Tools) Produce(t testing.TB, topic, key, value string) {
	t.Helper()
	tl.ProduceRecords(t, topic, []Record{{Key: key, Value: value}})
}

// ProduceRecords writes records (their keys and values) with one run of
// Kafka's console producer. It sends them in batches (lingering 5 ms; with
// --sync each record would wait the tool's whole linger of a second) and
// flushes them before it exits.
func (tl *Tools) ProduceRecords(t testing.TB, topic string, recs []Record) {
	t.Helper()
	var in strings.Builder
	for _, r := range recs {
		if strings.ContainsAny(r.Key+r.Value, "\t\n") {
			t.Fatalf("Produce: a key or value with a tab or a newline: %q %q", r.Key, r.Value)
		}
		fmt.Fprintf(&in, "%s\t%s\n", r.Key, r.Value)
	}
	if _, err := tl.java(classProducer, []byte(in.String()), "--bootstrap-server", tl.addr, "--topic", topic,
		"--property", "parse.key=true", "--property", "key.separator=\t",
		"--request-required-acks", "all", "--timeout", "5"); err != nil {
		t.Fatalf("kafka-console-producer: %v", err)
	}
}

// TransactionalIDs lists the transactional ids the broker's transaction
// coordinators know (kafka-transactions list).
func (tl *Tools) TransactionalIDs(t testing.TB) []string {
	t.Helper()
	out, err := tl.java(classTransactions, nil, "--bootstrap-server", tl.addr, "list")
	if err != nil {
		t.Fatalf("kafka-transactions list: %v", err)
	}
	var ids []string
	for i, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) == 0 || f[0] == "TransactionalId" {
			continue
		}
		ids = append(ids, f[0])
	}
	return ids
}

// CreateTopic creates topic with partitions partitions (replication
// factor 1) with kafka-topics.
func (tl *Tools) CreateTopic(t testing.TB, topic string, partitions int) {
	t.Helper()
	if _, err := tl.java(classTopics, nil, "--bootstrap-server", tl.addr, "--create", "--topic", topic,
		"--partitions", strconv.Itoa(partitions), "--replication-factor", "1"); err != nil {
		t.Fatalf("kafka-topics --create: %v", err)
	}
}

// TopicPartition is one partition as kafka-topics --describe shows it.
type TopicPartition struct {
	Partition int32
	Leader    int32
	Replicas  string
}

// DescribeTopic describes topic with kafka-topics --describe (through
// Kafka's admin client, as Flink's Kafka source finds a topic's
// partitions) and returns its partitions in the order the tool prints them.
func (tl *Tools) DescribeTopic(t testing.TB, topic string) []TopicPartition {
	t.Helper()
	out, err := tl.java(classTopics, nil, "--bootstrap-server", tl.addr, "--describe", "--topic", topic)
	if err != nil {
		t.Fatalf("kafka-topics --describe: %v", err)
	}
	var parts []TopicPartition
	for _, line := range strings.Split(out, "\n") {
		field := map[string]string{}
		for _, f := range strings.Split(strings.TrimSpace(line), "\t") {
			if k, v, ok := strings.Cut(f, ": "); ok {
				field[k] = v
			}
		}
		p, errP := strconv.ParseInt(field["Partition"], 10, 32)
		if field["Topic"] != topic || errP != nil {
			continue // the topic's own line, or not about it
		}
		leader, err := strconv.ParseInt(field["Leader"], 10, 32)
		if err != nil {
			t.Fatalf("kafka-topics --describe printed %q", line)
		}
		parts = append(parts, TopicPartition{Partition: int32(p), Leader: int32(leader), Replicas: field["Replicas"]})
	}
	return parts
}
