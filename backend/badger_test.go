package backend

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"
)

// openBadger opens a Badger backend in a fresh directory, closed when the test ends.
func openBadger(t testing.TB, maxP int, kgs KeyGroupRange) *Badger {
	t.Helper()
	b, err := NewBadger(filepath.Join(t.TempDir(), "keyed"), maxP, kgs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

func encode(t testing.TB, s Snapshot) []byte {
	t.Helper()
	b, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mirror applies the same operations to a heap and a Badger backend.
type mirror struct {
	h *Heap
	b *Badger
}

func (m mirror) put(key, state, sub string, v []byte) {
	m.h.SetCurrentKey(key)
	m.h.Put(state, sub, v)
	m.b.SetCurrentKey(key)
	m.b.Put(state, sub, v)
}

func (m mirror) del(key, state, sub string) {
	m.h.SetCurrentKey(key)
	m.h.Delete(state, sub)
	m.b.SetCurrentKey(key)
	m.b.Delete(state, sub)
}

// randomOps applies n random puts and deletes over a key space of keys keys,
// in value and map state.
func (m mirror) randomOps(r *rand.Rand, n, keys int) {
	for range n {
		key := fmt.Sprintf("c-%d", r.IntN(keys))
		if !m.h.kgs.Contains(KeyGroupFor(key, m.h.maxPar)) {
			continue
		}
		state, sub := "v", ""
		if r.IntN(3) == 0 {
			state, sub = "m", fmt.Sprintf("s%d", r.IntN(5))
		}
		if r.IntN(4) == 0 {
			m.del(key, state, sub)
		} else {
			m.put(key, state, sub, fmt.Appendf(nil, "%d", r.Int64()))
		}
	}
}

func newMirror(t testing.TB, maxP int, kgs KeyGroupRange) mirror {
	return mirror{h: NewHeap(maxP, kgs), b: openBadger(t, maxP, kgs)}
}

func TestBadgerFullSnapshotEqualsHeap(t *testing.T) {
	for _, overlay := range []int{3, 100, overlayMaxEntries} {
		t.Run(fmt.Sprintf("overlay-%d", overlay), func(t *testing.T) {
			kgs := RangeFor(128, 2, 1)
			m := newMirror(t, 128, kgs)
			m.b.maxEntries = overlay
			r := rand.New(rand.NewPCG(1, uint64(overlay)))
			var keys []string
			for i := 0; len(keys) < 2000; i++ {
				k := fmt.Sprintf("c-%d", i)
				if kgs.Contains(KeyGroupFor(k, 128)) {
					keys = append(keys, k)
				}
			}
			for round := range 5 {
				for range 3000 {
					key := keys[r.IntN(len(keys))]
					state, sub := "v", ""
					if r.IntN(3) == 0 {
						state, sub = "m", fmt.Sprintf("s%d", r.IntN(5))
					}
					if r.IntN(4) == 0 {
						m.del(key, state, sub)
					} else {
						m.put(key, state, sub, fmt.Appendf(nil, "%d", r.Int64()))
					}
				}
				if m.h.Len() != m.b.Len() {
					t.Fatalf("round %d: Len heap %d badger %d", round, m.h.Len(), m.b.Len())
				}
				hb, bb := encode(t, m.h.Snapshot()), encode(t, m.b.Snapshot())
				if len(hb) != len(bb) || !reflect.DeepEqual(decodeAll(t, hb), decodeAll(t, bb)) {
					t.Fatalf("round %d: badger snapshot (%d bytes) differs from heap's (%d bytes)", round, len(bb), len(hb))
				}
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		m := newMirror(t, 128, RangeFor(128, 1, 0))
		if hb, bb := encode(t, m.h.Snapshot()), encode(t, m.b.Snapshot()); !sameState(t, hb, bb) {
			t.Fatalf("empty: heap %q badger %q", hb, bb)
		}
	})
}

func TestBadgerEncodeWhileWriting(t *testing.T) {
	for _, incremental := range []bool{false, true} {
		t.Run(fmt.Sprintf("incremental=%v", incremental), func(t *testing.T) {
			m := newMirror(t, 128, RangeFor(128, 1, 0))
			m.b.maxEntries = 256
			r := rand.New(rand.NewPCG(5, 6))
			m.randomOps(r, 20000, 5000)
			base := encode(t, m.b.Snapshot())
			_ = m.h.Snapshot()
			m.randomOps(r, 3000, 5000)

			var s Snapshot
			if incremental {
				s = m.b.SnapshotIncremental()
			} else {
				s = m.b.Snapshot()
			}
			want := encode(t, m.h.Snapshot())
			type result struct {
				b   []byte
				err error
			}
			done := make(chan result)
			go func() {
				b, err := s.Encode()
				done <- result{b, err}
			}()
			// The task goroutine writes on: overwrites, deletes, new keys.
			for i := 0; ; i++ {
				m.randomOps(r, 100, 6000)
				if i >= 20 {
					select {
					case res := <-done:
						if res.err != nil {
							t.Fatal(res.err)
						}
						got := res.b
						if incremental {
							if got, res.err = ComposeKeyed([][]byte{base, got}); res.err != nil {
								t.Fatal(res.err)
							}
						}
						if !sameState(t, got, want) {
							t.Fatal("snapshot shows writes made after it was taken")
						}
						return
					default:
					}
				}
			}
		})
	}
}

func TestBadgerLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keyed")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "left-over"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := NewBadger(dir, 128, RangeFor(128, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "left-over")); !os.IsNotExist(err) {
		t.Fatalf("NewBadger did not empty its directory: %v", err)
	}
	if _, err := NewBadger(dir, 128, RangeFor(128, 1, 0)); !errors.Is(err, ErrBackendDirInUse) {
		t.Fatalf("second backend on the same directory: %v, want ErrBackendDirInUse", err)
	}
	b.SetCurrentKey("c-1")
	b.Put("v", "", []byte("1"))

	s := b.Snapshot().(*BadgerSnapshot)
	if _, err := s.Encode(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Encode(); !errors.Is(err, ErrSnapshotReleased) {
		t.Fatalf("second Encode: %v, want ErrSnapshotReleased", err)
	}
	d := b.Snapshot().(*BadgerSnapshot)
	d.Discard()
	if _, err := d.Encode(); !errors.Is(err, ErrSnapshotReleased) {
		t.Fatalf("Encode after Discard: %v, want ErrSnapshotReleased", err)
	}

	// A snapshot dropped without Encode is released once it is garbage.
	func() { _ = b.Snapshot() }()
	views := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.views)
	}
	for i := 0; views() > 0; i++ {
		if i == 500 {
			t.Fatalf("%d dropped snapshots still hold their transaction", views())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}

	// Close with a snapshot not yet encoded: Close works, Encode then fails.
	late := b.Snapshot()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Close left its directory: %v", err)
	}
	if _, err := late.Encode(); !errors.Is(err, ErrBackendClosed) {
		t.Fatalf("Encode after Close: %v, want ErrBackendClosed", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// The directory is free again.
	b2, err := NewBadger(dir, 128, RangeFor(128, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if b2.Len() != 0 {
		t.Fatalf("new backend holds %d entries of the old one", b2.Len())
	}
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestBadgerCloseDuringEncode(t *testing.T) {
	kgs := RangeFor(128, 1, 0)
	// 50,000 keys, written in one restore (a Put at a time is ten times
	// slower under -race): an encode that takes a while.
	h := NewHeap(128, kgs)
	for i := range 50000 {
		h.SetCurrentKey(fmt.Sprintf("c-%d", i))
		h.Put("v", "", []byte("some value"))
	}
	b := openBadger(t, 128, kgs)
	if err := b.Restore([][]byte{encode(t, h.Snapshot())}); err != nil || b.Len() != 50000 {
		t.Fatalf("restore: %v, %d keys", err, b.Len())
	}
	s := b.Snapshot()
	done := make(chan error)
	go func() {
		_, err := s.Encode()
		done <- err
	}()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Either it finished first or it was cut short; it must not crash.
	if err := <-done; err != nil && !errors.Is(err, ErrBackendClosed) {
		t.Fatal(err)
	}
}

// sameState reports whether two encoded keyed snapshots hold the same
// entries (the heap writes a key group's entries in any order).
func sameState(t *testing.T, a, b []byte) bool {
	t.Helper()
	return len(a) == len(b) && reflect.DeepEqual(decodeAll(t, a), decodeAll(t, b))
}

// decodeAll is every entry of an encoded keyed snapshot, by key group and
// key: what two snapshots of the same state share whatever their order
// within a key group.
func decodeAll(t *testing.T, b []byte) map[int]map[string]string {
	t.Helper()
	out := map[int]map[string]string{}
	if err := DecodeKeyed(b, func(kg int, k string, v []byte) {
		if out[kg] == nil {
			out[kg] = map[string]string{}
		}
		out[kg][k] = string(v)
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
