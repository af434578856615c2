package backend

import (
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
)

// deltaMagic starts every encoded keyed-state delta (see SnapshotIncremental).
const deltaMagic = "FLD1"

// IsKeyedDelta reports whether b is an encoded delta (FLD1) rather than a
// full keyed snapshot (FLK1).
func IsKeyedDelta(b []byte) bool {
	return len(b) >= len(deltaMagic) && string(b[:len(deltaMagic)]) == deltaMagic
}

// DecodeKeyedDelta calls f for every entry of an encoded delta: a put of
// value, or a tombstone (deleted). Values passed to f alias b.
func DecodeKeyedDelta(b []byte, f func(kg int, key string, value []byte, deleted bool)) error {
	if !IsKeyedDelta(b) {
		return fmt.Errorf("keyed state delta: %w (bad header)", ErrCorrupt)
	}
	c := chainCursor{b: b[len(deltaMagic):], delta: true}
	for {
		if err := c.next(); err != nil {
			return err
		}
		if !c.valid {
			return nil
		}
		f(c.kg, string(c.key), c.val, c.del)
	}
}

// ComposeKeyed turns a chain of keyed snapshots into one: chain is a full
// FLK1 snapshot (or nothing) followed by deltas (FLD1), oldest first, and the
// result is the canonical FLK1 snapshot of the state after the last delta,
// the same bytes as the Badger backend's full snapshot of that state. Puts
// overwrite, tombstones delete; a full snapshot later in the chain replaces
// everything before it, and empty elements are nothing. Every element must
// be in key order (key groups, then keys, ascending), as the Badger backend
// writes them (the heap backend writes a group's entries in any order, and
// is never part of a chain); ComposeKeyed merges them in one pass and
// reports an element out of order as corrupt.
func ComposeKeyed(chain [][]byte) ([]byte, error) {
	first := 0
	for i, b := range chain {
		switch {
		case len(b) == 0 || IsKeyedDelta(b):
		case len(b) >= len(keyedMagic) && string(b[:len(keyedMagic)]) == keyedMagic:
			first = i
		default:
			return nil, fmt.Errorf("compose keyed state: element %d: %w (bad header)", i, ErrCorrupt)
		}
	}
	var h cursorHeap
	for i := first; i < len(chain); i++ {
		b := chain[i]
		if len(b) == 0 {
			continue
		}
		c := &chainCursor{b: b[len(keyedMagic):], delta: IsKeyedDelta(b), idx: i, kg: -1}
		if err := c.next(); err != nil {
			return nil, fmt.Errorf("compose keyed state: element %d: %w", i, err)
		}
		if c.valid {
			h = append(h, c)
		}
	}
	heap.Init(&h)
	advance := func() error {
		c := h[0]
		if err := c.next(); err != nil {
			return fmt.Errorf("compose keyed state: element %d: %w", c.idx, err)
		}
		if c.valid {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
		return nil
	}
	w := NewKeyedWriter()
	g := groupWriter{w: w, kg: -1}
	for len(h) > 0 {
		// The newest element's entry wins; the others at the same key are
		// skipped. key and val alias the chain, so they survive advancing.
		top := h[0]
		kg, key, val, del := top.kg, top.key, top.val, top.del
		if err := advance(); err != nil {
			return nil, err
		}
		for len(h) > 0 && h[0].kg == kg && string(h[0].key) == string(key) {
			if err := advance(); err != nil {
				return nil, err
			}
		}
		if del {
			continue
		}
		g.start(kg)
		g.buf = appendKeyedEntry(g.buf, key, val)
		g.n++
	}
	g.end()
	return w.Bytes(), nil
}

// chainCursor reads the entries of one FLK1 or FLD1 encoding (after its
// magic) in order, checking that they are in canonical order.
type chainCursor struct {
	b     []byte
	delta bool
	idx   int // position in the chain: newer wins

	left  uint64 // entries left in the current key group
	valid bool
	kg    int
	key   []byte
	val   []byte
	del   bool
}

// next moves to the next entry; at the end valid is false.
func (c *chainCursor) next() error {
	uvarint := func() (uint64, bool) {
		v, n := binary.Uvarint(c.b)
		if n <= 0 {
			return 0, false
		}
		c.b = c.b[n:]
		return v, true
	}
	bytesN := func(l uint64) ([]byte, bool) {
		if uint64(len(c.b)) < l {
			return nil, false
		}
		out := c.b[:l:l]
		c.b = c.b[l:]
		return out, true
	}
	prevKG, prevKey, hadPrev := c.kg, c.key, c.valid
	for c.left == 0 {
		if len(c.b) == 0 {
			c.valid = false
			return nil
		}
		kg, ok1 := uvarint()
		n, ok2 := uvarint()
		if !ok1 || !ok2 || kg >= 1<<16 {
			return fmt.Errorf("keyed state: %w (bad group header)", ErrCorrupt)
		}
		if hadPrev && int(kg) <= prevKG {
			return fmt.Errorf("keyed state: %w (key group %d after %d)", ErrCorrupt, kg, prevKG)
		}
		c.kg, c.left = int(kg), n
	}
	c.left--
	kl, ok := uvarint()
	if !ok {
		return fmt.Errorf("keyed state: %w (truncated entry in key group %d)", ErrCorrupt, c.kg)
	}
	if c.key, ok = bytesN(kl); !ok {
		return fmt.Errorf("keyed state: %w (truncated entry in key group %d)", ErrCorrupt, c.kg)
	}
	vl, ok := uvarint()
	if !ok {
		return fmt.Errorf("keyed state: %w (truncated entry in key group %d)", ErrCorrupt, c.kg)
	}
	c.del = false
	if c.delta {
		if vl == 0 {
			c.del = true
		} else {
			vl--
		}
	}
	c.val = nil
	if !c.del {
		if c.val, ok = bytesN(vl); !ok {
			return fmt.Errorf("keyed state: %w (truncated entry in key group %d)", ErrCorrupt, c.kg)
		}
	}
	if hadPrev && c.kg == prevKG && string(c.key) <= string(prevKey) {
		return fmt.Errorf("keyed state: %w (keys out of order in key group %d)", ErrCorrupt, c.kg)
	}
	c.valid = true
	return nil
}

// cursorHeap orders cursors by their entry, the newest element first among
// equal entries.
type cursorHeap []*chainCursor

func (h cursorHeap) Len() int { return len(h) }

func (h cursorHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if c := cmp.Or(cmp.Compare(a.kg, b.kg), cmp.Compare(string(a.key), string(b.key))); c != 0 {
		return c < 0
	}
	return a.idx > b.idx
}

func (h cursorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *cursorHeap) Push(x any) { *h = append(*h, x.(*chainCursor)) }

func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}
