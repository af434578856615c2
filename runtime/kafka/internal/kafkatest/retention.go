package kafkatest

import (
	"testing"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
)

// Output is the sink's Output as the retention fixture writes with it
// (kafkatest imports no role but the broker: the sink's tests import it).
type Output interface {
	runtime.TxnOutput
	runtime.PositionReader
	Close() error
}

// RetentionFixture is a broker on disk with a quarter of the generator's
// input and a job's output of it: committed transactions for the paid
// orders of the first and second eighth, a duplicate, and a transaction
// still open.
type RetentionFixture struct {
	C          kafka.Client
	CL         sarama.Client
	Gen        *orders.Generator
	Eighth     checkpoint.Offsets // the input's first eighth
	Quarter    checkpoint.Offsets
	OutFrom    map[int32]int64 // where the second transaction began
	InputTopic map[string]string
}

// NewRetentionFixture starts the fixture's broker and writes its input,
// and its output with the exactly-once output of revenue that open
// returns.
func NewRetentionFixture(t testing.TB, open func(c kafka.Client, cl sarama.Client) (Output, error)) *RetentionFixture {
	t.Helper()
	_, c := StartOn(t, t.TempDir(), 1)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	f := &RetentionFixture{C: c, CL: cl, Gen: orders.NewGenerator(3, 40_000, orders.GeneratorPartitions),
		InputTopic: map[string]string{orders.TopicOrders: orders.TopicOrders, orders.TopicPayments: orders.TopicPayments}}
	topics := []string{orders.TopicOrders, orders.TopicPayments}
	f.Eighth, f.Quarter = Bounds(f.Gen, topics, 1, 8), Bounds(f.Gen, topics, 1, 4)
	WriteInputs(t, c, f.Gen, checkpoint.Offsets{}, f.Quarter)
	o, err := open(c, cl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	first := ExpectedBelow(t, f.Gen, f.Eighth, true)
	second := NewSince(ExpectedBelow(t, f.Gen, f.Quarter, true), first)
	Commit(t, o, WriteTxn(t, o, "t/0", NewSince(first, nil)))
	c1 := WriteTxn(t, o, "t/1", append(second, second[0])) // one duplicate
	_, f.OutFrom, _ = o.PositionOf(c1)
	Commit(t, o, c1)
	WriteTxn(t, o, "t/2", second[:5]) // prepared, never committed: holds back the LSO
	return f
}

// LogStart is the first offset partition p of topic still holds.
func LogStart(t testing.TB, cl sarama.Client, topic string, p int32) int64 {
	t.Helper()
	cl.RefreshMetadata(topic)
	o, err := cl.GetOffset(topic, p, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// LogStart is the first offset partition p of topic still holds.
func (f *RetentionFixture) LogStart(t testing.TB, topic string, p int32) int64 {
	t.Helper()
	return LogStart(t, f.CL, topic, p)
}
