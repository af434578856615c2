package attach

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
)

// What a Flink job's checkpoint covers of its input is what its sources
// committed to their group: nothing until every input partition has an
// offset, then the group's offsets, asked again no more than every
// groupRefresh.
func TestTheGroupsOffsetsAreTheCheckpointsBounds(t *testing.T) {
	e, err := broker.StartEmbedded(0, "", map[string]int32{"orders": 2, "payments": 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := kafka.Client{Brokers: []string{fmt.Sprintf("127.0.0.1:%d", e.Port())}}
	g := &groupOffsets{client: c, group: "peer", topics: []string{"orders", "payments"}}
	defer g.close()
	if offs, ok := g.offsets(); ok {
		t.Fatalf("bounds %v before the group committed anything", offs)
	}
	commit := func(offs map[string]map[int32]int64) {
		t.Helper()
		cfg, _ := c.Config()
		cl, err := sarama.NewClient(c.Brokers, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		om, err := sarama.NewOffsetManagerFromClient("peer", cl)
		if err != nil {
			t.Fatal(err)
		}
		for topic, parts := range offs {
			for p, o := range parts {
				pom, err := om.ManagePartition(topic, p)
				if err != nil {
					t.Fatal(err)
				}
				pom.MarkOffset(o, "")
				pom.Close()
			}
		}
		om.Commit()
		om.Close()
	}
	commit(map[string]map[int32]int64{"orders": {0: 5, 1: 7}})
	g.asked = time.Time{}
	if offs, ok := g.offsets(); ok {
		t.Fatalf("bounds %v while payments has no offset", offs)
	}
	commit(map[string]map[int32]int64{"payments": {0: 3}})
	g.asked = time.Time{}
	offs, ok := g.offsets()
	if !ok || offs["orders"][0] != 5 || offs["orders"][1] != 7 || offs["payments"][0] != 3 {
		t.Fatalf("bounds %v (%v), want orders 5 and 7, payments 3", offs, ok)
	}
	commit(map[string]map[int32]int64{"orders": {0: 9}})
	g.asked = time.Now()
	if again, _ := g.offsets(); again["orders"][0] != 5 {
		t.Fatalf("asked again within groupRefresh: %v", again)
	}
	g.asked = time.Now().Add(-groupRefresh)
	if again, _ := g.offsets(); again["orders"][0] != 9 {
		t.Fatalf("after groupRefresh: %v, want orders/0 at 9", again)
	}
}
