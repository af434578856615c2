package verify

// DenseChunk is how many generator ids (DenseID's numbers) share one chunk
// of a Dense table.
const DenseChunk = 1 << 16

// maxPalette is the most distinct values a packed chunk holds: four bits
// an id.
const maxPalette = 16

// Dense is a value of T per generator id, by DenseID's number, in chunks
// of DenseChunk. The zero value is empty and ready.
//
// What it holds grows with the ids, so a long run keeps it small: Compact
// packs every chunk not touched since the previous Compact into as few
// bits an id as its distinct values need (one when an id is either
// delivered or never paid, as most are once their checkpoint is behind),
// and the next touch unpacks it again. Packing loses nothing.
type Dense[T byte | uint32] struct {
	open    [][]T        // unpacked chunks; nil where none or packed
	packed  []*packed[T] // packed chunks; nil where open or none
	touched []bool       // touched since the last Compact
}

// packed is a chunk whose values are indexes into a palette.
type packed[T byte | uint32] struct {
	palette []T
	bits    uint     // 1, 2 or 4
	words   []uint64 // DenseChunk indexes of bits each
}

func (p *packed[T]) at(i int) T {
	per := 64 / p.bits
	w := p.words[i/int(per)]
	shift := uint(i%int(per)) * p.bits
	return p.palette[(w>>shift)&(1<<p.bits-1)]
}

// Ptr returns n's value, creating or unpacking its chunk; the pointer is
// valid until the next Compact.
func (d *Dense[T]) Ptr(n uint32) *T {
	c := int(n / DenseChunk)
	for len(d.open) <= c {
		d.open = append(d.open, nil)
		d.packed = append(d.packed, nil)
		d.touched = append(d.touched, false)
	}
	d.touched[c] = true
	if d.open[c] == nil {
		d.open[c] = make([]T, DenseChunk)
		if p := d.packed[c]; p != nil {
			for i := range d.open[c] {
				d.open[c][i] = p.at(i)
			}
			d.packed[c] = nil
		}
	}
	return &d.open[c][n%DenseChunk]
}

// Get returns n's value (zero when it has none) without unpacking.
func (d *Dense[T]) Get(n uint32) T {
	c := int(n / DenseChunk)
	switch {
	case c >= len(d.open):
		return 0
	case d.open[c] != nil:
		return d.open[c][n%DenseChunk]
	case d.packed[c] != nil:
		return d.packed[c].at(int(n % DenseChunk))
	}
	return 0
}

// Has reports whether n's chunk exists (any id near n was met).
func (d *Dense[T]) Has(n uint32) bool {
	c := int(n / DenseChunk)
	return c < len(d.open) && (d.open[c] != nil || d.packed[c] != nil)
}

// Each calls f with every number whose value is not zero, in order.
func (d *Dense[T]) Each(f func(n uint32, v T)) {
	for c, open := range d.open {
		base := uint32(c * DenseChunk)
		switch p := d.packed[c]; {
		case open != nil:
			for i, v := range open {
				if v != 0 {
					f(base+uint32(i), v)
				}
			}
		case p != nil:
			for i := range DenseChunk {
				if v := p.at(i); v != 0 {
					f(base+uint32(i), v)
				}
			}
		}
	}
}

// Compact packs the open chunks not touched since the previous Compact
// whose values fit a palette, and starts the next period.
func (d *Dense[T]) Compact() {
	for c, open := range d.open {
		if open != nil && !d.touched[c] {
			if p := pack(open); p != nil {
				d.packed[c], d.open[c] = p, nil
			}
		}
		d.touched[c] = false
	}
}

// Bytes is about what the table holds in memory.
func (d *Dense[T]) Bytes() int {
	size := 4
	if ^T(0) == 0xff {
		size = 1
	}
	n := 0
	for c := range d.open {
		switch {
		case d.open[c] != nil:
			n += DenseChunk * size
		case d.packed[c] != nil:
			n += 8*len(d.packed[c].words) + size*len(d.packed[c].palette)
		}
	}
	return n
}

// pack returns vals packed, or nil when they have more distinct values
// than a palette holds.
func pack[T byte | uint32](vals []T) *packed[T] {
	var palette []T
	index := func(v T) int {
		for i, p := range palette {
			if p == v {
				return i
			}
		}
		return -1
	}
	for _, v := range vals {
		if index(v) < 0 {
			if len(palette) == maxPalette {
				return nil
			}
			palette = append(palette, v)
		}
	}
	b := uint(1)
	for 1<<b < len(palette) {
		b *= 2
	}
	p := &packed[T]{palette: palette, bits: b, words: make([]uint64, len(vals)*int(b)/64)}
	per := 64 / b
	last, li := vals[0], 0
	for i, v := range vals {
		if v != last {
			last, li = v, index(v)
		}
		p.words[i/int(per)] |= uint64(li) << (uint(i%int(per)) * b)
	}
	return p
}

// Chunks is how many chunks the table spans.
func (d *Dense[T]) Chunks() int { return len(d.open) }

// Chunk copies chunk c's values into dst (DenseChunk long) and reports
// whether it has any.
func (d *Dense[T]) Chunk(c int, dst []T) bool {
	switch {
	case c >= len(d.open):
		return false
	case d.open[c] != nil:
		copy(dst, d.open[c])
	case d.packed[c] != nil:
		for i := range dst[:DenseChunk] {
			dst[i] = d.packed[c].at(i)
		}
	default:
		return false
	}
	return true
}

// SetChunk makes vals (DenseChunk long, kept) chunk c.
func (d *Dense[T]) SetChunk(c int, vals []T) {
	d.Ptr(uint32(c * DenseChunk))
	d.open[c] = vals
}
