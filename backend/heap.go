package backend

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"
)

// Heap is the in-memory keyed state backend (Flink: HashMapStateBackend):
// state lives in memory, one hash table per key group, and a snapshot is a
// full copy. The synchronous part of a snapshot only marks the key groups
// shared; the first write to a shared group copies it (copy on write), so
// the task never waits for the copy of state it does not touch.
type Heap struct {
	kgs        KeyGroupRange
	maxPar     int
	groups     []heapGroup
	currentKey string
	currentKG  int
	currentH   uint64 // keyHash(currentKey)
	buf        []byte
	n          int
	abandoned  atomic.Bool // Abandon: snapshots being encoded stop early
}

// Abandon tells the backend it is going away (its subtask is being torn
// down): snapshots being encoded stop early with ErrBackendClosed, so that
// a failover does not wait for them.
func (h *Heap) Abandon() { h.abandoned.Store(true) }

var _ Abandoner = (*Heap)(nil)

// heapGroup is one key group's entries, each in one of two places: a table
// of small entries stored inline (all of the default job's), and a map from
// composite key to value for entries too large for a slot, whose key and
// value share one allocation.
type heapGroup struct {
	t      *table
	big    map[string]string
	shared bool // a snapshot holds t and big: copy them before a write
}

// NewHeap returns an empty heap backend for the given key groups.
func NewHeap(maxParallelism int, kgs KeyGroupRange) *Heap {
	h := &Heap{kgs: kgs, maxPar: maxParallelism, groups: make([]heapGroup, kgs.Len())}
	for i := range h.groups {
		h.groups[i] = heapGroup{t: newTable(), big: map[string]string{}}
	}
	return h
}

// KeyGroups implements KeyedBackend.
func (h *Heap) KeyGroups() KeyGroupRange { return h.kgs }

// SetCurrentKey implements KeyedBackend. A key outside the subtask's key
// groups is a routing bug and panics.
func (h *Heap) SetCurrentKey(key string) { h.setCurrent(key, KeyGroupFor(key, h.maxPar)) }

// SetCurrentKeyInGroup implements GroupedKeys.
func (h *Heap) SetCurrentKeyInGroup(key string, kg int) {
	checkKeyGroup(key, kg, h.maxPar)
	h.setCurrent(key, kg)
}

func (h *Heap) setCurrent(key string, kg int) {
	h.currentKey = key
	h.currentKG = kg
	if !h.kgs.Contains(h.currentKG) {
		panic(fmt.Sprintf("key %q is in key group %d, outside this subtask's %s", key, h.currentKG, h.kgs))
	}
	h.currentH = keyHash(key)
}

// CurrentKey implements KeyedBackend.
func (h *Heap) CurrentKey() string { return h.currentKey }

// Prefetch implements Prefetcher: it starts loading the slot where key's
// value states are found, so that a lookup a few records later finds it in
// the cache. A key outside the subtask's key groups is ignored here
// (SetCurrentKey reports it).
func (h *Heap) Prefetch(key string, kg int) {
	if kg < 0 {
		kg = KeyGroupFor(key, h.maxPar)
	}
	if !h.kgs.Contains(kg) {
		return
	}
	h.groups[kg-h.kgs.Start].t.prefetchRun(entryHash(keyHash(key), ""))
}

// appendEntryKey appends the composite key (state, key, sub) of an entry.
func appendEntryKey(dst []byte, state, key, sub string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(state)))
	dst = append(dst, state...)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	return append(dst, sub...)
}

// splitEntryKey returns the key and sub key of composite key ck; they
// alias ck.
func splitEntryKey(ck []byte) (key, sub []byte, ok bool) {
	l, n := binary.Uvarint(ck)
	if n <= 0 || uint64(len(ck)-n) < l {
		return nil, nil, false
	}
	ck = ck[n+int(l):]
	l, n = binary.Uvarint(ck)
	if n <= 0 || uint64(len(ck)-n) < l {
		return nil, nil, false
	}
	return ck[n : n+int(l)], ck[n+int(l):], true
}

func (h *Heap) group() *heapGroup { return &h.groups[h.currentKG-h.kgs.Start] }

// writable returns g, first copying what a snapshot shares.
func (g *heapGroup) writable() *heapGroup {
	if g.shared {
		g.t = g.t.clone()
		g.big = maps.Clone(g.big)
		g.shared = false
	}
	return g
}

// Get implements KeyedBackend.
func (h *Heap) Get(state, sub string) ([]byte, bool) {
	h.buf = appendEntryKey(h.buf[:0], state, h.currentKey, sub)
	g := h.group()
	if v, ok := g.t.get(entryHash(h.currentH, sub), h.buf); ok {
		return v, true
	}
	if len(g.big) == 0 {
		return nil, false
	}
	v, ok := g.big[string(h.buf)]
	return stringBytes(v), ok
}

// stringBytes is the bytes of s, which the caller must not change.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// Put implements KeyedBackend: it copies value.
func (h *Heap) Put(state, sub string, value []byte) {
	h.buf = appendEntryKey(h.buf[:0], state, h.currentKey, sub)
	h.n += h.group().put(entryHash(h.currentH, sub), h.buf, value)
}

// put stores ck → value in g and returns the change in its entry count.
func (g *heapGroup) put(eh uint64, ck, value []byte) int {
	g.writable()
	if fitsSlot(len(ck), len(value)) {
		n := 0
		if len(g.big) > 0 {
			// It may have been large before.
			before := len(g.big)
			delete(g.big, string(ck))
			n -= before - len(g.big)
		}
		if g.t.put(eh, ck, value) {
			n++
		}
		return n
	}
	n := 0
	if g.t.del(eh, ck) {
		n--
	}
	// The key and the value in one allocation that nothing changes later.
	kv := make([]byte, len(ck)+len(value))
	copy(kv, ck)
	copy(kv[len(ck):], value)
	k := unsafe.String(unsafe.SliceData(kv), len(ck))
	v := unsafe.String(unsafe.SliceData(kv[len(ck):]), len(value))
	before := len(g.big)
	g.big[k] = v // one lookup: the map's length tells if it was new (the map takes the new key too, so the old allocation goes)
	return n + len(g.big) - before
}

// Delete implements KeyedBackend.
func (h *Heap) Delete(state, sub string) {
	h.buf = appendEntryKey(h.buf[:0], state, h.currentKey, sub)
	g := h.group()
	eh := entryHash(h.currentH, sub)
	if g.shared {
		// Copy the group only when there is something to delete.
		if _, ok := g.t.get(eh, h.buf); !ok {
			if _, ok := g.big[string(h.buf)]; !ok {
				return
			}
		}
	}
	g.writable()
	if g.t.del(eh, h.buf) {
		h.n--
		return
	}
	before := len(g.big)
	delete(g.big, string(h.buf))
	h.n -= before - len(g.big)
}

// Scan implements KeyedBackend. f may write to the state, which moves
// entries within a table, so Scan first collects what it will pass to f.
func (h *Heap) Scan(state string, f func(sub string, value []byte) bool) {
	prefixB := appendEntryKey(nil, state, h.currentKey, "")
	prefix := string(prefixB)
	g := h.group()
	type entry struct {
		sub   string
		value []byte
	}
	var found []entry
	g.t.each(func(ck, v []byte) {
		if bytes.HasPrefix(ck, prefixB) {
			found = append(found, entry{string(ck[len(prefix):]), slices.Clone(v)})
		}
	})
	for k, v := range g.big {
		if strings.HasPrefix(k, prefix) {
			found = append(found, entry{k[len(prefix):], stringBytes(v)}) // nothing changes a map's values
		}
	}
	for _, e := range found {
		if !f(e.sub, e.value) {
			return
		}
	}
}

// ScanKeys implements KeyScanner: it collects the state's entries of every
// key group, then calls f.
func (h *Heap) ScanKeys(state string, f func(key, sub string, value []byte) bool) {
	prefix := statePrefix(state)
	var found []keyedEntry
	add := func(ck, v []byte) {
		if !bytes.HasPrefix(ck, prefix) {
			return
		}
		if k, s, ok := splitEntryKey(ck); ok {
			found = append(found, keyedEntry{string(k), string(s), slices.Clone(v)})
		}
	}
	for i := range h.groups {
		g := &h.groups[i]
		g.t.each(add)
		for k, v := range g.big {
			add(stringBytes(k), stringBytes(v))
		}
	}
	key, kg, hash := h.currentKey, h.currentKG, h.currentH
	defer func() { h.currentKey, h.currentKG, h.currentH = key, kg, hash }()
	for _, e := range found {
		if !f(e.key, e.sub, e.value) {
			return
		}
	}
}

// Len implements KeyedBackend.
func (h *Heap) Len() int { return h.n }

// Snapshot implements KeyedBackend: O(key groups), copy on write after.
func (h *Heap) Snapshot() Snapshot {
	s := &heapSnapshot{h: h, start: h.kgs.Start, n: h.n, groups: make([]heapGroup, len(h.groups))}
	for i := range h.groups {
		h.groups[i].shared = true
		s.groups[i] = h.groups[i]
	}
	return s
}

// Restore implements KeyedBackend. Each table is sized for its key group
// first, so that a restore does not grow it step by step.
func (h *Heap) Restore(keyed [][]byte) error {
	for _, b := range keyed {
		var bad error
		err := decodeKeyed(b, func(kg, n int) {
			if h.kgs.Contains(kg) {
				h.groups[kg-h.kgs.Start].writable().t.reserve(n)
			}
		}, func(kg int, k, v []byte) {
			if !h.kgs.Contains(kg) || bad != nil {
				return
			}
			key, sub, ok := splitEntryKey(k)
			if !ok {
				bad = fmt.Errorf("keyed state: %w (bad entry key in key group %d)", ErrCorrupt, kg)
				return
			}
			eh := entryHash(keyHash(unsafe.String(unsafe.SliceData(key), len(key))), unsafe.String(unsafe.SliceData(sub), len(sub)))
			h.n += h.groups[kg-h.kgs.Start].put(eh, k, v)
		})
		if err == nil {
			err = bad
		}
		if err != nil {
			return err
		}
	}
	return nil
}

type heapSnapshot struct {
	h      *Heap
	start  int
	n      int // entries
	groups []heapGroup
}

// heapEntryGuess is about what an entry of the default job's state takes
// encoded: the encoding starts that large, not grown from nothing.
const heapEntryGuess = 56

func (s *heapSnapshot) Encode() ([]byte, error) {
	w := NewKeyedWriter()
	w.b = slices.Grow(w.b, s.n*heapEntryGuess)
	for i, g := range s.groups {
		if s.h.abandoned.Load() {
			return nil, ErrBackendClosed
		}
		if g.t.n+len(g.big) == 0 {
			continue
		}
		// Within a key group the heap writes its entries in slot and map
		// order: sorting them cost a few per cent of the job's
		// throughput, and nothing reads a heap snapshot in order (only
		// the Badger backend's snapshots are composed into incremental
		// chains, which needs key order; ComposeKeyed checks it).
		w.Group(s.start+i, g.t.n+len(g.big))
		g.t.each(func(ck, v []byte) { w.Entry(unsafe.String(unsafe.SliceData(ck), len(ck)), v) })
		for k, v := range g.big {
			w.Entry(k, stringBytes(v))
		}
	}
	return w.Bytes(), nil
}

// keyedMagic starts every encoded keyed-state snapshot.
const keyedMagic = "FLK1"

// KeyedWriter writes keyed state in the canonical format shared by every
// backend (and by savepoints): key groups in ascending order, each with its
// entries (in key order from the Badger backend, in any order from the
// heap's).
type KeyedWriter struct{ b []byte }

// NewKeyedWriter starts an encoding.
func NewKeyedWriter() *KeyedWriter { return &KeyedWriter{b: []byte(keyedMagic)} }

// Group starts key group kg with n entries.
func (w *KeyedWriter) Group(kg, n int) {
	w.b = binary.AppendUvarint(w.b, uint64(kg))
	w.b = binary.AppendUvarint(w.b, uint64(n))
}

// Entry writes one entry of the current group.
func (w *KeyedWriter) Entry(k string, v []byte) {
	w.b = binary.AppendUvarint(w.b, uint64(len(k)))
	w.b = append(w.b, k...)
	w.b = binary.AppendUvarint(w.b, uint64(len(v)))
	w.b = append(w.b, v...)
}

// Bytes returns the encoding.
func (w *KeyedWriter) Bytes() []byte { return w.b }

// DecodeKeyed calls f for every entry of an encoded keyed snapshot. Values
// passed to f alias b.
func DecodeKeyed(b []byte, f func(kg int, key string, value []byte)) error {
	return decodeKeyed(b, nil, func(kg int, k, v []byte) { f(kg, string(k), v) })
}

// decodeKeyed is DecodeKeyed with the entries' keys as bytes, which alias b,
// and with group called first at each key group with its entry count, if
// not nil.
func decodeKeyed(b []byte, group func(kg, n int), f func(kg int, key, value []byte)) error {
	if len(b) == 0 {
		return nil
	}
	if len(b) < len(keyedMagic) || string(b[:len(keyedMagic)]) != keyedMagic {
		return fmt.Errorf("keyed state: %w (bad header)", ErrCorrupt)
	}
	b = b[len(keyedMagic):]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	bytesN := func() ([]byte, bool) {
		l, ok := next()
		if !ok || uint64(len(b)) < l {
			return nil, false
		}
		out := b[:l:l]
		b = b[l:]
		return out, true
	}
	for len(b) > 0 {
		kg, ok1 := next()
		n, ok2 := next()
		if !ok1 || !ok2 {
			return fmt.Errorf("keyed state: %w (truncated group header)", ErrCorrupt)
		}
		if group != nil && n <= uint64(len(b))/4 { // an entry takes at least four bytes: a damaged count is not believed
			group(int(kg), int(n))
		}
		for i := uint64(0); i < n; i++ {
			k, ok := bytesN()
			v, ok2 := bytesN()
			if !ok || !ok2 {
				return fmt.Errorf("keyed state: %w (truncated entry in key group %d)", ErrCorrupt, kg)
			}
			f(int(kg), k, v)
		}
	}
	return nil
}
