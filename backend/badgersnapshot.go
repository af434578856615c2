package backend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"

	badger "github.com/dgraph-io/badger/v4"
)

// Snapshot implements KeyedBackend: it flushes the overlay and opens a
// read-only transaction. Encode writes the full state (FLK1). The change set
// restarts empty.
func (b *Badger) Snapshot() Snapshot { return b.snapshot(false) }

// SnapshotIncremental takes a snapshot holding only what changed (puts and
// deletes) since the previous Snapshot or SnapshotIncremental (Flink:
// incremental RocksDB checkpoints). Its Encode gives a delta (FLD1): for each
// key group in order, the changed entries in key order, each a put with its
// value in the frozen view or a tombstone. When there is no previous
// snapshot (after NewBadger or Restore), or when more than half of the state
// changed, it holds all of the state instead and Encode gives a full FLK1
// snapshot (BadgerSnapshot.Incremental tells which), with which a new chain
// of deltas starts. ComposeKeyed turns a chain into one full snapshot.
func (b *Badger) SnapshotIncremental() Snapshot { return b.snapshot(true) }

func (b *Badger) snapshot(incremental bool) *BadgerSnapshot {
	b.flush()
	v := &badgerView{b: b}
	if incremental && b.changes != nil {
		v.changes = b.changes
		v.delta = true
	}
	b.changes = map[string]struct{}{}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		panic(fmt.Errorf("snapshot of keyed state in %s: %w", b.dir, ErrBackendClosed))
	}
	v.txn = b.db.NewTransaction(false)
	b.views[v] = struct{}{}
	b.mu.Unlock()
	s := &BadgerSnapshot{v: v}
	runtime.AddCleanup(s, (*badgerView).release, v)
	return s
}

// BadgerSnapshot is a frozen view of a Badger backend: the synchronous part
// of a (full or incremental) checkpoint; Encode is its asynchronous part.
type BadgerSnapshot struct{ v *badgerView }

var _ DeltaSnapshot = (*BadgerSnapshot)(nil)

// Incremental reports whether Encode gives a delta (FLD1) rather than a full
// snapshot (FLK1).
func (s *BadgerSnapshot) Incremental() bool { return s.v.delta }

// Encode implements Snapshot: it writes the view and releases it. It may run
// on any goroutine, while the subtask writes on; it can be called once, and
// it fails with ErrBackendClosed when the backend is closed first or while
// it runs.
func (s *BadgerSnapshot) Encode() ([]byte, error) {
	v := s.v
	if err := v.begin(); err != nil {
		return nil, err
	}
	defer v.end()
	var (
		out []byte
		err error
	)
	if v.delta {
		out, err = v.encodeDelta()
	} else {
		out, err = v.encodeFull()
	}
	if err != nil {
		return nil, fmt.Errorf("encode keyed state of %s: %w", v.b.dir, err)
	}
	return out, nil
}

// Discard releases a snapshot that will not be encoded (its checkpoint was
// aborted). It may run on any goroutine; after Encode it does nothing.
func (s *BadgerSnapshot) Discard() { s.v.release() }

// badgerView is the state of a BadgerSnapshot, apart from it so that a
// cleanup can release it when the snapshot is garbage.
type badgerView struct {
	b       *Badger
	txn     *badger.Txn
	delta   bool
	changes map[string]struct{} // when delta
	state   viewState           // under b.mu
}

type viewState int

const (
	viewPending viewState = iota
	viewEncoding
	viewDone // encoded, discarded or closed
)

// begin marks v as being encoded.
func (v *badgerView) begin() error {
	b := v.b
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case v.state != viewPending && b.closed:
		return ErrBackendClosed
	case v.state != viewPending:
		return ErrSnapshotReleased
	}
	v.state = viewEncoding
	b.encoding.Add(1)
	return nil
}

// end releases v after Encode.
func (v *badgerView) end() {
	b := v.b
	b.mu.Lock()
	v.txn.Discard()
	v.state = viewDone
	delete(b.views, v)
	b.mu.Unlock()
	b.encoding.Done()
}

// release discards v unless it is being or was encoded.
func (v *badgerView) release() {
	b := v.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if v.state != viewPending {
		return
	}
	v.txn.Discard()
	v.state = viewDone
	delete(b.views, v)
}

// encodeFull writes every entry of the view as FLK1: key groups in order,
// each with its entries in key order (the order Badger iterates in).
func (v *badgerView) encodeFull() ([]byte, error) {
	w := NewKeyedWriter()
	g := groupWriter{w: w, kg: -1}
	it := v.txn.NewIterator(badger.IteratorOptions{})
	defer it.Close()
	count := 0
	for it.Rewind(); it.Valid(); it.Next() {
		if count++; count%cancelCheckEvery == 0 && v.b.closing.Load() {
			return nil, ErrBackendClosed
		}
		item := it.Item()
		key := item.Key()
		if len(key) < 2 {
			return nil, fmt.Errorf("storage key %q: %w", key, ErrCorrupt)
		}
		g.start(int(binary.BigEndian.Uint16(key)))
		if err := item.Value(func(val []byte) error {
			g.buf = appendKeyedEntry(g.buf, key[2:], val)
			return nil
		}); err != nil {
			return nil, err
		}
		g.n++
	}
	g.end()
	return w.Bytes(), nil
}

// encodeDelta writes the changed entries as FLD1.
func (v *badgerView) encodeDelta() ([]byte, error) {
	keys := make([]string, 0, len(v.changes))
	for k := range v.changes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w := &KeyedWriter{b: []byte(deltaMagic)}
	g := groupWriter{w: w, kg: -1}
	for i, k := range keys {
		if i%cancelCheckEvery == 0 && v.b.closing.Load() {
			return nil, ErrBackendClosed
		}
		g.start(int(k[0])<<8 | int(k[1]))
		g.buf = binary.AppendUvarint(g.buf, uint64(len(k)-2))
		g.buf = append(g.buf, k[2:]...)
		item, err := v.txn.Get([]byte(k))
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
			g.buf = append(g.buf, 0) // tombstone
		case err != nil:
			return nil, err
		default:
			if err := item.Value(func(val []byte) error {
				g.buf = binary.AppendUvarint(g.buf, uint64(len(val))+1)
				g.buf = append(g.buf, val...)
				return nil
			}); err != nil {
				return nil, err
			}
		}
		g.n++
	}
	g.end()
	return w.Bytes(), nil
}

// groupWriter collects the entries of one key group, whose header needs
// their number, then appends the group to w.
type groupWriter struct {
	w   *KeyedWriter
	kg  int
	n   int
	buf []byte
}

func (g *groupWriter) start(kg int) {
	if kg != g.kg {
		g.end()
		g.kg = kg
	}
}

func (g *groupWriter) end() {
	if g.n > 0 {
		g.w.Group(g.kg, g.n)
		g.w.b = append(g.w.b, g.buf...)
	}
	g.n, g.buf = 0, g.buf[:0]
}

// appendKeyedEntry appends one FLK1 entry, as KeyedWriter.Entry does.
func appendKeyedEntry(dst, k, v []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(k)))
	dst = append(dst, k...)
	dst = binary.AppendUvarint(dst, uint64(len(v)))
	return append(dst, v...)
}
