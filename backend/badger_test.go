package backend

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"
)

// backendKind opens one kind of keyed backend for a test; the same test body
// runs on every kind.
type backendKind struct {
	name string
	open func(t testing.TB, maxP int, kgs KeyGroupRange) KeyedBackend
}

var backendKinds = []backendKind{
	{"heap", func(t testing.TB, maxP int, kgs KeyGroupRange) KeyedBackend { return NewHeap(maxP, kgs) }},
	{"badger", func(t testing.TB, maxP int, kgs KeyGroupRange) KeyedBackend { return openBadger(t, maxP, kgs) }},
	// An overlay of 3 entries flushes all the time: reads must find what
	// is flushed, what is pending, and the mix of both.
	{"badger-tiny-overlay", func(t testing.TB, maxP int, kgs KeyGroupRange) KeyedBackend {
		b := openBadger(t, maxP, kgs)
		b.maxEntries = 3
		return b
	}},
}

// openBadger opens a Badger backend in a fresh directory, closed when the test ends.
func openBadger(t testing.TB, maxP int, kgs KeyGroupRange) *Badger {
	t.Helper()
	b, err := NewBadger(filepath.Join(t.TempDir(), "keyed"), maxP, kgs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

func encode(t testing.TB, s Snapshot) []byte {
	t.Helper()
	b, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fillKeyed is fill for any backend: value, list and map state per key.
func fillKeyed(kb KeyedBackend, keys []string) {
	for _, k := range keys {
		var i int
		fmt.Sscanf(k, "c-%d", &i)
		kb.SetCurrentKey(k)
		NewValue[int64](kb, "total", Int64Codec{}).Update(int64(i))
		NewList[int64](kb, "seen", Int64Codec{}).Add(int64(i))
		NewList[int64](kb, "seen", Int64Codec{}).Add(int64(i * 2))
		m := NewMap[int64](kb, "m", Int64Codec{})
		m.Put("a", 1)
		m.Put("b", 2)
	}
}

func mapContents(t testing.TB, m Map[int64]) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	if err := m.Range(func(k string, v int64) bool { got[k] = v; return true }); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestBackendsStateTypes(t *testing.T) {
	for _, kind := range backendKinds {
		t.Run(kind.name, func(t *testing.T) {
			kb := kind.open(t, 128, RangeFor(128, 1, 0))
			total := NewValue[int64](kb, "total", Int64Codec{})
			seen := NewList[int64](kb, "seen", Int64Codec{})
			m := NewMap[int64](kb, "m", Int64Codec{})

			kb.SetCurrentKey("c-1")
			if _, ok, err := total.Get(); ok || err != nil {
				t.Fatalf("value before any update: ok %v err %v", ok, err)
			}
			total.Update(5)
			total.Update(6) // a Put of an existing entry does not grow Len
			if v, ok, _ := total.Get(); !ok || v != 6 {
				t.Fatalf("value = %d %v, want 6", v, ok)
			}
			seen.Add(1)
			seen.Add(2)
			seen.Add(3)
			m.Put("a", 1)
			m.Put("b", 2)
			m.Put("c", 3)
			m.Remove("b")
			m.Remove("zz") // a Delete of a missing entry does not shrink Len
			if kb.Len() != 4 {
				t.Fatalf("Len = %d, want 4 (total, seen, m/a, m/c)", kb.Len())
			}
			kb.SetCurrentKey("c-2")
			if _, ok, _ := total.Get(); ok {
				t.Fatal("c-2 sees c-1's value")
			}
			if got := mapContents(t, m); len(got) != 0 {
				t.Fatalf("c-2 sees c-1's map: %v", got)
			}
			m.Put("x", 9)

			kb.SetCurrentKey("c-1")
			if l, err := seen.Get(); err != nil || !slices.Equal(l, []int64{1, 2, 3}) {
				t.Fatalf("list = %v %v", l, err)
			}
			if got := mapContents(t, m); len(got) != 2 || got["a"] != 1 || got["c"] != 3 {
				t.Fatalf("map = %v, want a:1 c:3", got)
			}
			// Part of the map flushed, part pending: Range sees the merge.
			_ = kb.Snapshot()
			m.Put("c", 33)
			m.Remove("a")
			m.Put("d", 4)
			m.Put("0", 0)
			if got := mapContents(t, m); len(got) != 3 || got["c"] != 33 || got["d"] != 4 || got["0"] != 0 {
				t.Fatalf("map = %v, want 0:0 c:33 d:4", got)
			}
			n := 0
			_ = m.Range(func(string, int64) bool { n++; return false })
			if n != 1 {
				t.Fatalf("Range went on after f returned false: %d calls", n)
			}
			// Scan of value state sees its one entry, sub "".
			var subs []string
			kb.Scan("total", func(sub string, _ []byte) bool { subs = append(subs, sub); return true })
			if len(subs) != 1 || subs[0] != "" {
				t.Fatalf("Scan(total) = %q", subs)
			}
			total.Clear()
			seen.Clear()
			if _, ok, _ := total.Get(); ok {
				t.Fatal("value after Clear")
			}
			if l, _ := seen.Get(); l != nil {
				t.Fatalf("list after Clear = %v", l)
			}
			total.Clear()
			if kb.Len() != 4 {
				t.Fatalf("Len = %d, want 4 (c-1 m/0 m/c m/d, c-2 m/x)", kb.Len())
			}

			// Many keys: the overlay flushes; everything reads back.
			const many = 10000
			for i := range many {
				kb.SetCurrentKey(fmt.Sprintf("k-%d", i))
				total.Update(int64(i))
				if i%3 == 0 {
					total.Clear()
				}
			}
			want := 4 + many - (many+2)/3
			if kb.Len() != want {
				t.Fatalf("Len = %d, want %d", kb.Len(), want)
			}
			for i := range many {
				kb.SetCurrentKey(fmt.Sprintf("k-%d", i))
				v, ok, err := total.Get()
				if err != nil || ok != (i%3 != 0) || (ok && v != int64(i)) {
					t.Fatalf("k-%d: %d %v %v", i, v, ok, err)
				}
			}
		})
	}
}

func TestBackendsSnapshotIsFrozenAndRestoresAcrossParallelism(t *testing.T) {
	const maxP = 128
	var keys []string
	for i := 0; i < 500; i++ {
		keys = append(keys, fmt.Sprintf("c-%d", i))
	}
	for _, from := range backendKinds {
		for _, to := range backendKinds {
			t.Run(from.name+"-to-"+to.name, func(t *testing.T) {
				// Old job: parallelism 2.
				var blobs [][]byte
				for idx := 0; idx < 2; idx++ {
					kb := from.open(t, maxP, RangeFor(maxP, 2, idx))
					var mine []string
					for _, k := range keys {
						if OperatorIndexFor(KeyGroupFor(k, maxP), maxP, 2) == idx {
							mine = append(mine, k)
						}
					}
					fillKeyed(kb, mine)
					snap := kb.Snapshot()
					// Writes after the snapshot must not show in it.
					for _, k := range mine {
						kb.SetCurrentKey(k)
						NewValue[int64](kb, "total", Int64Codec{}).Update(-1)
						NewMap[int64](kb, "m", Int64Codec{}).Remove("a")
						NewMap[int64](kb, "m", Int64Codec{}).Put("new", 7)
					}
					blobs = append(blobs, (&SubtaskState{Keyed: encode(t, snap)}).Encode())
				}
				// New job: parallelism 3, every subtask restores from both blobs.
				seen := 0
				for idx := 0; idx < 3; idx++ {
					kb := to.open(t, maxP, RangeFor(maxP, 3, idx))
					var keyed [][]byte
					for _, b := range blobs {
						s, err := DecodeSubtaskState(b)
						if err != nil {
							t.Fatal(err)
						}
						keyed = append(keyed, s.Keyed)
					}
					if err := kb.Restore(keyed); err != nil {
						t.Fatal(err)
					}
					mine := 0
					for i, k := range keys {
						if OperatorIndexFor(KeyGroupFor(k, maxP), maxP, 3) != idx {
							continue
						}
						seen++
						mine++
						kb.SetCurrentKey(k)
						v, ok, err := NewValue[int64](kb, "total", Int64Codec{}).Get()
						if err != nil || !ok || v != int64(i) {
							t.Fatalf("key %s: total = %d %v %v, want %d", k, v, ok, err, i)
						}
						l, err := NewList[int64](kb, "seen", Int64Codec{}).Get()
						if err != nil || len(l) != 2 || l[0] != int64(i) || l[1] != int64(2*i) {
							t.Fatalf("key %s: list = %v %v", k, l, err)
						}
						got := mapContents(t, NewMap[int64](kb, "m", Int64Codec{}))
						if len(got) != 2 || got["a"] != 1 || got["b"] != 2 {
							t.Fatalf("key %s: map = %v", k, got)
						}
					}
					if kb.Len() != 4*mine {
						t.Fatalf("subtask %d: Len = %d, want %d", idx, kb.Len(), 4*mine)
					}
				}
				if seen != len(keys) {
					t.Fatalf("restored %d keys, want %d", seen, len(keys))
				}
			})
		}
	}
}

// mirror applies the same operations to a heap and a Badger backend.
type mirror struct {
	h *Heap
	b *Badger
}

func (m mirror) put(key, state, sub string, v []byte) {
	m.h.SetCurrentKey(key)
	m.h.Put(state, sub, v)
	m.b.SetCurrentKey(key)
	m.b.Put(state, sub, v)
}

func (m mirror) del(key, state, sub string) {
	m.h.SetCurrentKey(key)
	m.h.Delete(state, sub)
	m.b.SetCurrentKey(key)
	m.b.Delete(state, sub)
}

// randomOps applies n random puts and deletes over a key space of keys keys,
// in value and map state.
func (m mirror) randomOps(r *rand.Rand, n, keys int) {
	for range n {
		key := fmt.Sprintf("c-%d", r.IntN(keys))
		if !m.h.kgs.Contains(KeyGroupFor(key, m.h.maxPar)) {
			continue
		}
		state, sub := "v", ""
		if r.IntN(3) == 0 {
			state, sub = "m", fmt.Sprintf("s%d", r.IntN(5))
		}
		if r.IntN(4) == 0 {
			m.del(key, state, sub)
		} else {
			m.put(key, state, sub, fmt.Appendf(nil, "%d", r.Int64()))
		}
	}
}

func newMirror(t testing.TB, maxP int, kgs KeyGroupRange) mirror {
	return mirror{h: NewHeap(maxP, kgs), b: openBadger(t, maxP, kgs)}
}

func TestBadgerFullSnapshotEqualsHeap(t *testing.T) {
	for _, overlay := range []int{3, 100, overlayMaxEntries} {
		t.Run(fmt.Sprintf("overlay-%d", overlay), func(t *testing.T) {
			kgs := RangeFor(128, 2, 1)
			m := newMirror(t, 128, kgs)
			m.b.maxEntries = overlay
			r := rand.New(rand.NewPCG(1, uint64(overlay)))
			var keys []string
			for i := 0; len(keys) < 2000; i++ {
				k := fmt.Sprintf("c-%d", i)
				if kgs.Contains(KeyGroupFor(k, 128)) {
					keys = append(keys, k)
				}
			}
			for round := range 5 {
				for range 3000 {
					key := keys[r.IntN(len(keys))]
					state, sub := "v", ""
					if r.IntN(3) == 0 {
						state, sub = "m", fmt.Sprintf("s%d", r.IntN(5))
					}
					if r.IntN(4) == 0 {
						m.del(key, state, sub)
					} else {
						m.put(key, state, sub, fmt.Appendf(nil, "%d", r.Int64()))
					}
				}
				if m.h.Len() != m.b.Len() {
					t.Fatalf("round %d: Len heap %d badger %d", round, m.h.Len(), m.b.Len())
				}
				hb, bb := encode(t, m.h.Snapshot()), encode(t, m.b.Snapshot())
				if len(hb) != len(bb) || !reflect.DeepEqual(decodeAll(t, hb), decodeAll(t, bb)) {
					t.Fatalf("round %d: badger snapshot (%d bytes) differs from heap's (%d bytes)", round, len(bb), len(hb))
				}
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		m := newMirror(t, 128, RangeFor(128, 1, 0))
		if hb, bb := encode(t, m.h.Snapshot()), encode(t, m.b.Snapshot()); !sameState(t, hb, bb) {
			t.Fatalf("empty: heap %q badger %q", hb, bb)
		}
	})
}

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

func TestBadgerEncodeWhileWriting(t *testing.T) {
	for _, incremental := range []bool{false, true} {
		t.Run(fmt.Sprintf("incremental=%v", incremental), func(t *testing.T) {
			m := newMirror(t, 128, RangeFor(128, 1, 0))
			m.b.maxEntries = 256
			r := rand.New(rand.NewPCG(5, 6))
			m.randomOps(r, 20000, 5000)
			base := encode(t, m.b.Snapshot())
			_ = m.h.Snapshot()
			m.randomOps(r, 3000, 5000)

			var s Snapshot
			if incremental {
				s = m.b.SnapshotIncremental()
			} else {
				s = m.b.Snapshot()
			}
			want := encode(t, m.h.Snapshot())
			type result struct {
				b   []byte
				err error
			}
			done := make(chan result)
			go func() {
				b, err := s.Encode()
				done <- result{b, err}
			}()
			// The task goroutine writes on: overwrites, deletes, new keys.
			for i := 0; ; i++ {
				m.randomOps(r, 100, 6000)
				if i >= 20 {
					select {
					case res := <-done:
						if res.err != nil {
							t.Fatal(res.err)
						}
						got := res.b
						if incremental {
							if got, res.err = ComposeKeyed([][]byte{base, got}); res.err != nil {
								t.Fatal(res.err)
							}
						}
						if !sameState(t, got, want) {
							t.Fatal("snapshot shows writes made after it was taken")
						}
						return
					default:
					}
				}
			}
		})
	}
}

func TestBadgerLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keyed")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "left-over"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := NewBadger(dir, 128, RangeFor(128, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "left-over")); !os.IsNotExist(err) {
		t.Fatalf("NewBadger did not empty its directory: %v", err)
	}
	if _, err := NewBadger(dir, 128, RangeFor(128, 1, 0)); !errors.Is(err, ErrBackendDirInUse) {
		t.Fatalf("second backend on the same directory: %v, want ErrBackendDirInUse", err)
	}
	b.SetCurrentKey("c-1")
	b.Put("v", "", []byte("1"))

	s := b.Snapshot().(*BadgerSnapshot)
	if _, err := s.Encode(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Encode(); !errors.Is(err, ErrSnapshotReleased) {
		t.Fatalf("second Encode: %v, want ErrSnapshotReleased", err)
	}
	d := b.Snapshot().(*BadgerSnapshot)
	d.Discard()
	if _, err := d.Encode(); !errors.Is(err, ErrSnapshotReleased) {
		t.Fatalf("Encode after Discard: %v, want ErrSnapshotReleased", err)
	}

	// A snapshot dropped without Encode is released once it is garbage.
	func() { _ = b.Snapshot() }()
	views := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.views)
	}
	for i := 0; views() > 0; i++ {
		if i == 500 {
			t.Fatalf("%d dropped snapshots still hold their transaction", views())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}

	// Close with a snapshot not yet encoded: Close works, Encode then fails.
	late := b.Snapshot()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Close left its directory: %v", err)
	}
	if _, err := late.Encode(); !errors.Is(err, ErrBackendClosed) {
		t.Fatalf("Encode after Close: %v, want ErrBackendClosed", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// The directory is free again.
	b2, err := NewBadger(dir, 128, RangeFor(128, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if b2.Len() != 0 {
		t.Fatalf("new backend holds %d entries of the old one", b2.Len())
	}
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestBadgerCloseDuringEncode(t *testing.T) {
	kgs := RangeFor(128, 1, 0)
	// 50,000 keys, written in one restore (a Put at a time is ten times
	// slower under -race): an encode that takes a while.
	h := NewHeap(128, kgs)
	for i := range 50000 {
		h.SetCurrentKey(fmt.Sprintf("c-%d", i))
		h.Put("v", "", []byte("some value"))
	}
	b := openBadger(t, 128, kgs)
	if err := b.Restore([][]byte{encode(t, h.Snapshot())}); err != nil || b.Len() != 50000 {
		t.Fatalf("restore: %v, %d keys", err, b.Len())
	}
	s := b.Snapshot()
	done := make(chan error)
	go func() {
		_, err := s.Encode()
		done <- err
	}()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Either it finished first or it was cut short; it must not crash.
	if err := <-done; err != nil && !errors.Is(err, ErrBackendClosed) {
		t.Fatal(err)
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

// sameState reports whether two encoded keyed snapshots hold the same
// entries (the heap writes a key group's entries in any order).
func sameState(t *testing.T, a, b []byte) bool {
	t.Helper()
	return len(a) == len(b) && reflect.DeepEqual(decodeAll(t, a), decodeAll(t, b))
}

// decodeAll is every entry of an encoded keyed snapshot, by key group and
// key: what two snapshots of the same state share whatever their order
// within a key group.
func decodeAll(t *testing.T, b []byte) map[int]map[string]string {
	t.Helper()
	out := map[int]map[string]string{}
	if err := DecodeKeyed(b, func(kg int, k string, v []byte) {
		if out[kg] == nil {
			out[kg] = map[string]string{}
		}
		out[kg][k] = string(v)
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// ScanKeys visits a state's entries under every key of every key group the
// backend owns, flushed or not, and nothing of other states; the callback
// may delete what it visits, and the current key is the one before after.
func TestBackendsScanKeys(t *testing.T) {
	for _, kind := range backendKinds {
		t.Run(kind.name, func(t *testing.T) {
			kb := kind.open(t, 128, RangeFor(128, 2, 1))
			a := NewValue[int64](kb, "a", Int64Codec{})
			ab := NewValue[int64](kb, "ab", Int64Codec{}) // a name a prefix of another must not match
			m := NewMap[int64](kb, "a2", Int64Codec{})
			want := map[string]int64{}
			var mine []string
			for i := 0; len(mine) < 300; i++ {
				k := fmt.Sprintf("o-%06d", i)
				if !kb.KeyGroups().Contains(KeyGroupFor(k, 128)) {
					continue
				}
				mine = append(mine, k)
				kb.SetCurrentKey(k)
				a.Update(int64(i))
				ab.Update(-1)
				m.Put("x", -1)
				want[k] = int64(i)
			}
			kb.SetCurrentKey(mine[0])
			got := map[string]int64{}
			kb.(KeyScanner).ScanKeys("a", func(key, sub string, v []byte) bool {
				n, err := Int64Codec{}.Decode(v)
				if err != nil || sub != "" {
					t.Fatalf("entry %q/%q = %v, %v", key, sub, v, err)
				}
				got[key] = n
				if n%2 == 0 {
					kb.SetCurrentKey(key)
					a.Clear()
				}
				return true
			})
			if len(got) != len(want) {
				t.Fatalf("visited %d entries of a, want %d", len(got), len(want))
			}
			for k, v := range want {
				if got[k] != v {
					t.Fatalf("%s = %d, want %d", k, got[k], v)
				}
			}
			if kb.CurrentKey() != mine[0] {
				t.Fatalf("current key %q after ScanKeys, want %q", kb.CurrentKey(), mine[0])
			}
			odd := 0
			for _, v := range want {
				odd += int(v % 2)
			}
			left := 0
			kb.(KeyScanner).ScanKeys("a", func(string, string, []byte) bool { left++; return true })
			if left != odd {
				t.Fatalf("%d entries of a left after deleting the even ones, want %d", left, odd)
			}
		})
	}
}
