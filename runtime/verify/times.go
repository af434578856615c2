package verify

import "math"

// absent marks a slot of a dense chunk of Times that holds no time.
const absent = math.MinInt64

// A chunk of Times is dense (an array of DenseChunk times) while it holds
// at least thinAt of them, and thin (its times in a map) below: an array
// costs 8 bytes an id, a map entry about 20, so a chunk with few times
// waiting (the orders never paid, once their neighbours were) costs little.
const (
	thinAt  = DenseChunk / 32
	denseAt = DenseChunk / 8
)

// Times holds an event time (Unix ms) for some generator ids, by DenseID's
// number: the side of an id read first, until its partner comes. The zero
// value is empty and ready.
type Times struct {
	chunks [][]int64
	counts []int32
	thin   map[uint32]int64
	n      int
}

func (t *Times) grow(c int) {
	for len(t.chunks) <= c {
		t.chunks = append(t.chunks, nil)
		t.counts = append(t.counts, 0)
	}
}

// Put sets n's time.
func (t *Times) Put(n uint32, v int64) {
	c := int(n / DenseChunk)
	t.grow(c)
	if ch := t.chunks[c]; ch != nil {
		if ch[n%DenseChunk] == absent {
			t.counts[c]++
			t.n++
		}
		ch[n%DenseChunk] = v
		return
	}
	if t.thin == nil {
		t.thin = map[uint32]int64{}
	}
	if _, ok := t.thin[n]; !ok {
		t.counts[c]++
		t.n++
	}
	t.thin[n] = v
	if t.counts[c] >= denseAt {
		t.densify(c)
	}
}

// Take returns n's time and forgets it.
func (t *Times) Take(n uint32) (int64, bool) {
	c := int(n / DenseChunk)
	if c >= len(t.chunks) {
		return 0, false
	}
	var v int64
	if ch := t.chunks[c]; ch != nil {
		if v = ch[n%DenseChunk]; v == absent {
			return 0, false
		}
		ch[n%DenseChunk] = absent
	} else {
		var ok bool
		if v, ok = t.thin[n]; !ok {
			return 0, false
		}
		delete(t.thin, n)
	}
	t.counts[c]--
	t.n--
	if t.chunks[c] != nil && t.counts[c] < thinAt {
		t.thinOut(c)
	}
	return v, true
}

// Len is how many times it holds.
func (t *Times) Len() int { return t.n }

// Each calls f with every number and its time; f may not change t.
func (t *Times) Each(f func(n uint32, v int64)) {
	for c, ch := range t.chunks {
		for i, v := range ch {
			if v != absent {
				f(uint32(c*DenseChunk+i), v)
			}
		}
	}
	for n, v := range t.thin {
		f(n, v)
	}
}

// DropIf forgets every time drop says to.
func (t *Times) DropIf(drop func(v int64) bool) {
	var gone []uint32
	t.Each(func(n uint32, v int64) {
		if drop(v) {
			gone = append(gone, n)
		}
	})
	for _, n := range gone {
		t.Take(n)
	}
}

// densify moves chunk c's times from the map into an array.
func (t *Times) densify(c int) {
	ch := make([]int64, DenseChunk)
	for i := range ch {
		ch[i] = absent
	}
	lo := uint32(c * DenseChunk)
	for i := range uint32(DenseChunk) {
		if v, ok := t.thin[lo+i]; ok {
			ch[i] = v
			delete(t.thin, lo+i)
		}
	}
	t.chunks[c] = ch
}

// thinOut moves chunk c's times from its array into the map.
func (t *Times) thinOut(c int) {
	if t.thin == nil {
		t.thin = map[uint32]int64{}
	}
	for i, v := range t.chunks[c] {
		if v != absent {
			t.thin[uint32(c*DenseChunk+i)] = v
		}
	}
	t.chunks[c] = nil
}
