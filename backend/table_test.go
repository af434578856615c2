package backend

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
)

// Deleting from a run that wraps around the end of the slots moves the
// right entries back: every order of inserting and deleting five entries
// whose homes are the last two slots and the first, in a table of eight,
// leaves each remaining entry findable and the count right.
func TestTableDeleteAcrossTheWrap(t *testing.T) {
	homes := []uint64{6, 7, 7, 6, 0}
	for del := range homes {
		for rot := range homes {
			tb := &table{slots: make([]slot, 8), mask: 7}
			key := func(i int) []byte { return []byte{byte('a' + i)} }
			h := func(i int) uint64 { return 1<<63 | uint64(i)<<8 | homes[i] }
			for k := range homes {
				i := (k + rot) % len(homes)
				if !tb.put(h(i), key(i), []byte{byte(i)}) {
					t.Fatalf("entry %d: put says not new", i)
				}
			}
			if !tb.del(h(del), key(del)) {
				t.Fatalf("rot %d: delete of %d found nothing", rot, del)
			}
			if tb.del(h(del), key(del)) {
				t.Fatalf("rot %d: %d deleted twice", rot, del)
			}
			if tb.n != len(homes)-1 {
				t.Fatalf("rot %d: n = %d, want %d", rot, tb.n, len(homes)-1)
			}
			for i := range homes {
				v, ok := tb.get(h(i), key(i))
				if i == del {
					if ok {
						t.Fatalf("rot %d: deleted entry %d still found", rot, i)
					}
					continue
				}
				if !ok || len(v) != 1 || v[0] != byte(i) {
					t.Fatalf("rot %d, deleted %d: entry %d = %v %v", rot, del, i, v, ok)
				}
			}
		}
	}
}

// Random writes over enough keys that tables grow, wrap and shift, with
// values on both sides of the slot size (so entries move between a group's
// table and its map), map state, scans that write, prefetches and
// snapshots: the heap matches a plain map throughout, each snapshot holds
// its moment, and a restore holds the end.
func TestHeapAgainstModel(t *testing.T) {
	const maxP = 128
	kgs := RangeFor(maxP, 16, 3) // eight key groups: the tables grow
	var keys []string
	for i := 0; len(keys) < 3000; i++ {
		if k := fmt.Sprintf("o-%06d", i); kgs.Contains(KeyGroupFor(k, maxP)) {
			keys = append(keys, k)
		}
	}
	h := NewHeap(maxP, kgs)
	model := map[string]string{}
	var snaps []takenSnapshot
	r := rand.New(rand.NewPCG(3, 4))
	value := func(op int) string {
		v := fmt.Sprint(op)
		if r.IntN(4) == 0 {
			v += strings.Repeat("x", slotData) // too large for a slot
		} else if r.IntN(2) == 0 {
			v += strings.Repeat("y", r.IntN(slotData-20)) // up to a full slot
		}
		return v
	}
	for op := 0; op < 80_000; op++ {
		key := keys[r.IntN(len(keys))]
		state, sub := []string{"order", "payment"}[r.IntN(2)], ""
		if r.IntN(4) == 0 {
			state, sub = "m", fmt.Sprintf("s%d", r.IntN(8))
		}
		ck := string(appendEntryKey(nil, state, key, sub))
		ahead := keys[r.IntN(len(keys))]
		h.Prefetch(ahead, -1)
		h.Prefetch(ahead, KeyGroupFor(ahead, maxP))
		h.Prefetch("not-mine", -1)
		h.Prefetch("not-mine", KeyGroupFor("not-mine", maxP))
		if r.IntN(2) == 0 {
			h.SetCurrentKey(key)
		} else {
			h.SetCurrentKeyInGroup(key, KeyGroupFor(key, maxP)) // as a hash edge hands it in
		}
		switch x := r.IntN(100); {
		case x < 45:
			v := value(op)
			h.Put(state, sub, []byte(v))
			model[ck] = v
		case x < 80:
			h.Delete(state, sub)
			delete(model, ck)
		case x < 97:
			got, ok := h.Get(state, sub)
			want, wok := model[ck]
			if ok != wok || string(got) != want {
				t.Fatalf("op %d: Get(%s %s %s) = %q %v, want %q %v", op, key, state, sub, got, ok, want, wok)
			}
		case x < 99:
			// A scan that rewrites every sub key it sees sees each once,
			// as it was when the scan began.
			seen := map[string]bool{}
			prefix := string(appendEntryKey(nil, "m", key, ""))
			before := map[string]string{} // the key's map state
			for ck, v := range model {
				if strings.HasPrefix(ck, prefix) {
					before[ck] = v
				}
			}
			h.Scan("m", func(sub string, v []byte) bool {
				if seen[sub] {
					t.Fatalf("op %d: Scan saw %s twice", op, sub)
				}
				seen[sub] = true
				if want := before[prefix+sub]; string(v) != want {
					t.Fatalf("op %d: Scan: %s = %q, want %q", op, sub, v, want)
				}
				nv := value(op)
				h.Put("m", sub, []byte(nv))
				model[prefix+sub] = nv
				other := fmt.Sprintf("s%d", r.IntN(12)) // perhaps one the scan has yet to see
				h.Put("m", other, []byte(nv))
				model[prefix+other] = nv
				return true
			})
			for ck := range before {
				if s := strings.TrimPrefix(ck, prefix); !seen[s] {
					t.Fatalf("op %d: Scan missed %s", op, s)
				}
			}
		default:
			if r.IntN(6) == 0 { // about 130 snapshots
				snaps = append(snaps, takenSnapshot{h.Snapshot(), maps.Clone(model)})
			}
		}
		if h.Len() != len(model) {
			t.Fatalf("op %d: Len = %d, want %d", op, h.Len(), len(model))
		}
	}
	checkSnapshots(t, snaps)
	b, _ := h.Snapshot().Encode()
	h2 := NewHeap(maxP, kgs)
	if err := h2.Restore([][]byte{b}); err != nil {
		t.Fatal(err)
	}
	if h2.Len() != len(model) {
		t.Fatalf("restored: Len %d, want %d", h2.Len(), len(model))
	}
	for ck, want := range model {
		key, sub, ok := splitEntryKey([]byte(ck))
		if !ok {
			t.Fatalf("bad composite key %q", ck)
		}
		state := ck[1 : 1+int(ck[0])]
		h2.SetCurrentKey(string(key))
		if got, ok := h2.Get(state, string(sub)); !ok || string(got) != want {
			t.Fatalf("restored: Get(%s %s %s) = %q %v, want %q", key, state, sub, got, ok, want)
		}
	}
}
