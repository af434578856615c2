package verify

import (
	"math/rand/v2"
	"testing"
)

// A Dense table, compacted now and then, holds what a map of the same
// writes holds, and packs the chunks left alone into a bit or two an id.
func TestDenseAgreesWithAMapAcrossCompactions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var d Dense[byte]
	model := map[uint32]byte{}
	const ids = 5 * DenseChunk
	for round := range 20 {
		// Early rounds touch every chunk; later ones only the last, as a
		// run moves on and leaves its older ids settled.
		lo := uint32(0)
		if round >= 10 {
			lo = 4 * DenseChunk
		}
		for range 20_000 {
			n := lo + rand.Uint32N(ids-lo)
			v := byte(1 + rng.IntN(3)) // three states: a palette of two bits
			*d.Ptr(n) = v
			model[n] = v
		}
		d.Compact()
		for n, v := range model {
			if got := d.Get(n); got != v {
				t.Fatalf("round %d: id %d is %d, want %d", round, n, got, v)
			}
		}
	}
	seen := 0
	d.Each(func(n uint32, v byte) {
		seen++
		if model[n] != v {
			t.Fatalf("Each: id %d is %d, want %d", n, v, model[n])
		}
	})
	if seen != len(model) {
		t.Fatalf("Each saw %d ids, the map holds %d", seen, len(model))
	}
	// Four chunks untouched for ten rounds are packed at two bits an id;
	// the last is open. (Zero, never written, is a fourth value.)
	if got, want := d.Bytes(), 4*DenseChunk/4+DenseChunk+4*4; got > want {
		t.Fatalf("holds %d bytes, want at most %d", got, want)
	}
}

// A chunk with more distinct values than a palette stays open, whole.
func TestDenseKeepsAChunkOfManyValuesOpen(t *testing.T) {
	var d Dense[uint32]
	for i := range uint32(DenseChunk) {
		*d.Ptr(i) = i % 17
	}
	d.Compact()
	d.Compact()
	if d.Bytes() != 4*DenseChunk {
		t.Fatalf("holds %d bytes", d.Bytes())
	}
	if d.Get(16) != 16 || d.Get(17) != 0 {
		t.Fatal("values changed")
	}
}

// Times holds what a map holds, in chunks that go thin and dense as their
// times come and go.
func TestTimesAgreeWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var tm Times
	model := map[uint32]int64{}
	check := func(when string) {
		t.Helper()
		if tm.Len() != len(model) {
			t.Fatalf("%s: Len %d, the map holds %d", when, tm.Len(), len(model))
		}
		n := 0
		tm.Each(func(k uint32, v int64) {
			n++
			if w, ok := model[k]; !ok || w != v {
				t.Fatalf("%s: %d is %d, want %d (%v)", when, k, v, w, ok)
			}
		})
		if n != len(model) {
			t.Fatalf("%s: Each saw %d", when, n)
		}
	}
	// Fill two chunks (dense), take most (thin), fill again.
	for i := range uint32(2 * DenseChunk) {
		tm.Put(i, int64(i))
		model[i] = int64(i)
	}
	check("filled")
	for i := range uint32(2 * DenseChunk) {
		if rng.IntN(100) < 98 {
			v, ok := tm.Take(i)
			if !ok || v != int64(i) {
				t.Fatalf("Take(%d) = %d, %v", i, v, ok)
			}
			delete(model, i)
		}
	}
	if tm.chunks[0] != nil || tm.chunks[1] != nil {
		t.Fatal("chunks with 2 % of their times left are still arrays")
	}
	check("taken")
	if _, ok := tm.Take(2*DenseChunk + 5); ok {
		t.Fatal("took a time never put")
	}
	for range 50_000 {
		n := rand.Uint32N(3 * DenseChunk)
		v := rng.Int64N(1000)
		if v == 0 {
			v = -1 // a time may be anything but absent
		}
		tm.Put(n, v)
		model[n] = v
	}
	check("refilled")
	tm.DropIf(func(v int64) bool { return v < 500 })
	for k, v := range model {
		if v < 500 {
			delete(model, k)
		}
	}
	check("dropped")
}
