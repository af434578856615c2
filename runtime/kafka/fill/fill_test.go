package fill

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
)

// An unbounded writer writes each payment at most a block of orders ahead
// of its order: written at one pace, the payments (fewer than the orders)
// ran ahead further every second, and after ten minutes a payment came a
// minute before its order, longer than the join waits.
func TestWriterKeepsPaymentsNearTheirOrders(t *testing.T) {
	_, c := kafkatest.Embedded(t)
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

// A bounded input written at once is stamped at FillEventRate, its last
// record about when the fill began: read at full speed it spans the event
// time it would have taken to come, so that a join's TTL expires what it
// should (stamped as written, a million records took one second).
func TestFillStampsItsRecordsAtTheFillEventRate(t *testing.T) {
	_, c := kafkatest.Embedded(t)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	gen := orders.NewGenerator(5, 20000, orders.GeneratorPartitions)
	began := time.Now()
	n, err := NewWriter(c, cl, gen).Fill(context.Background())
	if err != nil || n < 20000 {
		t.Fatalf("fill: %d records, %v", n, err)
	}
	var first, last int64
	count := 0
	for _, topic := range []string{orders.TopicOrders, orders.TopicPayments} {
		recs, err := kafka.Read(context.Background(), c, topic, nil, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if first == 0 || r.Time < first {
				first = r.Time
			}
			last = max(last, r.Time)
			count++
		}
	}
	if int64(count) != n {
		t.Fatalf("read %d records, want %d", count, n)
	}
	// 20,000 records at 8,000/s: 2.5 s of event time, ending as the fill began.
	span := time.Duration(last-first) * time.Millisecond
	want := time.Duration(float64(n-1) / FillEventRate * float64(time.Second))
	if span < want-time.Millisecond || span > want+time.Millisecond {
		t.Errorf("the records span %v of event time, want %v", span, want)
	}
	if end := time.UnixMilli(last); end.Before(began.Add(-time.Second)) || end.After(time.Now()) {
		t.Errorf("the last record is stamped %v, the fill began at %v", end, began)
	}
}
