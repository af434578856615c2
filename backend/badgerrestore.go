package backend

import (
	"encoding/binary"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"
)

// Restore implements KeyedBackend: it loads the entries of this subtask's key
// groups from full snapshots (FLK1; compose a chain of deltas with
// ComposeKeyed first), overwriting what is there. The next SnapshotIncremental
// holds all of the state.
func (b *Badger) Restore(keyed [][]byte) error {
	b.flush()
	wb := b.db.NewWriteBatch()
	defer wb.Cancel()
	var arena []byte
	for _, blob := range keyed {
		if IsKeyedDelta(blob) {
			return fmt.Errorf("restore keyed state: a delta (%s) must be composed with ComposeKeyed first", deltaMagic)
		}
		var werr error
		err := DecodeKeyed(blob, func(kg int, k string, v []byte) {
			if werr != nil || !b.kgs.Contains(kg) {
				return
			}
			// Badger keeps keys and values until the batch is committed:
			// values alias blob, keys come from arenas never written again.
			if cap(arena)-len(arena) < 2+len(k) {
				arena = make([]byte, 0, max(64<<10, 2+len(k)))
			}
			start := len(arena)
			arena = binary.BigEndian.AppendUint16(arena, uint16(kg))
			arena = append(arena, k...)
			werr = wb.Set(arena[start:len(arena):len(arena)], v)
		})
		if err == nil {
			err = werr
		}
		if err != nil {
			return fmt.Errorf("restore keyed state in %s: %w", b.dir, err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("restore keyed state in %s: %w", b.dir, err)
	}
	b.renewReader()
	// Count what is there now (blobs may overlap each other and the state).
	n := 0
	it := b.reader.NewIterator(badger.IteratorOptions{})
	for it.Rewind(); it.Valid(); it.Next() {
		n++
	}
	it.Close()
	b.n = n
	b.changes = nil
	return nil
}
