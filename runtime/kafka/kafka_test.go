package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"faultline/runtime/jobs/orders"
)

// embedded starts a broker for a test, with the default job's topics.
func embedded(t *testing.T) (*Embedded, Client) {
	t.Helper()
	e, err := StartEmbedded(0, t.TempDir(), testTopics("revenue", 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, Client{Brokers: []string{e.Addr}}
}

// embeddedClient is embedded with a Sarama client of the broker, closed
// when the test ends.
func embeddedClient(t *testing.T) (*Embedded, Client, sarama.Client) {
	t.Helper()
	e, c := embedded(t)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return e, c, cl
}

func TestWriterFillsTopicsOnceAndSourceReadsThemBack(t *testing.T) {
	e, c := embedded(t)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	gen := orders.NewGenerator(2, 20000, orders.GeneratorPartitions)
	ctx := context.Background()
	n, err := NewWriter(c, cl, gen).Fill(ctx)
	if err != nil || n < 20000 {
		t.Fatalf("fill wrote %d: %v", n, err)
	}
	// A second fill finds everything there and writes nothing.
	if n, err := NewWriter(c, cl, gen).Fill(ctx); err != nil || n != 0 {
		t.Fatalf("second fill wrote %d: %v", n, err)
	}
	ends, err := EndOffsets(cl, orders.TopicPayments)
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
	inject(e.Cluster(), kmsg.OffsetCommit, 2, code(sarama.ErrConsumerCoordinatorNotAvailable), 0)
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

func TestUnreachableBrokerFailsFastNamingIt(t *testing.T) {
	start := time.Now()
	_, err := Client{Brokers: []string{"127.0.0.1:1"}}.NewClient()
	if err == nil {
		t.Fatal("connected to nothing")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("took %s", time.Since(start))
	}
	if want := "127.0.0.1:1"; !contains(err.Error(), want) {
		t.Fatalf("error %q does not name %s", err, want)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// SASL works against a broker that requires it, with each mechanism.
func TestSASLMechanisms(t *testing.T) {
	for _, mech := range []struct{ flag, kfake string }{
		{"plain", "PLAIN"}, {"scram-sha-256", "SCRAM-SHA-256"}, {"scram-sha-512", "SCRAM-SHA-512"},
	} {
		t.Run(mech.flag, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.EnableSASL(), kfake.Superuser(mech.kfake, "ada", "s3cret"), kfake.SeedTopics(1, "orders"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			good := Client{Brokers: c.ListenAddrs(), SASLMechanism: mech.flag, SASLUser: "ada", SASLPassword: "s3cret"}
			cl, err := good.NewClient()
			if err != nil {
				t.Fatalf("with the right password: %v", err)
			}
			if _, err := cl.Partitions("orders"); err != nil {
				t.Fatal(err)
			}
			cl.Close()
			bad := good
			bad.SASLPassword = "wrong"
			if cl, err := bad.NewClient(); err == nil {
				cl.Close()
				t.Fatal("connected with a wrong password")
			}
		})
	}
}

// The embedded broker rolls small segments, in memory (each one is a slice
// that doubles as it fills) and on disk (retention frees whole segments
// only).
func TestEmbeddedBrokerHasSmallSegments(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		e, err := StartEmbedded(0, dir, testTopics("revenue", 1))
		if err != nil {
			t.Fatal(err)
		}
		adm, err := sarama.NewClusterAdmin([]string{e.Addr}, sarama.NewConfig())
		if err != nil {
			e.Close()
			t.Fatal(err)
		}
		results, err := adm.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.BrokerResource, Name: "0"}}, sarama.DescribeConfigsOptions{})
		adm.Close()
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, r := range results {
			if r.ErrorCode != 0 {
				t.Fatalf("describe broker %s: %v %s", r.Name, r.ErrorCode, r.ErrorMsg)
			}
			for _, c := range r.Configs {
				if c.Name == "log.segment.bytes" {
					got = c.Value
				}
			}
		}
		want := fmt.Sprint(memorySegmentBytes)
		if dir != "" {
			want = fmt.Sprint(diskSegmentBytes)
		}
		if got != want {
			t.Errorf("data dir %q: log.segment.bytes %q, want %s", dir, got, want)
		}
	}
}

// An unbounded writer writes each payment at most a block of orders ahead
// of its order: written at one pace, the payments (fewer than the orders)
// ran ahead further every second, and after ten minutes a payment came a
// minute before its order, longer than the join waits.
func TestWriterKeepsPaymentsNearTheirOrders(t *testing.T) {
	_, c := embedded(t)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	gen := orders.NewGenerator(5, 0, orders.GeneratorPartitions)
	w := NewWriter(c, cl, gen)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if err := w.Run(ctx, 40000); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < orders.GeneratorPartitions; p++ {
		ordersEnd, err := cl.GetOffset(orders.TopicOrders, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatal(err)
		}
		payments, err := cl.GetOffset(orders.TopicPayments, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatal(err)
		}
		if ordersEnd < 1000 {
			t.Fatalf("partition %d: only %d orders written", p, ordersEnd)
		}
		// The last payment written was due: its block had begun.
		if !gen.PaymentDue(int(p), payments-1, ordersEnd) {
			t.Errorf("partition %d: payment %d written with only %d orders", p, payments-1, ordersEnd)
		}
		// And the next one is not far behind: the payments keep up.
		if !gen.PaymentDue(int(p), payments+64, ordersEnd+3*32) {
			t.Errorf("partition %d: payments lag: %d payments for %d orders", p, payments, ordersEnd)
		}
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
	closeCommitsTheLastOffsets(t, 8, func(e *Embedded) {
		inject(e.Cluster(), kmsg.OffsetCommit, 2, code(sarama.ErrOffsetsLoadInProgress), 0)
	}, 0)
}

// The same when Close comes while the committer waits to try the last
// offsets again: the wait is cut short, the try is not.
func TestCloseDuringTheLastOffsetsRetryStillCommitsThem(t *testing.T) {
	closeCommitsTheLastOffsets(t, 4, func(e *Embedded) {
		inject(e.Cluster(), kmsg.OffsetCommit, 2, code(sarama.ErrOffsetsLoadInProgress), 0)
	}, 50*time.Millisecond)
}

// closeCommitsTheLastOffsets hands a reader offsets and closes it settle
// later, rounds times, each after before (nil: nothing), and fails t
// unless a reader of the group's committed offsets starts from them.
func closeCommitsTheLastOffsets(t *testing.T, rounds int64, before func(e *Embedded), settle time.Duration) {
	e, c, cl := embeddedClient(t)
	gen := orders.NewGenerator(3, 2000, orders.GeneratorPartitions)
	if _, err := NewWriter(c, cl, gen).Fill(context.Background()); err != nil {
		t.Fatal(err)
	}
	ends, err := EndOffsets(cl, orders.TopicOrders)
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

// testTopics are the topics of the orders job: its inputs with the
// generator's partitions, and the output.
func testTopics(output string, outputPartitions int32) map[string]int32 {
	return map[string]int32{
		orders.TopicOrders:   orders.GeneratorPartitions,
		orders.TopicPayments: orders.GeneratorPartitions,
		output:               outputPartitions,
	}
}
