package backend

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestKeyGroupRangesCoverEveryGroupOnce(t *testing.T) {
	for _, maxP := range []int{1, 7, 128, 1000} {
		for p := 1; p <= maxP && p <= 17; p++ {
			owner := make([]int, maxP)
			for i := range owner {
				owner[i] = -1
			}
			for idx := 0; idx < p; idx++ {
				r := RangeFor(maxP, p, idx)
				for kg := r.Start; kg <= r.End; kg++ {
					if owner[kg] != -1 {
						t.Fatalf("maxP %d p %d: kg %d owned twice", maxP, p, kg)
					}
					owner[kg] = idx
					if got := OperatorIndexFor(kg, maxP, p); got != idx {
						t.Fatalf("maxP %d p %d: kg %d in range of %d but OperatorIndexFor says %d", maxP, p, kg, idx, got)
					}
				}
			}
			for kg, o := range owner {
				if o == -1 {
					t.Fatalf("maxP %d p %d: kg %d unowned", maxP, p, kg)
				}
			}
		}
	}
}

func TestKeyGroupForIsStableAndSpread(t *testing.T) {
	// Fixed values: state written by one process must be found by the next.
	if got := KeyGroupFor("o-000123", 128); got != 124 {
		t.Fatalf("KeyGroupFor(o-000123) = %d, want 124 (the hash changed: old checkpoints would restore wrongly)", got)
	}
	if got := KeyGroupFor("c-17", 128); got != 90 {
		t.Fatalf("KeyGroupFor(c-17) = %d, want 90", got)
	}
	counts := make([]int, 128)
	for i := 0; i < 12800; i++ {
		counts[KeyGroupFor(fmt.Sprintf("o-%06d", i), 128)]++
	}
	for kg, c := range counts {
		if c < 50 || c > 150 {
			t.Fatalf("key group %d got %d of 12800 keys; hash is badly spread", kg, c)
		}
	}
}

func fill(h *Heap, keys []string) {
	for _, k := range keys {
		var i int
		fmt.Sscanf(k, "c-%d", &i)
		h.SetCurrentKey(k)
		NewValue[int64](h, "total", Int64Codec{}).Update(int64(i))
		NewList[int64](h, "seen", Int64Codec{}).Add(int64(i))
		NewList[int64](h, "seen", Int64Codec{}).Add(int64(i * 2))
		m := NewMap[int64](h, "m", Int64Codec{})
		m.Put("a", 1)
		m.Put("b", 2)
	}
}

func TestHeapSnapshotIsFrozenAndRestoresAcrossParallelism(t *testing.T) {
	const maxP = 128
	var keys []string
	for i := 0; i < 500; i++ {
		keys = append(keys, fmt.Sprintf("c-%d", i))
	}
	// Old job: parallelism 2.
	var blobs [][]byte
	for idx := 0; idx < 2; idx++ {
		h := NewHeap(maxP, RangeFor(maxP, 2, idx))
		var mine []string
		for _, k := range keys {
			if OperatorIndexFor(KeyGroupFor(k, maxP), maxP, 2) == idx {
				mine = append(mine, k)
			}
		}
		fill(h, mine)
		snap := h.Snapshot()
		// Writes after the snapshot must not show in it.
		for _, k := range mine {
			h.SetCurrentKey(k)
			NewValue[int64](h, "total", Int64Codec{}).Update(-1)
			NewMap[int64](h, "m", Int64Codec{}).Remove("a")
		}
		b, err := snap.Encode()
		if err != nil {
			t.Fatal(err)
		}
		blobs = append(blobs, (&SubtaskState{Keyed: b}).Encode())
	}
	// New job: parallelism 3, every subtask restores from both blobs.
	seen := 0
	for idx := 0; idx < 3; idx++ {
		h := NewHeap(maxP, RangeFor(maxP, 3, idx))
		var keyed [][]byte
		for _, b := range blobs {
			s, err := DecodeSubtaskState(b)
			if err != nil {
				t.Fatal(err)
			}
			keyed = append(keyed, s.Keyed)
		}
		if err := h.Restore(keyed); err != nil {
			t.Fatal(err)
		}
		for i, k := range keys {
			if OperatorIndexFor(KeyGroupFor(k, maxP), maxP, 3) != idx {
				continue
			}
			seen++
			h.SetCurrentKey(k)
			v, ok, err := NewValue[int64](h, "total", Int64Codec{}).Get()
			if err != nil || !ok || v != int64(i) {
				t.Fatalf("key %s: total = %d %v %v, want %d", k, v, ok, err, i)
			}
			l, err := NewList[int64](h, "seen", Int64Codec{}).Get()
			if err != nil || len(l) != 2 || l[0] != int64(i) || l[1] != int64(2*i) {
				t.Fatalf("key %s: list = %v %v", k, l, err)
			}
			got := map[string]int64{}
			NewMap[int64](h, "m", Int64Codec{}).Range(func(k string, v int64) bool { got[k] = v; return true })
			if len(got) != 2 || got["a"] != 1 || got["b"] != 2 {
				t.Fatalf("key %s: map = %v", k, got)
			}
		}
	}
	if seen != len(keys) {
		t.Fatalf("restored %d keys, want %d", seen, len(keys))
	}
}

func TestDecodeRejectsDamage(t *testing.T) {
	h := NewHeap(128, RangeFor(128, 1, 0))
	fill(h, []string{"c-1", "c-2"})
	b, _ := h.Snapshot().Encode()
	full := (&SubtaskState{Keyed: b, Operator: map[string][]byte{"offsets": {1, 2}}}).Encode()
	if _, err := DecodeSubtaskState(full[:len(full)-1]); err == nil {
		t.Fatal("truncated state decoded without error")
	}
	if err := DecodeKeyed(b[:len(b)-2], func(int, string, []byte) {}); err == nil {
		t.Fatal("truncated keyed state decoded without error")
	}
	s, err := DecodeSubtaskState(full)
	if err != nil || string(s.Operator["offsets"]) != "\x01\x02" {
		t.Fatalf("round trip: %v %v", s, err)
	}
}

// heapContents decodes an encoded heap snapshot into composite key → value.
// takenSnapshot is a snapshot and what it must hold.
type takenSnapshot struct {
	snap Snapshot
	want map[string]string
}

// checkSnapshots encodes each snapshot, long after it was taken, and
// compares it with what it must hold: at least 100 of them.
func checkSnapshots(t *testing.T, snaps []takenSnapshot) {
	t.Helper()
	if len(snaps) < 100 {
		t.Fatalf("only %d snapshots taken", len(snaps))
	}
	for i, s := range snaps {
		b, err := s.snap.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if got := heapContents(t, b); !maps.Equal(got, s.want) {
			t.Fatalf("snapshot %d: %d entries, want %d (a later write reached it)", i, len(got), len(s.want))
		}
	}
}

func heapContents(t *testing.T, b []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	if err := DecodeKeyed(b, func(_ int, k string, v []byte) {
		if _, dup := out[k]; dup {
			t.Fatalf("entry %q written twice", k)
		}
		out[k] = string(v)
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// Random puts and deletes over a few keys, with many map-state sub keys,
// and snapshots in between: each snapshot,
// encoded only at the end, holds exactly the state of its moment, and the
// live state matches a plain map throughout.
func TestHeapCopyOnWriteAgainstModel(t *testing.T) {
	const maxP = 128
	h := NewHeap(maxP, RangeFor(maxP, 1, 0))
	model := map[string]string{} // composite key → value
	var snaps []takenSnapshot
	r := rand.New(rand.NewPCG(1, 2))
	for op := 0; op < 20000; op++ {
		key := fmt.Sprintf("k-%d", r.IntN(6))
		state, sub := "v", ""
		if r.IntN(2) == 0 {
			state, sub = "m", fmt.Sprintf("s%d", r.IntN(24))
		}
		ck := string(appendEntryKey(nil, state, key, sub))
		h.SetCurrentKey(key)
		switch x := r.IntN(10); {
		case x < 5:
			v := fmt.Sprint(op)
			h.Put(state, sub, []byte(v))
			model[ck] = v
		case x < 8:
			h.Delete(state, sub)
			delete(model, ck)
		case x < 9:
			got, ok := h.Get(state, sub)
			want, wok := model[ck]
			if ok != wok || string(got) != want {
				t.Fatalf("op %d: Get(%s %s %s) = %q %v, want %q %v", op, key, state, sub, got, ok, want, wok)
			}
		default:
			snaps = append(snaps, takenSnapshot{h.Snapshot(), maps.Clone(model)})
		}
		if h.Len() != len(model) {
			t.Fatalf("op %d: Len = %d, want %d", op, h.Len(), len(model))
		}
	}
	checkSnapshots(t, snaps)
	// Scan sees every sub key of a state under the current key.
	h.SetCurrentKey("k-1")
	subs := map[string]string{}
	h.Scan("m", func(sub string, v []byte) bool { subs[sub] = string(v); return true })
	for sub, v := range subs {
		if want := model[string(appendEntryKey(nil, "m", "k-1", sub))]; v != want {
			t.Fatalf("Scan: sub %s = %q, want %q", sub, v, want)
		}
	}
	n := 0
	for ck := range model {
		if strings.HasPrefix(ck, string(appendEntryKey(nil, "m", "k-1", ""))) {
			n++
		}
	}
	if len(subs) != n {
		t.Fatalf("Scan saw %d sub keys, want %d", len(subs), n)
	}
	// A restored heap holds the same.
	b, _ := h.Snapshot().Encode()
	h2 := NewHeap(maxP, RangeFor(maxP, 1, 0))
	if err := h2.Restore([][]byte{b}); err != nil {
		t.Fatal(err)
	}
	b2, _ := h2.Snapshot().Encode()
	if got := heapContents(t, b2); !maps.Equal(got, model) || h2.Len() != len(model) {
		t.Fatalf("restored: %d entries (Len %d), want %d", len(got), h2.Len(), len(model))
	}
}

// A snapshot is encoded on another goroutine while the task writes on (run
// with -race): the encoding holds the state of the snapshot's moment.
func TestHeapEncodeWhileWriting(t *testing.T) {
	h := NewHeap(128, RangeFor(128, 1, 0))
	keys := make([]string, 2000)
	for i := range keys {
		keys[i] = fmt.Sprintf("o-%d", i)
		h.SetCurrentKey(keys[i])
		h.Put("order", "", []byte("before"))
	}
	for round := 0; round < 5; round++ {
		snap := h.Snapshot()
		done := make(chan map[string]string)
		go func() {
			b, err := snap.Encode()
			if err != nil {
				t.Error(err)
			}
			done <- heapContents(t, b)
		}()
		for _, k := range keys {
			h.SetCurrentKey(k)
			h.Put("order", "", []byte("after"))
			h.Put("payment", "", []byte("new"))
			h.Delete("payment", "")
		}
		got := <-done
		want := "before"
		if round > 0 {
			want = "after"
		}
		for ck, v := range got {
			if v != want {
				t.Fatalf("round %d: %q = %q, want %q", round, ck, v, want)
			}
		}
		if len(got) != len(keys) {
			t.Fatalf("round %d: %d entries, want %d", round, len(got), len(keys))
		}
	}
}

// A key group handed in with a key must be the key's: with the race
// detector (make test) both backends check it, so that a routing bug that
// would file state where no lookup finds it fails the tests.
func TestKeyGroupHandedInIsChecked(t *testing.T) {
	if !verifyKeyGroups {
		t.Skip("the check runs in builds with the race detector (make test)")
	}
	const maxP = 128
	kgs := KeyGroupRange{Start: 0, End: maxP - 1}
	b, err := NewBadger(t.TempDir(), maxP, kgs)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for name, g := range map[string]GroupedKeys{"heap": NewHeap(maxP, kgs), "badger": b} {
		kg := KeyGroupFor("o-1", maxP)
		g.SetCurrentKeyInGroup("o-1", kg) // the right one
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: a wrong key group was taken", name)
				}
			}()
			g.SetCurrentKeyInGroup("o-1", (kg+1)%maxP)
		}()
	}
}

// Parts is Encode in pieces, sharing the keyed snapshot and large operator
// entries instead of copying them.
func TestSubtaskStatePartsShareLargeValues(t *testing.T) {
	keyed := bytes.Repeat([]byte("k"), 2*sharedPart)
	redo := bytes.Repeat([]byte("r"), sharedPart)
	s := &SubtaskState{Keyed: keyed, Operator: map[string][]byte{"offsets": {1, 2}, "redo/0": redo, "empty": nil}}
	parts := s.Parts()
	shared := 0
	for _, p := range parts {
		if len(p) > 0 && (&p[0] == &keyed[0] || &p[0] == &redo[0]) {
			shared++
		}
	}
	if shared != 2 {
		t.Fatalf("%d of the two large values shared, in %d parts", shared, len(parts))
	}
	got, err := DecodeSubtaskState(bytes.Join(parts, nil))
	if err != nil || !bytes.Equal(got.Keyed, keyed) || !bytes.Equal(got.Operator["redo/0"], redo) ||
		string(got.Operator["offsets"]) != "\x01\x02" || len(got.Operator) != 3 {
		t.Fatalf("round trip: %v", err)
	}
	if !bytes.Equal(s.Encode(), bytes.Join(parts, nil)) {
		t.Fatal("Encode and Parts differ")
	}
}
