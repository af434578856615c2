//go:build kafka

package kafkalane

import (
	"fmt"
	"testing"
)

// The harness against a real broker: every listener answers, the console
// tools read what they wrote, and a killed broker comes back on the same
// ports with its log.
func TestBrokerWithEveryListener(t *testing.T) {
	b := Start(t, Options{SCRAM: true, TLS: true})
	if b.SCRAMAddr() == "" || b.TLSAddr() == "" || b.CAFile() == "" {
		t.Fatalf("listeners %q %q %q", b.SCRAMAddr(), b.TLSAddr(), b.CAFile())
	}
	b.CreateTopic(t, "lane", 3)
	var recs []Record
	for i := range 20 {
		recs = append(recs, Record{Key: fmt.Sprintf("k-%d", i), Value: fmt.Sprintf(`{"n":%d}`, i)})
	}
	b.ProduceRecords(t, "lane", recs)
	got := b.ReadCommitted(t, "lane")
	if len(got) != len(recs) {
		t.Fatalf("read %d records, want %d: %v", len(got), len(recs), got)
	}
	parts := map[string]int32{}
	for _, r := range got {
		parts[r.Key] = r.Partition
		if r.Timestamp == 0 {
			t.Fatalf("no timestamp: %+v", r)
		}
	}
	b.Kill(t)
	b.Restart(t)
	b.Produce(t, "lane", "k-0", `{"n":20}`)
	got = b.ReadCommitted(t, "lane")
	if len(got) != len(recs)+1 {
		t.Fatalf("after a restart: read %d records, want %d", len(got), len(recs)+1)
	}
	for _, r := range got {
		if parts[r.Key] != r.Partition {
			t.Fatalf("key %s went to partition %d, before to %d", r.Key, r.Partition, parts[r.Key])
		}
	}
	if ids := b.TransactionalIDs(t); len(ids) != 0 {
		t.Fatalf("transactional ids on a new broker: %v", ids)
	}
	if offs := b.Groups(t, "nobody"); len(offs) != 0 {
		t.Fatalf("offsets of a group that never committed: %v", offs)
	}
}
