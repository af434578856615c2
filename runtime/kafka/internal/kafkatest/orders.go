package kafkatest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/verify"
)

// The orders job's input and output, written and checked as the tests of
// the source, the live verifier and the broker's retention need them.

// Bounds is the share k/n of every generator partition.
func Bounds(gen *orders.Generator, topics []string, k, n int64) checkpoint.Offsets {
	out := checkpoint.Offsets{}
	for _, t := range topics {
		out[t] = map[int32]int64{}
		for p := 0; p < orders.GeneratorPartitions; p++ {
			out[t][int32(p)] = gen.EndOffset(t, p) * k / n
		}
	}
	return out
}

// WriteInputs writes the generator's records in [from, to) of every
// partition, as the input writer would.
func WriteInputs(t testing.TB, c kafka.Client, gen *orders.Generator, from, to checkpoint.Offsets) {
	t.Helper()
	p, err := c.SyncProducer()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var msgs []*sarama.ProducerMessage
	for topic, parts := range to {
		for part, end := range parts {
			for off := from[topic][part]; off < end; off++ {
				b, ok := gen.Read(topic, int(part), off)
				if !ok {
					t.Fatalf("generator has no %s/%d@%d", topic, part, off)
				}
				msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: part, Value: sarama.ByteEncoder(b)})
			}
		}
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
}

// ExpectedBelow is the test's own oracle: the orders below b (that are
// paid below b, when paid).
func ExpectedBelow(t testing.TB, gen *orders.Generator, b checkpoint.Offsets, paid bool) map[string]orders.Order {
	t.Helper()
	ords := map[string]orders.Order{}
	payments := map[string]bool{}
	for p := 0; p < orders.GeneratorPartitions; p++ {
		for off := int64(0); off < b[orders.TopicOrders][int32(p)]; off++ {
			raw, _ := gen.Read(orders.TopicOrders, p, off)
			var o orders.Order
			if err := json.Unmarshal(raw, &o); err != nil {
				t.Fatal(err)
			}
			ords[o.OrderID] = o
		}
		for off := int64(0); off < b[orders.TopicPayments][int32(p)]; off++ {
			raw, _ := gen.Read(orders.TopicPayments, p, off)
			var pay orders.Payment
			if err := json.Unmarshal(raw, &pay); err != nil {
				t.Fatal(err)
			}
			payments[pay.OrderID] = true
		}
	}
	if !paid {
		return ords
	}
	out := map[string]orders.Order{}
	for id, o := range ords {
		if payments[id] {
			out[id] = o
		}
	}
	return out
}

// NewSince lists the ids of now that were not in before, in a fixed order.
func NewSince(now, before map[string]orders.Order) []orders.Order {
	var out []orders.Order
	for id, o := range now {
		if _, ok := before[id]; !ok {
			out = append(out, o)
		}
	}
	sortOrders(out)
	return out
}

// sortOrders sorts os by order id.
func sortOrders(os []orders.Order) {
	for i := 1; i < len(os); i++ {
		for j := i; j > 0 && os[j].OrderID < os[j-1].OrderID; j-- {
			os[j], os[j-1] = os[j-1], os[j]
		}
	}
}

// WriteTxn writes the sink's records of orders into transaction txn of o
// and prepares it (flushed, still open); the committable commits it.
func WriteTxn(t testing.TB, o runtime.TxnOutput, txn string, ords []orders.Order) string {
	t.Helper()
	for _, ord := range ords {
		r := orders.Revenue{PaidOrder: orders.PaidOrder{OrderID: ord.OrderID, Customer: ord.Customer, AmountCents: ord.AmountCents}, CustomerTotalCents: ord.AmountCents}
		if err := o.Write(txn, []byte(ord.Customer), r.AppendJSON(nil)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := o.Prepare(txn)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Commit commits a prepared transaction of o, failing the test if it
// cannot.
func Commit(t testing.TB, o runtime.TxnOutput, committable string) {
	t.Helper()
	if err := o.Commit(committable); err != nil {
		t.Fatal(err)
	}
}

// ExpectOrders is what the orders job's verify kind expects (its
// catalogue's relation), by order_id.
func ExpectOrders(kind string, ttl time.Duration) verify.Expect {
	rel := orders.Catalogue().Relations[kind]
	return verify.Expect{Kind: kind, Inputs: rel.Inputs, Joined: rel.Joined, StateTTL: ttl, ID: "order_id"}
}

// MustLedger is verify.New for an expectation known to be valid.
func MustLedger(e verify.Expect) *verify.Ledger {
	l, err := verify.New(e)
	if err != nil {
		panic(err)
	}
	return l
}

// MustRead reads the committed records of the orders job's output,
// revenue, from the offsets in from (nil: the start).
func MustRead(t testing.TB, c kafka.Client, from map[int32]int64) []runtime.OutputRecord {
	t.Helper()
	recs, err := kafka.ReadCommitted(context.Background(), c, "revenue", from)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
