// Package kafkatest holds what the tests of the Kafka packages share (the
// base package and its roles: source, sink, broker, live, fill): an
// embedded broker with the orders job's topics, answers injected in its
// place, and the orders job's input and output written and read back.
// Only tests import it; it imports the base package and the broker, never
// another role, so that the tests of each role can import it.
package kafkatest

import (
	"context"
	"sort"
	"testing"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
)

// Topics are the topics of the orders job: its inputs with the generator's
// partitions, and the output.
func Topics(output string, outputPartitions int32) map[string]int32 {
	return map[string]int32{
		orders.TopicOrders:   orders.GeneratorPartitions,
		orders.TopicPayments: orders.GeneratorPartitions,
		output:               outputPartitions,
	}
}

// StartOn starts an embedded broker on the log folder dir ("": in memory)
// with the orders job's topics, revenue with parts partitions, closed when
// the test ends.
func StartOn(t testing.TB, dir string, parts int32) (*broker.Embedded, kafka.Client) {
	t.Helper()
	e, err := broker.StartEmbedded(0, dir, Topics("revenue", parts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, kafka.Client{Brokers: []string{e.Addr}}
}

// LiveBroker starts an in-memory broker with the inputs and an output
// topic of outParts partitions.
func LiveBroker(t testing.TB, outParts int32) (*broker.Embedded, kafka.Client) {
	t.Helper()
	return StartOn(t, "", outParts)
}

// Embedded starts a broker for a test, its log in a folder of the test's,
// with the default job's topics.
func Embedded(t testing.TB) (*broker.Embedded, kafka.Client) {
	t.Helper()
	return StartOn(t, t.TempDir(), 1)
}

// EmbeddedClient is Embedded with a Sarama client of the broker, closed
// when the test ends.
func EmbeddedClient(t testing.TB) (*broker.Embedded, kafka.Client, sarama.Client) {
	t.Helper()
	e, c := Embedded(t)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return e, c, cl
}

// CommittedValues reads topic with a read_committed consumer, as a
// downstream Kafka consumer would, and returns the values sorted.
func CommittedValues(t testing.TB, c kafka.Client, topic string) []string {
	t.Helper()
	recs, err := kafka.ReadCommitted(context.Background(), c, topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Value))
	}
	sort.Strings(out)
	return out
}
