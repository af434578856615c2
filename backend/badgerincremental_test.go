package backend

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// checkRestores restores full into a fresh Badger and a fresh Heap and checks
// that both hold exactly the state in want (their full snapshots equal want
// byte for byte, Len and every entry).
func checkRestores(t *testing.T, maxP int, kgs KeyGroupRange, composed, want []byte, wantLen int) {
	t.Helper()
	if !sameState(t, composed, want) {
		t.Fatalf("composed chain (%d bytes) differs from a full snapshot of the same state (%d bytes)", len(composed), len(want))
	}
	b := openBadger(t, maxP, kgs)
	h := NewHeap(maxP, kgs)
	for _, kb := range []KeyedBackend{b, h} {
		if err := kb.Restore([][]byte{composed}); err != nil {
			t.Fatal(err)
		}
		if kb.Len() != wantLen {
			t.Fatalf("%T: Len after restore = %d, want %d", kb, kb.Len(), wantLen)
		}
		if got := encode(t, kb.Snapshot()); !sameState(t, got, want) {
			t.Fatalf("%T: snapshot after restore differs from the state restored", kb)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBadgerIncrementalMillionKeys is the requirement for incremental
// checkpoints: a state of 1,000,000 keys (100,000 under -race or -short), a
// full snapshot, then 1% of the keys change (half overwritten, a quarter
// deleted, a quarter new): the delta is at most 5% of the full snapshot, and
// ComposeKeyed(full, delta) is exactly the state after the changes.
func TestBadgerIncrementalMillionKeys(t *testing.T) {
	n := incrementalTestKeys
	if testing.Short() {
		n = 100_000
	}
	const maxP = 128
	kgs := RangeFor(maxP, 1, 0)
	b := openBadger(t, maxP, kgs)
	value := func(i, gen int) []byte { return fmt.Appendf(nil, "amount=%d;gen=%d", i, gen) }
	keyOf := func(i int) string { return fmt.Sprintf("k-%08d", i) }
	start := time.Now()
	for i := range n {
		b.SetCurrentKey(keyOf(i))
		b.Put("v", "", value(i, 0))
	}
	fillTime := time.Since(start)
	start = time.Now()
	full := encode(t, b.Snapshot())
	fullTime := time.Since(start)

	changes := n / 100
	r := rand.New(rand.NewPCG(7, 7))
	perm := r.Perm(n)
	overwritten, deleted := perm[:changes/2], perm[changes/2:changes/2+changes/4]
	added := changes - len(overwritten) - len(deleted)
	// gen[i] is key i's value generation after the changes; -1: deleted.
	gen := make([]int, n+added)
	for _, i := range overwritten {
		b.SetCurrentKey(keyOf(i))
		b.Put("v", "", value(i, 1))
		gen[i] = 1
	}
	for _, i := range deleted {
		b.SetCurrentKey(keyOf(i))
		b.Delete("v", "")
		gen[i] = -1
	}
	for i := n; i < n+added; i++ {
		b.SetCurrentKey(keyOf(i))
		b.Put("v", "", value(i, 1))
		gen[i] = 1
	}
	wantLen := n - len(deleted) + added
	if b.Len() != wantLen {
		t.Fatalf("Len = %d, want %d", b.Len(), wantLen)
	}
	start = time.Now()
	snap := b.SnapshotIncremental()
	if !snap.(*BadgerSnapshot).Incremental() {
		t.Fatal("incremental snapshot after a full one is not a delta")
	}
	delta := encode(t, snap)
	deltaTime := time.Since(start)
	t.Logf("%d keys: fill %v (%.0f Put/s); full snapshot %d bytes in %v; %d changed: delta %d bytes (%.2f%% of full) in %v",
		n, fillTime.Round(time.Millisecond), float64(n)/fillTime.Seconds(), len(full), fullTime.Round(time.Millisecond),
		changes, len(delta), 100*float64(len(delta))/float64(len(full)), deltaTime.Round(time.Millisecond))
	if len(delta)*20 > len(full) {
		t.Fatalf("delta is %d bytes, more than 5%% of the full snapshot's %d", len(delta), len(full))
	}

	composed, err := ComposeKeyed([][]byte{full, delta})
	if err != nil {
		t.Fatal(err)
	}
	// Every key with its value, and no deleted key.
	count := 0
	err = DecodeKeyed(composed, func(kg int, k string, v []byte) {
		var i int
		if _, err := fmt.Sscanf(k[len(k)-8:], "%d", &i); err != nil || i >= len(gen) {
			t.Fatalf("composed state holds unknown entry %q", k)
		}
		if gen[i] < 0 {
			t.Fatalf("composed state holds deleted key %s", keyOf(i))
		}
		if !bytes.Equal(v, value(i, gen[i])) {
			t.Fatalf("key %s: %q, want %q", keyOf(i), v, value(i, gen[i]))
		}
		count++
	})
	if err != nil || count != wantLen {
		t.Fatalf("composed state: %d entries, %v; want %d", count, err, wantLen)
	}
	// The same bytes as a full snapshot of the state after the changes.
	if want := encode(t, b.Snapshot()); !sameState(t, composed, want) {
		t.Fatalf("composed chain (%d bytes) differs from a full snapshot of the same state (%d bytes)", len(composed), len(want))
	}
	// Restored into a fresh Badger and into a Heap: Len, and the keys that
	// changed read back as they should.
	for _, kb := range []KeyedBackend{openBadger(t, maxP, kgs), NewHeap(maxP, kgs)} {
		if err := kb.Restore([][]byte{composed}); err != nil {
			t.Fatal(err)
		}
		if kb.Len() != wantLen {
			t.Fatalf("%T: Len after restore = %d, want %d", kb, kb.Len(), wantLen)
		}
		check := func(i int) {
			kb.SetCurrentKey(keyOf(i))
			v, ok := kb.Get("v", "")
			switch {
			case gen[i] < 0 && ok:
				t.Fatalf("%T: deleted key %s restored as %q", kb, keyOf(i), v)
			case gen[i] >= 0 && (!ok || !bytes.Equal(v, value(i, gen[i]))):
				t.Fatalf("%T: key %s restored as %q %v, want %q", kb, keyOf(i), v, ok, value(i, gen[i]))
			}
		}
		for _, i := range perm[:changes+changes] { // the changed keys and as many unchanged
			check(i)
		}
		for i := n; i < n+added; i++ {
			check(i)
		}
	}
}

func TestBadgerIncrementalChain(t *testing.T) {
	const maxP = 64
	kgs := RangeFor(maxP, 1, 0)
	m := newMirror(t, maxP, kgs)
	m.b.maxEntries = 50
	r := rand.New(rand.NewPCG(3, 4))
	m.randomOps(r, 20000, 3000)

	// The first incremental snapshot of a backend holds all of the state.
	first := m.b.SnapshotIncremental()
	if first.(*BadgerSnapshot).Incremental() {
		t.Fatal("first incremental snapshot is a delta; want all of the state")
	}
	base := encode(t, first)
	if want := encode(t, m.h.Snapshot()); !sameState(t, base, want) {
		t.Fatal("first incremental snapshot differs from the heap's full snapshot")
	}
	chain := [][]byte{base}
	for i := range 3 {
		m.randomOps(r, 500, 3000)
		// A key deleted and re-created, a key created and deleted, within one delta.
		m.del("c-1", "v", "")
		m.put("c-1", "v", "", fmt.Appendf(nil, "again %d", i))
		m.put("c-new", "v", "", []byte("x"))
		m.del("c-new", "v", "")
		s := m.b.SnapshotIncremental()
		if !s.(*BadgerSnapshot).Incremental() {
			t.Fatalf("delta %d is not incremental", i+1)
		}
		d := encode(t, s)
		if !IsKeyedDelta(d) {
			t.Fatalf("delta %d does not start with %s", i+1, deltaMagic)
		}
		chain = append(chain, d)
		composed, err := ComposeKeyed(chain)
		if err != nil {
			t.Fatal(err)
		}
		checkRestores(t, maxP, kgs, composed, encode(t, m.h.Snapshot()), m.h.Len())
	}
	// Nothing changed: an empty delta.
	if d := encode(t, m.b.SnapshotIncremental()); string(d) != deltaMagic {
		t.Fatalf("delta with no changes = %q", d)
	}
	// A full Snapshot also restarts the change set.
	m.put("c-2", "v", "", []byte("after full"))
	full := encode(t, m.b.Snapshot())
	m.put("c-3", "v", "", []byte("after full too"))
	d := encode(t, m.b.SnapshotIncremental())
	n := 0
	if err := DecodeKeyedDelta(d, func(kg int, key string, v []byte, deleted bool) { n++ }); err != nil || n != 1 {
		t.Fatalf("delta after a full snapshot: %d entries, %v; want 1", n, err)
	}
	composed, err := ComposeKeyed(append(slices.Clone(chain), full, d))
	if err != nil {
		t.Fatal(err)
	}
	checkRestores(t, maxP, kgs, composed, encode(t, m.h.Snapshot()), m.h.Len())

	// After a restore, the next incremental snapshot holds all of the state.
	r2 := openBadger(t, maxP, kgs)
	if err := r2.Restore([][]byte{composed}); err != nil {
		t.Fatal(err)
	}
	if s := r2.SnapshotIncremental(); s.(*BadgerSnapshot).Incremental() {
		t.Fatal("first incremental snapshot after Restore is a delta")
	} else if !sameState(t, encode(t, s), composed) {
		t.Fatal("first incremental snapshot after Restore differs from the state restored")
	}
	// When more than half of the state changes, a full snapshot again.
	for i := range 20000 {
		m.put(fmt.Sprintf("c-%d", i), "v", "", []byte("all new"))
	}
	if s := m.b.SnapshotIncremental(); s.(*BadgerSnapshot).Incremental() {
		t.Fatal("incremental snapshot after most of the state changed is a delta")
	} else if !sameState(t, encode(t, s), encode(t, m.h.Snapshot())) {
		t.Fatal("full incremental snapshot differs from the heap's")
	}
}

func TestComposeKeyed(t *testing.T) {
	m := newMirror(t, 128, RangeFor(128, 1, 0))
	m.put("c-1", "v", "", []byte("one"))
	m.put("c-2", "v", "", []byte("two"))
	full := encode(t, m.b.Snapshot())
	m.del("c-1", "v", "")
	m.put("c-3", "v", "", []byte("three"))
	delta := encode(t, m.b.SnapshotIncremental())
	want := encode(t, m.h.Snapshot())

	if got, err := ComposeKeyed(nil); err != nil || string(got) != keyedMagic {
		t.Fatalf("empty chain: %q %v", got, err)
	}
	// A chain may start from nothing.
	if got, err := ComposeKeyed([][]byte{nil, delta}); err != nil || DecodeKeyed(got, func(int, string, []byte) {}) != nil {
		t.Fatalf("delta alone: %v", err)
	}
	// A full snapshot later in the chain replaces what comes before.
	if got, err := ComposeKeyed([][]byte{full, delta, want}); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("chain ending in a full snapshot: %v", err)
	}
	if got, err := ComposeKeyed([][]byte{full, delta}); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("full+delta: %v", err)
	}
	for name, chain := range map[string][][]byte{
		"truncated delta":     {full, delta[:len(delta)-1]},
		"truncated full":      {full[:len(full)-2], delta},
		"bad header":          {full, []byte("XXXX")},
		"delta out of order":  {full, append([]byte(deltaMagic), append(delta[4:], delta[4:]...)...)},
		"full with duplicate": {append(slices.Clone(full), full[4:]...)},
	} {
		if _, err := ComposeKeyed(chain); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if err := m.b.Restore([][]byte{delta}); err == nil {
		t.Error("Restore took a delta")
	}
}
