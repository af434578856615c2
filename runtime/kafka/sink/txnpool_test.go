package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/faultline-dev/faultline/third_party/kfake"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
)

// idOf is the transactional id a committable names.
func idOf(committable string) string { return strings.Split(committable, "|")[0] }

// A sink subtask that runs many checkpoints uses a few transactional ids
// over and over: one for the open transaction, one for each pre-committed
// one that waits for its checkpoint, more only while checkpoints fail in a
// row, and the lowest free one again once they commit.
func TestSinkTransactionalIDsComeFromAPool(t *testing.T) {
	_, c, cl := kafkatest.EmbeddedClient(t)
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	ids := map[string]int{}
	var pending []string
	prepare := func(n int) {
		t.Helper()
		name := fmt.Sprintf("job/sink/0/%d", n)
		if err := o.Write(name, nil, []byte(name)); err != nil {
			t.Fatal(err)
		}
		cm, err := o.Prepare(name)
		if err != nil {
			t.Fatal(err)
		}
		ids[idOf(cm)]++
		pending = append(pending, cm)
	}
	commitAll := func() {
		t.Helper()
		for _, cm := range pending {
			if err := o.Commit(cm); err != nil {
				t.Fatal(err)
			}
		}
		pending = nil
	}
	// 40 checkpoints, each committed when the next one is open.
	for n := 0; n < 40; n++ {
		prepare(n)
		if len(pending) == 2 {
			if err := o.Commit(pending[0]); err != nil {
				t.Fatal(err)
			}
			pending = pending[1:]
		}
	}
	commitAll()
	if len(ids) != 2 || ids["job/sink/0/0"] != 20 || ids["job/sink/0/1"] != 20 {
		t.Fatalf("40 checkpoints used the ids %v, want job/sink/0/0 and job/sink/0/1 20 times each", ids)
	}
	// Three checkpoints that do not complete hold three ids at once; once
	// a later one completes, the lowest is used again.
	for n := 40; n < 43; n++ {
		prepare(n)
	}
	commitAll()
	prepare(43)
	commitAll()
	if len(ids) != 3 || ids["job/sink/0/2"] != 1 || ids["job/sink/0/0"] != 22 {
		t.Fatalf("ids %v, want a third id once, then the first again", ids)
	}
	if got := kafkatest.CommittedValues(t, c, "revenue"); len(got) != 44 {
		t.Fatalf("%d records committed, want 44", len(got))
	}
}

// A restore to a checkpoint whose pre-committed transaction the failed
// attempt committed, and whose id it then used again for a transaction it
// left open: the old commit is refused as lost (the id has a newer epoch),
// the abort takes the open transaction away, and the output holds the
// first transaction's records, so the sink's redo writes nothing again.
func TestRecoveryAfterAPooledIDWasUsedAgain(t *testing.T) {
	_, c, cl := kafkatest.EmbeddedClient(t)
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Write("job/sink/0/7", nil, []byte("a")); err != nil {
		t.Fatal(err)
	}
	first, err := o.Prepare("job/sink/0/7")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(first); err != nil {
		t.Fatal(err)
	}
	if err := o.Write("job/sink/0/8", nil, []byte("open")); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Prepare("job/sink/0/8"); err != nil {
		t.Fatal(err)
	}
	// The next process restores the checkpoint that pre-committed the
	// first transaction.
	o2, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	if err := o2.Commit(first); !errors.Is(err, runtime.ErrTxnLost) {
		t.Fatalf("committing the first transaction again: %v, want ErrTxnLost", err)
	}
	if err := o2.AbortLingering("job/sink/0/", 8); err != nil {
		t.Fatal(err)
	}
	missing, err := o2.Missing(context.Background(), first, []runtime.OutputRecord{{Value: []byte("a")}})
	if err != nil || len(missing) != 0 {
		t.Fatalf("Missing: %v, %v; want nothing", missing, err)
	}
	if got := kafkatest.CommittedValues(t, c, "revenue"); len(got) != 1 || got[0] != "a" {
		t.Fatalf("committed %v, want [a]", got)
	}
}

// At-least-once writes with one idempotent producer per sink subtask, its
// sequence numbers going on from barrier to barrier: a batch sent again
// (its answer lost) is not written twice.
func TestAtLeastOnceWritesAreIdempotent(t *testing.T) {
	_, c, cl := kafkatest.EmbeddedClient(t)
	const topic = "alo"
	if err := kafka.EnsureTopics(context.Background(), cl, map[string]int32{topic: 3}); err != nil {
		t.Fatal(err)
	}
	o, err := NewOutput(c, cl, topic, AtLeastOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	var pid int64 = -1
	for n := 0; n < 3; n++ {
		name := fmt.Sprintf("job/sink/0/%d", n)
		for k := 0; k < 10; k++ {
			v := fmt.Sprintf("%d-%d", n, k)
			if err := o.Write(name, []byte(v), []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := o.Prepare(name); err != nil {
			t.Fatal(err)
		}
		p := o.idem["job/sink/0/"]
		if p == nil || p.pid < 0 || pid >= 0 && p.pid != pid {
			t.Fatalf("barrier %d: idempotent producer %+v, want the same producer id each time (%d)", n, p, pid)
		}
		pid = p.pid
	}
	// The writer's retry of a batch whose answer was lost sends it again
	// with the same sequence numbers; the broker keeps one copy.
	p := o.idem["job/sink/0/"]
	w, err := newRecordWriter(cl, topic, nil, p.pid, p.epoch, nil, p.seq)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if err := w.write([]byte("k"), []byte("again"), time.Now()); err != nil {
		t.Fatal(err)
	}
	part := newKeyPlacer("t").partition([]byte("k"), 3)
	b := w.open[part]
	w.open[part] = nil
	b.LastOffsetDelta = int32(len(b.Records) - 1)
	b.FirstSequence = w.seq[part]
	for try := 0; try < 2; try++ {
		if err := w.produceOnce(writeBatch{partition: part, batch: b}); err != nil {
			t.Fatalf("send %d: %v", try+1, err)
		}
	}
	got := kafkatest.CommittedValues(t, c, topic)
	if len(got) != 31 {
		t.Fatalf("%d records in %s, want 31: %v", len(got), topic, got)
	}
}

// staleStableOffsets answers the next n ListOffsets requests with offset 0,
// as a Kafka broker does while the commit markers of a transaction are still
// being written into the partition.
func staleStableOffsets(c *kfake.Cluster, n int, asked *atomic.Int32) {
	for range n {
		c.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
			asked.Add(1)
			r := req.(*kmsg.ListOffsetsRequest)
			resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
			for _, t := range r.Topics {
				rt := kmsg.NewListOffsetsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewListOffsetsResponseTopicPartition()
					rp.Partition, rp.Offset, rp.Timestamp, rp.LeaderEpoch = p.Partition, 0, -1, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil, true
		})
	}
}

// The run's verification reads the output only once the commit markers of
// the output's last transactions are in: until then a read_committed
// consumer stops at the last stable offset, before their records.
func TestAwaitCommittedWaitsForTheMarkers(t *testing.T) {
	e, c, cl := kafkatest.EmbeddedClient(t)
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := transact(o, "job/sink/0/0", "a", "b", "c"); err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	staleStableOffsets(e.Cluster(), 3, &asked)
	if err := o.AwaitCommitted(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := asked.Load(); n != 3 {
		t.Fatalf("the stale last stable offset was asked %d times, want 3 before the wait ended", n)
	}
	staleStableOffsets(e.Cluster(), 1000, &asked)
	if err := o.AwaitCommitted(context.Background(), 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "last stable offset is 0, before 3") {
		t.Fatalf("markers that never come: %v", err)
	}
	// A stopped run waits no longer than it may.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := o.AwaitCommitted(ctx, 10*time.Second); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("waiting under a context that ended: %v after %s, want its end at once", err, time.Since(start))
	}
}

// A transaction committed by this process and committed again (a stopped
// run settling its outputs after its pooled id began a newer transaction)
// is known committed: the output asks the broker nothing, so the sink need
// not read the output to find out what it holds.
func TestCommittingAgainWhatThisOutputCommitted(t *testing.T) {
	_, c, cl := kafkatest.EmbeddedClient(t)
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Write("job/sink/0/7", nil, []byte("a")); err != nil {
		t.Fatal(err)
	}
	first, err := o.Prepare("job/sink/0/7")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(first); err != nil {
		t.Fatal(err)
	}
	// The next transaction takes the same pooled id, at a newer epoch.
	if err := o.Write("job/sink/0/8", nil, []byte("open")); err != nil {
		t.Fatal(err)
	}
	second, err := o.Prepare("job/sink/0/8")
	if err != nil {
		t.Fatal(err)
	}
	if idOf(second) != idOf(first) {
		t.Fatalf("the second transaction has id %s, want the first's, %s", idOf(second), idOf(first))
	}
	if err := o.Commit(first); err != nil {
		t.Fatalf("committing the first transaction again: %v, want nothing to do", err)
	}
	if err := o.AbortLingering("job/sink/0/", 8); err != nil {
		t.Fatal(err)
	}
	if got := kafkatest.CommittedValues(t, c, "revenue"); len(got) != 1 || got[0] != "a" {
		t.Fatalf("committed %v, want [a]", got)
	}
}

// A transaction a process before this one committed, found whole in the
// output when this one restored it (Missing finds nothing lacking), is
// known committed: committing it again as this run stops asks the broker
// nothing, whose answer would be that it no longer knows it.
func TestCommittingAgainWhatMissingFoundWhole(t *testing.T) {
	_, c, cl := kafkatest.EmbeddedClient(t)
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Write("job/sink/0/7", nil, []byte("a")); err != nil {
		t.Fatal(err)
	}
	first, err := o.Prepare("job/sink/0/7")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(first); err != nil {
		t.Fatal(err)
	}
	// The next process restores the checkpoint that pre-committed it,
	// after its id began a newer transaction.
	o2, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	if err := o2.AbortLingering("job/sink/0/", 8); err != nil {
		t.Fatal(err)
	}
	if err := o2.Commit(first); !errors.Is(err, runtime.ErrTxnLost) {
		t.Fatalf("committing the first transaction in the next process: %v, want ErrTxnLost", err)
	}
	missing, err := o2.Missing(context.Background(), first, []runtime.OutputRecord{{Value: []byte("a")}})
	if err != nil || len(missing) != 0 {
		t.Fatalf("Missing: %v, %v; want nothing", missing, err)
	}
	if err := o2.Commit(first); err != nil {
		t.Fatalf("committing it again once found whole: %v, want nothing to do", err)
	}
}
