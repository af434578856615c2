package backend

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"
)

// Heap is the in-memory keyed state backend (Flink: HashMapStateBackend):
// state lives in Go maps, one per key group, and a snapshot is a full copy.
// The synchronous part of a snapshot only marks the maps shared; the first
// write to a shared map copies it (copy on write), so the task never waits
// for the copy of state it does not touch.
type Heap struct {
	kgs        KeyGroupRange
	maxPar     int
	groups     []heapGroup
	currentKey string
	currentKG  int
	buf        []byte
	n          int
	abandoned  atomic.Bool // Abandon: snapshots being encoded stop early
}

// Abandon tells the backend it is going away (its subtask is being torn
// down): snapshots being encoded stop early with ErrBackendClosed, so that
// a failover does not wait for them.
func (h *Heap) Abandon() { h.abandoned.Store(true) }

// heapGroup is one key group's entries: composite key to value. The key
// and the value of an entry share one allocation, so that a lookup that
// finds its key finds the value in the same cache lines, and state costs
// one allocation per entry.
type heapGroup struct {
	m      map[string]string
	shared bool
}

// NewHeap returns an empty heap backend for the given key groups.
func NewHeap(maxParallelism int, kgs KeyGroupRange) *Heap {
	h := &Heap{kgs: kgs, maxPar: maxParallelism, groups: make([]heapGroup, kgs.Len())}
	for i := range h.groups {
		h.groups[i].m = map[string]string{}
	}
	return h
}

// KeyGroups implements KeyedBackend.
func (h *Heap) KeyGroups() KeyGroupRange { return h.kgs }

// SetCurrentKey implements KeyedBackend. A key outside the subtask's key
// groups is a routing bug and panics.
func (h *Heap) SetCurrentKey(key string) {
	h.currentKey = key
	h.currentKG = KeyGroupFor(key, h.maxPar)
	if !h.kgs.Contains(h.currentKG) {
		panic(fmt.Sprintf("key %q is in key group %d, outside this subtask's %s", key, h.currentKG, h.kgs))
	}
}

// CurrentKey implements KeyedBackend.
func (h *Heap) CurrentKey() string { return h.currentKey }

// appendEntryKey appends the composite key (state, key, sub) of an entry.
func appendEntryKey(dst []byte, state, key, sub string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(state)))
	dst = append(dst, state...)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	return append(dst, sub...)
}

func (h *Heap) group() *heapGroup { return &h.groups[h.currentKG-h.kgs.Start] }

func (h *Heap) writable() map[string]string {
	g := h.group()
	if g.shared {
		g.m = maps.Clone(g.m)
		g.shared = false
	}
	return g.m
}

// Get implements KeyedBackend.
func (h *Heap) Get(state, sub string) ([]byte, bool) {
	h.buf = appendEntryKey(h.buf[:0], state, h.currentKey, sub)
	v, ok := h.group().m[string(h.buf)]
	return stringBytes(v), ok
}

// stringBytes is the bytes of s, which the caller must not change.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// Put implements KeyedBackend: it copies value.
func (h *Heap) Put(state, sub string, value []byte) {
	h.buf = appendEntryKey(h.buf[:0], state, h.currentKey, sub)
	// The key and the value in one allocation that nothing changes later.
	kv := make([]byte, len(h.buf)+len(value))
	copy(kv, h.buf)
	copy(kv[len(h.buf):], value)
	k := unsafe.String(unsafe.SliceData(kv), len(h.buf))
	v := unsafe.String(unsafe.SliceData(kv[len(h.buf):]), len(value))
	m := h.writable()
	before := len(m)
	m[k] = v // one lookup: the map's length tells if it was new (the map takes the new key too, so the old allocation goes)
	h.n += len(m) - before
}

// Delete implements KeyedBackend.
func (h *Heap) Delete(state, sub string) {
	h.buf = appendEntryKey(h.buf[:0], state, h.currentKey, sub)
	g := h.group()
	if g.shared {
		// Copy the group only when there is something to delete.
		if _, ok := g.m[string(h.buf)]; !ok {
			return
		}
	}
	m := h.writable()
	before := len(m)
	delete(m, string(h.buf))
	h.n -= before - len(m)
}

// Scan implements KeyedBackend.
func (h *Heap) Scan(state string, f func(sub string, value []byte) bool) {
	prefix := string(appendEntryKey(nil, state, h.currentKey, ""))
	for k, v := range h.group().m {
		if strings.HasPrefix(k, prefix) && !f(k[len(prefix):], stringBytes(v)) {
			return
		}
	}
}

// Len implements KeyedBackend.
func (h *Heap) Len() int { return h.n }

// Snapshot implements KeyedBackend: O(key groups), copy on write after.
func (h *Heap) Snapshot() Snapshot {
	s := &heapSnapshot{h: h, start: h.kgs.Start, n: h.n, groups: make([]map[string]string, len(h.groups))}
	for i := range h.groups {
		h.groups[i].shared = true
		s.groups[i] = h.groups[i].m
	}
	return s
}

// Restore implements KeyedBackend.
func (h *Heap) Restore(keyed [][]byte) error {
	for _, b := range keyed {
		err := DecodeKeyed(b, func(kg int, k string, v []byte) {
			if !h.kgs.Contains(kg) {
				return
			}
			m := h.groups[kg-h.kgs.Start].m
			if _, ok := m[k]; !ok {
				h.n++
			}
			m[k] = unsafe.String(unsafe.SliceData(v), len(v)) // v is the restored blob's, which nothing changes
		})
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
	groups []map[string]string
}

// heapEntryGuess is about what an entry of the default job's state takes
// encoded: the encoding starts that large, not grown from nothing.
const heapEntryGuess = 56

func (s *heapSnapshot) Encode() ([]byte, error) {
	w := NewKeyedWriter()
	w.b = slices.Grow(w.b, s.n*heapEntryGuess)
	keys := []string{}
	for i, m := range s.groups {
		if s.h.abandoned.Load() {
			return nil, ErrBackendClosed
		}
		if len(m) == 0 {
			continue
		}
		keys = keys[:0]
		for k := range m {
			keys = append(keys, k)
		}
		// Within a key group the heap writes its entries in map order:
		// sorting them cost a few per cent of the job's throughput, and
		// nothing reads a heap snapshot in order (only the Badger
		// backend's snapshots are composed into incremental chains,
		// which needs key order; ComposeKeyed checks it).
		w.Group(s.start+i, len(keys))
		for _, k := range keys {
			w.Entry(k, stringBytes(m[k]))
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
		for i := uint64(0); i < n; i++ {
			k, ok := bytesN()
			v, ok2 := bytesN()
			if !ok || !ok2 {
				return fmt.Errorf("keyed state: %w (truncated entry in key group %d)", ErrCorrupt, kg)
			}
			f(int(kg), string(k), v)
		}
	}
	return nil
}
