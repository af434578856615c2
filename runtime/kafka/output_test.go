package kafka

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// committedValues reads topic with a read_committed consumer, as a
// downstream Kafka consumer would.
func committedValues(t *testing.T, c Client, topic string) []string {
	t.Helper()
	recs, err := ReadCommitted(context.Background(), c, topic, nil)
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

func TestOutputTransactions(t *testing.T) {
	_, c := embedded(t)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	// t/0 is committed by its own producer, t/1 by another process's
	// (resumed from its committable), t/2 is left open and then aborted as
	// lingering; t/3 was never used and stops the probe.
	for name, v := range map[string]string{"t/0": "a", "t/1": "b", "t/2": "c"} {
		if err := o.Write(name, nil, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	c0, err := o.Prepare("t/0")
	if err != nil {
		t.Fatal(err)
	}
	c1, err := o.Prepare("t/1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Prepare("t/2"); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(c0); err != nil {
		t.Fatal(err)
	}
	// A second output stands in for a restarted process.
	o2, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	if err := o2.Commit(c1); err != nil {
		t.Fatalf("resumed commit: %v", err)
	}
	if err := o2.Commit(c1); err != nil {
		t.Fatalf("committing again: %v", err)
	}
	if err := o2.AbortLingering("t/", 2); err != nil {
		t.Fatal(err)
	}
	got := committedValues(t, c, "revenue")
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("committed %v, want [a b]", got)
	}
	// The aborted t/2 can be used again.
	if err := o2.Write("t/2", nil, []byte("d")); err != nil {
		t.Fatal(err)
	}
	c2, _ := o2.Prepare("t/2")
	if err := o2.Commit(c2); err != nil {
		t.Fatal(err)
	}
	if got := committedValues(t, c, "revenue"); len(got) != 3 || got[2] != "d" {
		t.Fatalf("committed %v, want [a b d]", got)
	}
	_ = time.Second
	_ = sarama.ErrNoError
}

// Without a delivery guarantee records go to an async producer at once:
// Prepare never waits for them, Flush does, and every record is there
// afterwards; at-least-once sends them in batches and Prepare flushes.
func TestOutputWithoutTransactions(t *testing.T) {
	_, c := embedded(t)
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, g := range []Guarantee{None, AtLeastOnce} {
		t.Run(string(g), func(t *testing.T) {
			topic := "out-" + string(g)
			if err := EnsureTopics(cl, map[string]int32{topic: 1}); err != nil {
				t.Fatal(err)
			}
			o, err := NewOutput(c, cl, topic, g)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			const n = 5000
			for i := 0; i < n; i++ {
				if err := o.Write("ignored", nil, []byte{byte('a' + i%26)}); err != nil {
					t.Fatal(err)
				}
			}
			if c, err := o.Prepare("ignored"); c != "" || err != nil {
				t.Fatalf("Prepare = %q, %v; want no committable", c, err)
			}
			if err := o.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := len(committedValues(t, c, topic)); got != n {
				t.Fatalf("%d records in %s, want %d", got, topic, n)
			}
		})
	}
}
