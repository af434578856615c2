package backend

import (
	"fmt"
	"slices"
	"testing"
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
