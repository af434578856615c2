package broker_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
)

// crashImage copies the broker's log folder as it is now, while the broker
// runs: what a process killed at this moment leaves on disk (every write
// the broker made has reached the kernel). A broker started on the copy
// recovers from that crash.
func crashImage(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	copyTree(t, dir, dst)
	return dst
}

// copyTree copies the folder src, with everything in it, to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fetchSizes are the per-partition fetch sizes a read_committed consumer
// of a recovered log is tried with: what it sees must not depend on them.
var fetchSizes = []int32{64 << 10, 1 << 20, 16 << 20}

// readAtEveryFetchSize reads topic read_committed with each fetch size and
// fails unless each read gives exactly want (values, in any order).
func readAtEveryFetchSize(t *testing.T, c kafka.Client, topic string, want map[string]int) {
	t.Helper()
	for _, size := range fetchSizes {
		c.FetchBytes = size
		got := map[string]int{}
		for _, v := range kafkatest.CommittedValues(t, c, topic) {
			got[v]++
		}
		var missing, extra int
		for v, n := range want {
			missing += max(n-got[v], 0)
		}
		for v, n := range got {
			extra += max(n-want[v], 0)
		}
		if missing > 0 || extra > 0 {
			t.Errorf("read_committed with %d KiB fetches: %d records missing, %d too many (want %d records)", size>>10, missing, extra, len(want))
		}
	}
}

// testRecords are n records of about 100 bytes, each value prefix-i.
func testRecords(prefix string, n int) []runtime.OutputRecord {
	pad := strings.Repeat("x", 90)
	recs := make([]runtime.OutputRecord, n)
	for i := range recs {
		recs[i] = runtime.OutputRecord{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprintf("%s-%06d-%s", prefix, i, pad))}
	}
	return recs
}

// writeRecords writes testRecords(prefix, n) in transaction txn and returns
// their values.
func writeRecords(t *testing.T, o *sink.Output, txn, prefix string, n int) map[string]int {
	t.Helper()
	vals := map[string]int{}
	for _, r := range testRecords(prefix, n) {
		if err := o.Write(txn, r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
		vals[string(r.Value)]++
	}
	return vals
}

// TestEmbeddedBrokerRecoversOpenTransactionsAfterACrash holds the embedded
// broker to what Kafka guarantees across a crash: a transaction open when
// the process died is aborted, stays aborted through later crashes, and a
// read_committed consumer sees the same records whatever its fetch size,
// also when the same transactional id (and so the same producer id, at a
// higher epoch) commits a transaction after the recovery, as the sink's
// recovery does.
func TestEmbeddedBrokerRecoversOpenTransactionsAfterACrash(t *testing.T) {
	dir := t.TempDir()
	_, c := kafkatest.StartOn(t, dir, 1)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	o, err := sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	// One transaction committed, one pre-committed and one still being
	// written when the process dies: 3,000 records of 100 bytes each, so
	// that a 64 KiB fetch ends inside it and a 16 MiB one does not.
	want := writeRecords(t, o, "t/0", "committed", 500)
	c0, err := o.Prepare("t/0")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(c0); err != nil {
		t.Fatal(err)
	}
	writeRecords(t, o, "t/1", "prepared", 3000)
	c1, err := o.Prepare("t/1")
	if err != nil {
		t.Fatal(err)
	}
	writeRecords(t, o, "t/2", "open", 3000)
	if err := o.Flush(); err != nil {
		t.Fatal(err)
	}
	crashed := crashImage(t, dir)
	o.Close()
	cl.Close()

	// The next process: the broker recovers the log; the pre-committed
	// transaction is gone with the crash, and the sink's recovery aborts
	// what is left of t/1 and t/2 and writes t/1 again under the same id.
	_, c = kafkatest.StartOn(t, crashed, 1)
	cl, err = c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	o, err = sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	readAtEveryFetchSize(t, c, "revenue", want)
	if err := o.Commit(c1); err == nil {
		t.Fatal("the transaction open at the crash committed after it")
	}
	if err := o.AbortLingering("t/", 1); err != nil {
		t.Fatal(err)
	}
	// The sink's recovery reads the lost transaction back from the log
	// and asks what of it is missing: all of it, whatever the fetch size.
	lost := testRecords("prepared", 3000)
	readsBack(t, o, c1, lost, "after the crash")
	if missing, err := o.Missing(context.Background(), c1, lost); err != nil || len(missing) != len(lost) {
		t.Fatalf("Missing of the aborted transaction: %d of %d, %v", len(missing), len(lost), err)
	}
	for v, n := range writeRecords(t, o, "t/1", "again", 300) {
		want[v] += n
	}
	c1again, err := o.Prepare("t/1")
	if err != nil {
		t.Fatal(err)
	}
	if pid := func(c string) string { return strings.Split(c, "|")[1] }; pid(c1) != pid(c1again) {
		t.Fatalf("t/1 has producer id %s after the crash, %s before: the test no longer reuses the producer id", pid(c1again), pid(c1))
	}
	if err := o.Commit(c1again); err != nil {
		t.Fatal(err)
	}
	readAtEveryFetchSize(t, c, "revenue", want)
	// Its producer id wrote again at a higher epoch: still only its own.
	readsBack(t, o, c1, lost, "after its producer id committed again")

	// A second crash: the records aborted by the first recovery stay
	// aborted, although their producer id committed since.
	crashedAgain := crashImage(t, crashed)
	_, c = kafkatest.StartOn(t, crashedAgain, 1)
	readAtEveryFetchSize(t, c, "revenue", want)
}

// readsBack fails t unless o reads the transaction of committable c back
// from the log as exactly want.
func readsBack(t *testing.T, o *sink.Output, c string, want []runtime.OutputRecord, when string) {
	t.Helper()
	recs, err := o.Prepared(context.Background(), c)
	if err != nil || !sameValues(recs, want) {
		t.Fatalf("%s: the transaction read back from the log: %d records, %v; want its %d", when, len(recs), err, len(want))
	}
}

// sameValues reports whether a and b hold the same values, each as often.
func sameValues(a, b []runtime.OutputRecord) bool {
	n := map[string]int{}
	for _, r := range a {
		n[string(r.Value)]++
	}
	for _, r := range b {
		n[string(r.Value)]--
	}
	for _, c := range n {
		if c != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

// A topic the broker creates on first use (a client asking for it by name,
// as kcat producing to a new topic does) is in topics.json at once: a
// process killed before it stops cleanly leaves a log the check passes and
// the broker reads back with the topic and its records.
func TestTopicCreatedOnFirstUseOutlivesAKill(t *testing.T) {
	dir := t.TempDir()
	e, err := broker.StartEmbedded(0, dir, kafkatest.Topics("revenue", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// A client of its own, as kcat is: faultline's never creates topics
	// on first use.
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.Return.Successes = true
	p, err := sarama.NewSyncProducer([]string{e.Addr}, cfg)
	must(t, err)
	_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: "new-topic", Value: sarama.StringEncoder("first")})
	must(t, err)
	p.Close()
	killed := crashImage(t, dir)
	if err := broker.CheckLog(killed, broker.LogNeeds{}); err != nil {
		t.Fatalf("the log a kill left: %v", err)
	}
	e2, c := kafkatest.StartOn(t, killed, 1)
	cl, err := c.NewClient()
	must(t, err)
	defer cl.Close()
	if end, err := cl.GetOffset("new-topic", 0, sarama.OffsetNewest); err != nil || end != 1 {
		t.Fatalf("new-topic/0 after the kill ends at %d (%v), want 1", end, err)
	}
	e2.Close()
}

// A process killed between a batch's write and its index entry's, or in
// the middle of the entry, leaves the segment's index short of its
// batches. The broker completes the index when it reads the log back, so
// that the entries it writes next describe their own batches, and the next
// crash of that kind leaves it one entry short again, never two.
func TestEmbeddedBrokerCompletesAnIndexACrashLeftShort(t *testing.T) {
	log := writeBrokerLog(t)
	for _, cut := range []int64{kfakeIndexEntry, 8} {
		t.Run(fmt.Sprintf("%d bytes cut", cut), func(t *testing.T) {
			dir := crashImage(t, log.dir)
			noSnapshots(t, dir)
			truncate(t, segPath(t, dir, "orders-0", -1, "idx"), cut)
			e, c := kafkatest.StartOn(t, dir, 1)
			p, err := c.SyncProducer()
			must(t, err)
			for i := range 10 {
				_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: orders.TopicOrders, Partition: 0, Value: sarama.StringEncoder(fmt.Sprint("after-", i))})
				must(t, err)
			}
			p.Close()
			e.Close()
			for i := range segments(t, dir, "orders-0") {
				batches := len(batchStarts(t, segPath(t, dir, "orders-0", i, "dat")))
				fi, err := os.Stat(segPath(t, dir, "orders-0", i, "idx"))
				must(t, err)
				if fi.Size() != int64(batches*kfakeIndexEntry) {
					t.Errorf("segment %d: index of %d bytes for %d batches", i, fi.Size(), batches)
				}
			}
		})
	}
}
