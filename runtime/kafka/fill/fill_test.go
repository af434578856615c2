package fill

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime/jobs/orders"
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
