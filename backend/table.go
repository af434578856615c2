package backend

import (
	"hash/maphash"
	"unsafe"
)

// table is one key group's small entries in an open-addressing hash table
// with linear probing (Flink's heap backend has its own map for the same
// reason: CopyOnWriteStateMap). Each slot is one cache line and holds its
// entry's composite key and value inline, so a lookup costs one memory
// access where a Go map of strings costs three (the control word, the slot,
// the key's bytes), and the slot's address is known from the key alone, so
// the task can prefetch it a few records ahead (Heap.Prefetch). An entry's
// home slot comes from the hash of its user key (and its sub key, for map
// state), so all the value states of one key sit next to each other: the
// join's order and payment of one order id share a cache line.
//
// The slots hold no pointers, so the garbage collector does not scan them.
// Entries too large for a slot live in the group's map instead (heapGroup).
type table struct {
	slots []slot
	n     int
	mask  uint64
}

// slotData is the room for an entry's composite key and value together.
const slotData = 54

type slot struct {
	h    uint64 // the entry's hash (entryHash, never 0); 0 marks an empty slot
	klen uint8
	vlen uint8
	data [slotData]byte // composite key, then value
}

// fitsSlot reports whether an entry is small enough for a slot.
func fitsSlot(klen, vlen int) bool { return klen+vlen <= slotData }

var tableSeed = maphash.MakeSeed()

// entryHash is the hash that places entry (key, sub): of the user key alone
// for value and list state, so that the states of one key share a probe
// run, and of both for map state, so that a key with many map entries does
// not make one long run. The seed is the process's: tables never leave it.
func entryHash(keyHash uint64, sub string) uint64 {
	h := keyHash
	if sub != "" {
		h ^= maphash.String(tableSeed, sub) * 0x9E3779B97F4A7C15
	}
	return h | 1<<63 // never 0, and the bits that pick the slot stay as they are
}

func keyHash(key string) uint64 { return maphash.String(tableSeed, key) }

// minSlots is a new table's size.
const minSlots = 8

func newTable() *table { return &table{slots: make([]slot, minSlots), mask: minSlots - 1} }

func (s *slot) key() []byte   { return s.data[:s.klen] }
func (s *slot) value() []byte { return s.data[s.klen : s.klen+s.vlen : s.klen+s.vlen] }

// find returns the index of the slot holding ck, or of the empty slot that
// ends its run.
func (t *table) find(h uint64, ck []byte) (uint64, bool) {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.h == 0 {
			return i, false
		}
		if s.h == h && string(s.key()) == string(ck) {
			return i, true
		}
	}
}

// prefetchRun prefetches h's first slot and the one after it: a lookup
// that finds its entry at home still reads the next slot when it deletes
// it (the backward shift) or probes on past a collision, and with 64-byte
// slots that is another cache line.
func (t *table) prefetchRun(h uint64) {
	i := h & t.mask
	prefetch2(unsafe.Pointer(&t.slots[i]), unsafe.Pointer(&t.slots[(i+1)&t.mask]))
}

// get returns ck's value, which aliases the slot: valid until the next
// write to the table.
func (t *table) get(h uint64, ck []byte) ([]byte, bool) {
	i, ok := t.find(h, ck)
	if !ok {
		return nil, false
	}
	return t.slots[i].value(), true
}

// put stores ck → v (fitsSlot must hold) and reports whether ck is new.
func (t *table) put(h uint64, ck, v []byte) bool {
	// At most half full: misses (half the join's lookups) end soon.
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	i, ok := t.find(h, ck)
	s := &t.slots[i]
	if !ok {
		t.n++
		s.h = h
	}
	s.klen, s.vlen = uint8(len(ck)), uint8(len(v))
	copy(s.data[copy(s.data[:], ck):], v)
	return !ok
}

// reserve makes room for n more entries without growing.
func (t *table) reserve(n int) {
	size := len(t.slots)
	for 2*(t.n+n) > size {
		size *= 2
	}
	if size > len(t.slots) {
		t.resize(size)
	}
}

func (t *table) grow() { t.resize(2 * len(t.slots)) }

func (t *table) resize(size int) {
	old := t.slots
	t.slots = make([]slot, size)
	t.mask = uint64(len(t.slots) - 1)
	for j := range old {
		if old[j].h == 0 {
			continue
		}
		i := old[j].h & t.mask
		for t.slots[i].h != 0 {
			i = (i + 1) & t.mask
		}
		t.slots[i] = old[j]
	}
}

// del removes ck and reports whether it was there. The entries after it in
// its run move back (backward-shift deletion), so no tombstones build up.
func (t *table) del(h uint64, ck []byte) bool {
	hole, ok := t.find(h, ck)
	if !ok {
		return false
	}
	t.n--
	for j := (hole + 1) & t.mask; t.slots[j].h != 0; j = (j + 1) & t.mask {
		// The entry at j may fill the hole if its home is not in the
		// cyclic range (hole, j].
		if home := t.slots[j].h & t.mask; (j-home)&t.mask >= (j-hole)&t.mask {
			t.slots[hole] = t.slots[j]
			hole = j
		}
	}
	t.slots[hole] = slot{}
	return true
}

// clone is a copy that shares nothing with t.
func (t *table) clone() *table {
	c := &table{slots: make([]slot, len(t.slots)), n: t.n, mask: t.mask}
	copy(c.slots, t.slots)
	return c
}

// each calls f for every entry, in slot order.
func (t *table) each(f func(ck, v []byte)) {
	for i := range t.slots {
		if s := &t.slots[i]; s.h != 0 {
			f(s.key(), s.value())
		}
	}
}
