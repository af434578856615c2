package broker_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
)

// brokerLog is a real log written by the embedded broker and closed: orders
// partition 0 in several segments, the other input partitions in one, and
// committed transactions in revenue.
type brokerLog struct {
	dir  string
	ends map[string]int64 // per partition folder ("orders-0"), the log's end
}

// writeBrokerLog writes a brokerLog: 7,000 records of 1 KiB into orders/0
// (four segments or more) and five batches of one record, 200 records into
// each other input partition, and two committed transactions of 500
// records into revenue.
func writeBrokerLog(t *testing.T) brokerLog {
	t.Helper()
	dir := t.TempDir()
	e, err := broker.StartEmbedded(0, dir, kafkatest.Topics("revenue", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := kafka.Client{Brokers: []string{e.Addr}}
	p, err := c.SyncProducer()
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 1000)
	for topic, parts := range map[string][]int32{orders.TopicOrders: {0, 0, 0, 0, 0, 0, 0, 1, 2, 3}, orders.TopicPayments: {0, 1, 2, 3}} {
		for i, part := range parts {
			n := 200
			if topic == orders.TopicOrders && part == 0 {
				n = 1000 // seven rounds of 1,000
			}
			var msgs []*sarama.ProducerMessage
			for j := range n {
				msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: part, Value: sarama.StringEncoder(fmt.Sprintf("%d-%d-%s", i, j, pad))})
			}
			if err := p.SendMessages(msgs); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Five batches of one record each close orders/0: its last segment
	// holds several batches whatever Sarama made of the rounds.
	for i := range 5 {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: orders.TopicOrders, Partition: 0, Value: sarama.StringEncoder(fmt.Sprint("last-", i))}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	o, err := sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	for _, txn := range []string{"t/0", "t/1"} {
		writeRecords(t, o, txn, txn, 500)
		committable, err := o.Prepare(txn)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Commit(committable); err != nil {
			t.Fatal(err)
		}
	}
	o.Close()
	log := brokerLog{dir: dir, ends: map[string]int64{}}
	for _, topic := range []string{orders.TopicOrders, orders.TopicPayments, "revenue"} {
		ends, err := kafka.EndOffsets(cl, topic)
		if err != nil {
			t.Fatal(err)
		}
		for part, end := range ends {
			log.ends[fmt.Sprintf("%s-%d", topic, part)] = end
		}
	}
	e.Close()
	return log
}

// segments are the base offsets of a partition's .dat files, in order.
func segments(t *testing.T, dir, part string) []int64 {
	t.Helper()
	files, err := os.ReadDir(filepath.Join(dir, "partitions", part))
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, f := range files {
		if base, ok := strings.CutSuffix(f.Name(), ".dat"); ok {
			n, err := strconv.ParseInt(base, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			bases = append(bases, n)
		}
	}
	slices.Sort(bases)
	return bases
}

// kfakeIndexEntry is the size of an entry of a segment's index file.
const kfakeIndexEntry = 15

// segPath is the path of a partition's segment file (ext "dat" or "idx"):
// the i-th, or counting from the last when i is negative.
func segPath(t *testing.T, dir, part string, i int, ext string) string {
	t.Helper()
	bases := segments(t, dir, part)
	if i < 0 {
		i += len(bases)
	}
	return filepath.Join(dir, "partitions", part, strconv.FormatInt(bases[i], 10)+"."+ext)
}

// batchStarts are the byte positions of a segment's record batches.
func batchStarts(t *testing.T, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var starts []int64
	for pos := 0; pos+12 <= len(b); pos += 12 + int(binary.BigEndian.Uint32(b[pos+8:])) {
		starts = append(starts, int64(pos))
	}
	return starts
}

// removeSegment removes the files of a partition's i-th segment (see
// segPath) that exts names.
func removeSegment(t *testing.T, dir, part string, i int, exts ...string) {
	t.Helper()
	var paths []string
	for _, ext := range exts {
		paths = append(paths, segPath(t, dir, part, i, ext))
	}
	for _, p := range paths {
		must(t, os.Remove(p))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, path string, by int64) {
	t.Helper()
	fi, err := os.Stat(path)
	must(t, err)
	must(t, os.Truncate(path, fi.Size()-by))
}

func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	b := make([]byte, 1)
	_, err = f.ReadAt(b, at)
	must(t, err)
	_, err = f.WriteAt([]byte{b[0] ^ 0x5a}, at)
	must(t, err)
}

// noSnapshots removes the partitions' snapshot.json files: a log whose
// broker was killed since its last clean stop has snapshots that say less
// than its segments, as if it had never stopped cleanly.
func noSnapshots(t *testing.T, dir string) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "partitions", "*", "snapshot.json"))
	for _, p := range paths {
		must(t, os.Remove(p))
	}
}
