package source

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
	"github.com/faultline-dev/faultline/runtime/kafka/fill"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
)

func TestWriterFillsTopicsOnceAndSourceReadsThemBack(t *testing.T) {
	e, c := kafkatest.Embedded(t)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	gen := orders.NewGenerator(2, 20000, orders.GeneratorPartitions)
	ctx := context.Background()
	n, err := fill.NewWriter(c, cl, gen).Fill(ctx)
	if err != nil || n < 20000 {
		t.Fatalf("fill wrote %d: %v", n, err)
	}
	// A second fill finds everything there and writes nothing.
	if n, err := fill.NewWriter(c, cl, gen).Fill(ctx); err != nil || n != 0 {
		t.Fatalf("second fill wrote %d: %v", n, err)
	}
	ends, err := kafka.EndOffsets(cl, orders.TopicPayments)
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewSource(c, cl, orders.TopicPayments, StartEarliest, "g", ends)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 4; p++ {
		if src.EndOffsets()[p] != gen.EndOffset(orders.TopicPayments, int(p)) {
			t.Fatalf("end offset of partition %d: %d, generator %d", p, src.EndOffsets()[p], gen.EndOffset(orders.TopicPayments, int(p)))
		}
	}
	// Partition 1 from offset 10, partition 3 from the start.
	r, err := src.Reader([]int32{1, 3}, map[int32]int64{1: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := map[string]bool{}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		recs, done, err := r.Poll(ctx, nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			got[string(rec.Bytes)] = true
		}
		if done {
			break
		}
	}
	want := 0
	for _, p := range []int{1, 3} {
		from := int64(0)
		if p == 1 {
			from = 10
		}
		for off := from; off < gen.EndOffset(orders.TopicPayments, p); off++ {
			b, _ := gen.Read(orders.TopicPayments, p, off)
			if !got[string(b)] {
				t.Fatalf("partition %d offset %d not read", p, off)
			}
			want++
		}
	}
	if len(got) != want {
		t.Fatalf("read %d records, want %d", len(got), want)
	}
	offs := r.Offsets()
	if offs[1] != gen.EndOffset(orders.TopicPayments, 1) || offs[3] != gen.EndOffset(orders.TopicPayments, 3) {
		t.Fatalf("offsets at the end: %v", offs)
	}
	// Committed offsets reach the group, and a committed start resumes
	// there. The commit is retried while the coordinator is not ready, as
	// on a cluster whose offsets topic the first commit creates.
	kafkatest.Inject(e.Cluster(), kmsg.OffsetCommit, 2, kafkatest.Code(sarama.ErrConsumerCoordinatorNotAvailable), 0)
	if err := r.(*reader).commit(map[int32]int64{1: 25, 3: 30}, commitRetryTimeout, nil); err != nil {
		t.Fatal(err)
	}
	src2, _ := NewSource(c, cl, orders.TopicPayments, StartCommitted, "g", ends)
	r2, err := src2.Reader([]int32{1, 2, 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if o := r2.Offsets(); o[1] != 25 || o[3] != 30 || o[2] != 0 {
		t.Fatalf("committed start offsets %v, want 1:25 3:30 2:0", o)
	}
}

// The offsets handed to CommitOffsets just before Close are committed
// still: a bounded source commits its final checkpoint's offsets and
// closes at once, and its group used to keep older offsets (lag > 0 after
// the run had read everything) when the committer saw the close first.
func TestCloseCommitsTheLastOffsets(t *testing.T) {
	closeCommitsTheLastOffsets(t, 20, nil, 0)
}

// The same while the group's coordinator is still loading (a cluster's
// first consumer group: its offsets topic is being created): the last
// offsets are retried until they are committed, though Close has begun.
// Close races the commit, either may come first: eight rounds.
func TestCloseRetriesTheLastOffsetsWhileTheCoordinatorLoads(t *testing.T) {
	closeCommitsTheLastOffsets(t, 8, func(e *broker.Embedded) {
		kafkatest.Inject(e.Cluster(), kmsg.OffsetCommit, 2, kafkatest.Code(sarama.ErrOffsetsLoadInProgress), 0)
	}, 0)
}

// The same when Close comes while the committer waits to try the last
// offsets again: the wait is cut short, the try is not.
func TestCloseDuringTheLastOffsetsRetryStillCommitsThem(t *testing.T) {
	closeCommitsTheLastOffsets(t, 4, func(e *broker.Embedded) {
		kafkatest.Inject(e.Cluster(), kmsg.OffsetCommit, 2, kafkatest.Code(sarama.ErrOffsetsLoadInProgress), 0)
	}, 50*time.Millisecond)
}

// closeCommitsTheLastOffsets hands a reader offsets and closes it settle
// later, rounds times, each after before (nil: nothing), and fails t
// unless a reader of the group's committed offsets starts from them.
func closeCommitsTheLastOffsets(t *testing.T, rounds int64, before func(e *broker.Embedded), settle time.Duration) {
	e, c, cl := kafkatest.EmbeddedClient(t)
	gen := orders.NewGenerator(3, 2000, orders.GeneratorPartitions)
	if _, err := fill.NewWriter(c, cl, gen).Fill(context.Background()); err != nil {
		t.Fatal(err)
	}
	ends, err := kafka.EndOffsets(cl, orders.TopicOrders)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rounds {
		src, err := NewSource(c, cl, orders.TopicOrders, StartEarliest, "close", ends)
		if err != nil {
			t.Fatal(err)
		}
		r, err := src.Reader([]int32{0, 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if before != nil {
			before(e)
		}
		r.(*reader).CommitOffsets(map[int32]int64{0: 100 + i, 1: 200 + i})
		time.Sleep(settle)
		r.Close()
		if err := r.(*reader).LastCommitError(); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		src2, _ := NewSource(c, cl, orders.TopicOrders, StartCommitted, "close", ends)
		r2, err := src2.Reader([]int32{0, 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		o := r2.Offsets()
		r2.Close()
		if o[0] != 100+i || o[1] != 200+i {
			t.Fatalf("round %d: committed %v after Close, want 0:%d 1:%d", i, o, 100+i, 200+i)
		}
	}
}
