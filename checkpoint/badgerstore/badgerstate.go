package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/faultline-dev/faultline/checkpoint"

	badger "github.com/dgraph-io/badger/v4"
)

// pieceSize is the size of the pieces a state blob larger than it is stored
// in: a quarter of a value log file, so that a piece always fits in one.
const pieceSize = 8 << 20

// PutState stores data as the state of task for checkpoint id and returns its
// handle with a CRC32 (Castagnoli) checksum. The blob is on disk when
// PutState returns. A blob larger than 8 MiB is stored in pieces.
func (s *Store) PutState(ctx context.Context, id int64, task checkpoint.TaskID, data []byte) (checkpoint.Handle, error) {
	return s.PutStateParts(ctx, id, task, [][]byte{data})
}

// PutStateParts implements PartsStorage: it stores the blob made of parts,
// one after another, as PutState does, without joining them first; a blob in
// pieces is written through one buffer of a piece.
func (s *Store) PutStateParts(ctx context.Context, id int64, task checkpoint.TaskID, parts [][]byte) (checkpoint.Handle, error) {
	fail := func(err error) (checkpoint.Handle, error) {
		return checkpoint.Handle{}, fmt.Errorf("put state of %s for checkpoint %d: %w", task, id, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	h := checkpoint.Handle{Key: checkpoint.StateKey(id, task)}
	for _, p := range parts {
		h.Size += int64(len(p))
		h.Checksum = crc32.Update(h.Checksum, checkpoint.Castagnoli, p)
	}
	if h.Size > MaxStateSize {
		return fail(fmt.Errorf("%d bytes, more than the store's limit of %d", h.Size, MaxStateSize))
	}
	if err := s.enterWrite(); err != nil {
		return fail(err)
	}
	defer s.life.RUnlock()
	s.gcMu.RLock()
	defer s.gcMu.RUnlock()
	key := blobKey(h.Key)
	if h.Size <= pieceSize {
		var data []byte
		if len(parts) == 1 {
			data = parts[0]
		} else {
			data = joinParts(parts, h.Size)
		}
		if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(key, data) }); err != nil {
			return fail(err)
		}
		return h, nil
	}
	// The pieces first, then the index that makes them a blob: a blob whose
	// index is not written is an orphan, which sweep deletes.
	n := 0
	var buf []byte
	for piece := range splitParts(parts, pieceSize, &buf) {
		err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(pieceKey(h.Key, n), piece) })
		if err != nil {
			return fail(fmt.Errorf("piece %d: %w", n, err))
		}
		n++
	}
	err := s.db.Update(func(txn *badger.Txn) error {
		return txn.SetEntry(badger.NewEntry(key, encodePieces(n, h.Size)).WithMeta(piecesMeta))
	})
	if err != nil {
		return fail(err)
	}
	return h, nil
}

// joinParts is parts in one slice of size bytes.
func joinParts(parts [][]byte, size int64) []byte {
	out := make([]byte, 0, size)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// splitParts yields the blob made of parts in pieces of size bytes (the last
// one shorter): a piece that lies in one part is that part's bytes, one that
// spans parts is copied into *buf, which each piece yielded may reuse.
func splitParts(parts [][]byte, size int, buf *[]byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		var pending []byte // a piece being gathered in *buf
		for _, p := range parts {
			for len(p) > 0 {
				if pending == nil && len(p) >= size {
					if !yield(p[:size]) {
						return
					}
					p = p[size:]
					continue
				}
				if pending == nil {
					if cap(*buf) < size {
						*buf = make([]byte, 0, size)
					}
					pending = (*buf)[:0]
				}
				n := min(size-len(pending), len(p))
				pending = append(pending, p[:n]...)
				p = p[n:]
				if len(pending) == size {
					if !yield(pending) {
						return
					}
					pending = nil
				}
			}
		}
		if len(pending) > 0 {
			yield(pending)
		}
	}
}

// GetState returns the blob h points at, put together from its pieces when
// it has some. It returns an error wrapping ErrNotFound for an unknown key
// and ErrChecksum when the blob does not match h or cannot be read back from
// disk. (Badger itself does not report a value it cannot read from the value
// log: it returns it empty.)
func (s *Store) GetState(ctx context.Context, h checkpoint.Handle) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get state %s: %w", h.Key, err)
	}
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("get state %s: %w", h.Key, err)
	}
	defer s.life.RUnlock()
	var data []byte
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(blobKey(h.Key))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return checkpoint.ErrNotFound
		}
		if err != nil {
			return err
		}
		if item.UserMeta() == piecesMeta {
			data, err = readPieces(txn, item, h.Key)
			return err
		}
		if data, err = item.ValueCopy(nil); err != nil {
			// The key is there but its value is not: the value log is
			// damaged (Badger truncates a damaged value log on open).
			return fmt.Errorf("unreadable (%v): %w", err, checkpoint.ErrChecksum)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("get state %s: %w", h.Key, err)
	}
	if len(data) == 0 && h.Size > 0 {
		return nil, fmt.Errorf("get state %s: empty, want %d bytes: the value log entry that held it is gone: %w", h.Key, h.Size, checkpoint.ErrChecksum)
	}
	if got := checkpoint.Checksum(data); got != h.Checksum || int64(len(data)) != h.Size {
		return nil, fmt.Errorf("get state %s: %d bytes with checksum %08x, want %d bytes with checksum %08x: %w",
			h.Key, len(data), got, h.Size, h.Checksum, checkpoint.ErrChecksum)
	}
	return data, nil
}

// readPieces reads the blob named key whose piece index is item. A damaged
// index or a missing piece wraps ErrChecksum; the caller checks the whole.
func readPieces(txn *badger.Txn, item *badger.Item, key string) ([]byte, error) {
	var n int
	var size int64
	err := item.Value(func(v []byte) (err error) {
		n, size, err = decodePieces(v)
		return err
	})
	if err != nil {
		return nil, err
	}
	data := make([]byte, 0, size)
	for i := range n {
		piece, err := txn.Get(pieceKey(key, i))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil, fmt.Errorf("piece %d of %d is missing: %w", i, n, checkpoint.ErrChecksum)
		}
		if err != nil {
			return nil, err
		}
		err = piece.Value(func(v []byte) error {
			if int64(len(data)+len(v)) > size {
				return fmt.Errorf("piece %d of %d makes more than %d bytes: %w", i, n, size, checkpoint.ErrChecksum)
			}
			data = append(data, v...)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return data, nil
}

// Corrupt damages the stored blob key in place (its first piece, when it has
// some), keeping its handle's checksum, so that reading it fails as bytes
// damaged on disk would (the corrupt-checkpoint fault).
func (s *Store) Corrupt(key string) error {
	if err := s.enterWrite(); err != nil {
		return err
	}
	defer s.life.RUnlock()
	s.gcMu.RLock()
	defer s.gcMu.RUnlock()
	return s.db.Update(func(txn *badger.Txn) error {
		k := blobKey(key)
		item, err := txn.Get(k)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("corrupt state %s: %w", key, checkpoint.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if item.UserMeta() == piecesMeta {
			k = pieceKey(key, 0)
			if item, err = txn.Get(k); err != nil {
				return fmt.Errorf("corrupt state %s: %w", key, err)
			}
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		if len(v) == 0 {
			v = []byte{0}
		} else {
			v[len(v)/2] ^= 0xff
		}
		return txn.SetEntry(badger.NewEntry(k, v).WithMeta(item.UserMeta()))
	})
}
