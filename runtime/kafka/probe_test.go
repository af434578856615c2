package kafka_test

import (
	"testing"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
)

// kfake answers ListOffsets with read_committed by the last stable offset:
// below an open transaction until it ends.
func TestListOffsetsReadCommittedIsLastStableOffset(t *testing.T) {
	_, c := kafkatest.LiveBroker(t, 1)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	o, err := sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	ord := orders.Order{OrderID: "o-000001", Customer: "c-1", AmountCents: 5}
	kafkatest.Commit(t, o, kafkatest.WriteTxn(t, o, "a", []orders.Order{ord}))
	open := kafkatest.WriteTxn(t, o, "b", []orders.Order{ord, ord})
	lso, err := kafka.ListOffsets(cl, "revenue", []int32{0}, sarama.ReadCommitted)
	if err != nil {
		t.Fatal(err)
	}
	hwm, err := kafka.ListOffsets(cl, "revenue", []int32{0}, sarama.ReadUncommitted)
	if err != nil {
		t.Fatal(err)
	}
	// a's record and commit marker, then b's two records.
	if lso[0] != 2 || hwm[0] != 4 {
		t.Fatalf("open: LSO %d, high watermark %d; want 2 and 4", lso[0], hwm[0])
	}
	last, end, err := kafka.VisibleIn(cl, "revenue", 0, 0, hwm[0], sarama.ReadCommitted)
	if err != nil || last != 0 || end != 2 {
		t.Fatalf("visible below the LSO: last %d, end %d, %v; want 0, 2", last, end, err)
	}
	kafkatest.Commit(t, o, open)
	lso, err = kafka.ListOffsets(cl, "revenue", []int32{0}, sarama.ReadCommitted)
	if err != nil {
		t.Fatal(err)
	}
	if lso[0] != 5 {
		t.Fatalf("committed: LSO %d, want 5 (after b's marker)", lso[0])
	}
	last, end, err = kafka.VisibleIn(cl, "revenue", 0, 1, 5, sarama.ReadCommitted)
	if err != nil || last != 3 || end != 5 {
		t.Fatalf("visible from a's marker: last %d, end %d, %v; want 3, 5", last, end, err)
	}
}
