package kafka

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"faultline/runtime"
)

// crashImage copies the broker's log folder as it is now, while the broker
// runs: what a process killed at this moment leaves on disk (every write
// the broker made has reached the kernel). A broker started on the copy
// recovers from that crash.
func crashImage(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
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
	return dst
}

// startOn starts a broker on the log folder dir (the default job's topics;
// revenue with parts partitions), closed when the test ends.
func startOn(t *testing.T, dir string, parts int32) (*Embedded, Client) {
	t.Helper()
	e, err := StartEmbedded(0, dir, Topics("revenue", parts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, Client{Brokers: []string{e.Addr}}
}

// fetchSizes are the per-partition fetch sizes a read_committed consumer
// of a recovered log is tried with: what it sees must not depend on them.
var fetchSizes = []int32{64 << 10, 1 << 20, 16 << 20}

// readAtEveryFetchSize reads topic read_committed with each fetch size and
// fails unless each read gives exactly want (values, in any order).
func readAtEveryFetchSize(t *testing.T, c Client, topic string, want map[string]int) {
	t.Helper()
	for _, size := range fetchSizes {
		c.FetchBytes = size
		got := map[string]int{}
		for _, v := range committedValues(t, c, topic) {
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
func writeRecords(t *testing.T, o *Output, txn, prefix string, n int) map[string]int {
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
	_, c := startOn(t, dir, 1)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
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
	_, c = startOn(t, crashed, 1)
	cl, err = c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	o, err = NewOutput(c, cl, "revenue", ExactlyOnce)
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
	// The sink's recovery asks what of the lost transaction is missing:
	// all of it, whatever the fetch size.
	lost := testRecords("prepared", 3000)
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

	// A second crash: the records aborted by the first recovery stay
	// aborted, although their producer id committed since.
	crashedAgain := crashImage(t, crashed)
	_, c = startOn(t, crashedAgain, 1)
	readAtEveryFetchSize(t, c, "revenue", want)
}
