package backend

import (
	"fmt"
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
