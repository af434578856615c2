package orders

import (
	"context"
	"encoding/json"
	"testing"
)

func TestGeneratorEveryPaidOrderHasOnePayment(t *testing.T) {
	g := NewGenerator(3, 50000, GeneratorPartitions)
	orders := map[string]int{}
	payments := map[string]int{}
	total := int64(0)
	for p := 0; p < GeneratorPartitions; p++ {
		for _, topic := range []string{TopicOrders, TopicPayments} {
			end := g.EndOffset(topic, p)
			for off := int64(0); ; off++ {
				b, ok := g.Read(topic, p, off)
				if !ok {
					if off != end {
						t.Fatalf("%s/%d ends at %d, EndOffset says %d", topic, p, off, end)
					}
					break
				}
				total++
				var r struct {
					OrderID string `json:"order_id"`
				}
				if err := json.Unmarshal(b, &r); err != nil {
					t.Fatal(err)
				}
				if topic == TopicOrders {
					orders[r.OrderID]++
				} else {
					payments[r.OrderID]++
				}
			}
		}
	}
	if total < 50000 || total > 50001 {
		t.Fatalf("%d records, want 50000 (or one more)", total)
	}
	for id, n := range payments {
		if n != 1 || orders[id] != 1 {
			t.Fatalf("order %s: %d payments, %d orders", id, n, orders[id])
		}
	}
	if paid := float64(len(payments)) / float64(len(orders)); paid < 0.85 || paid > 0.95 {
		t.Fatalf("%.2f of orders paid, want about 0.9", paid)
	}
}

func TestGeneratorReaderSeeksAndMatchesRead(t *testing.T) {
	g := NewGenerator(5, 20000, GeneratorPartitions)
	src, _ := g.Source(TopicPayments)
	r, err := src.Reader([]int32{1, 3}, map[int32]int64{1: 100, 3: 7})
	if err != nil {
		t.Fatal(err)
	}
	next := map[int32]int64{1: 100, 3: 7}
	for {
		recs, done, err := r.Poll(context.Background(), nil, 64)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			// Records come round robin; find which partition matches.
			matched := false
			for _, p := range []int32{1, 3} {
				if b, ok := g.Read(TopicPayments, int(p), next[p]); ok && string(b) == string(rec.Bytes) {
					next[p]++
					matched = true
					break
				}
			}
			if !matched {
				t.Fatalf("record %s is not the next of partition 1 or 3", rec.Bytes)
			}
		}
		if done {
			break
		}
	}
	offs := r.Offsets()
	if offs[1] != g.EndOffset(TopicPayments, 1) || offs[3] != g.EndOffset(TopicPayments, 3) {
		t.Fatalf("offsets %v at the end, want the end offsets", offs)
	}
}
