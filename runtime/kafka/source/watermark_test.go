package source

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
)

// A source stamps each record with its watermark: the least, over the
// partitions it reads, of the newest event time it read of each. It is
// none (0) until every partition delivered a record, then the slowest
// partition's, whichever partition that is as they move; a bounded
// partition read to its end, or with nothing to read, no longer holds it
// back.
func TestSourceWatermarkIsTheSlowestPartitions(t *testing.T) {
	_, c, cl := kafkatest.EmbeddedClient(t)
	prod, err := c.SyncProducer()
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	ms := func(s int) int64 { return base.Add(time.Duration(s) * time.Second).UnixMilli() }
	// send writes records into partition part with event times base+secs,
	// each record's value saying where and when it is.
	send := func(part int32, secs ...int) {
		t.Helper()
		var msgs []*sarama.ProducerMessage
		for _, s := range secs {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: orders.TopicOrders, Partition: part,
				Value: sarama.StringEncoder(fmt.Sprintf("%d@%d", part, s)), Timestamp: base.Add(time.Duration(s) * time.Second)})
		}
		if err := prod.SendMessages(msgs); err != nil {
			t.Fatal(err)
		}
	}
	// Partition 0 is an hour ahead of partition 1, which replays old
	// records, as after a break.
	send(0, 3600, 3610)
	send(1, 0, 1, 2)

	// model is the watermark the test expects, from the records polled so
	// far: newest event time per partition, ended ones left out.
	type model struct {
		newest map[int32]int64
		left   map[int32]int // records still to come of a bounded partition
		parts  []int32
	}
	want := func(m *model) int64 {
		wm := int64(math.MaxInt64)
		for _, p := range m.parts {
			if l, bounded := m.left[p]; bounded && l == 0 {
				continue
			}
			n, ok := m.newest[p]
			if !ok {
				return 0
			}
			wm = min(wm, n)
		}
		return wm
	}
	// poll reads n records and checks the watermark each carries; it
	// returns the last one's.
	poll := func(r runtime.SourceReader, m *model, n int) int64 {
		t.Helper()
		var last int64
		deadline := time.Now().Add(20 * time.Second)
		for n > 0 && time.Now().Before(deadline) {
			recs, _, err := r.Poll(context.Background(), nil, n)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range recs {
				var part int32
				var s int
				if _, err := fmt.Sscanf(string(rec.Bytes), "%d@%d", &part, &s); err != nil {
					t.Fatalf("record %q: %v", rec.Bytes, err)
				}
				m.newest[part] = max(m.newest[part], ms(s))
				et := rec.Value.(*runtime.EventTime)
				if et.Time != ms(s) {
					t.Fatalf("record %s: event time %d, want %d", rec.Bytes, et.Time, ms(s))
				}
				if w := want(m); et.Watermark != w {
					t.Fatalf("record %s: watermark %d, want %d (newest per partition %v)", rec.Bytes, et.Watermark, w, m.newest)
				}
				if l, ok := m.left[part]; ok {
					m.left[part] = l - 1
				}
				last = et.Watermark
				n--
			}
		}
		if n > 0 {
			t.Fatalf("%d records not read", n)
		}
		return last
	}

	src, err := NewSource(c, cl, orders.TopicOrders, StartEarliest, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := src.Reader([]int32{0, 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := &model{newest: map[int32]int64{}, parts: []int32{0, 1}}
	if wm := poll(r, m, 5); wm != ms(2) {
		t.Fatalf("watermark %d after both partitions, want partition 1's newest %d", wm, ms(2))
	}
	// Partition 1 catches up and passes partition 0: the watermark is
	// partition 0's now.
	send(1, 3700)
	if wm := poll(r, m, 1); wm != ms(3610) {
		t.Fatalf("watermark %d once partition 1 passed partition 0, want partition 0's newest %d", wm, ms(3610))
	}

	// Bounded, with an empty partition 2: it holds nothing back, nor does
	// a partition once read to its end.
	ends, err := kafka.EndOffsets(cl, orders.TopicOrders)
	if err != nil {
		t.Fatal(err)
	}
	bsrc, err := NewSource(c, cl, orders.TopicOrders, StartEarliest, "", ends)
	if err != nil {
		t.Fatal(err)
	}
	br, err := bsrc.Reader([]int32{0, 1, 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	bm := &model{newest: map[int32]int64{}, parts: []int32{0, 1, 2}, left: map[int32]int{0: 2, 1: 4, 2: 0}}
	poll(br, bm, 6)
}
