package backend

import (
	"encoding/binary"
	"errors"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"
)

// overlayEntry is one entry of the overlay: the entry's value as the subtask
// sees it now (exists false: it has none), whether Badger holds it (as of the
// last flush), and whether it was written since.
type overlayEntry struct {
	key    string
	val    []byte
	exists bool
	inDB   bool
	dirty  bool
}

// appendStorageKey appends the Badger key of entry (state, key, sub) in key
// group kg.
func appendStorageKey(dst []byte, kg int, state, key, sub string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(kg))
	return appendEntryKey(dst, state, key, sub)
}

// setKey puts the storage key of (state, current key, sub) into b.buf.
func (b *Badger) setKey(state, sub string) {
	b.buf = appendStorageKey(b.buf[:0], b.currentKG, state, b.currentKey, sub)
}

// Get implements KeyedBackend. The value must not be changed.
func (b *Badger) Get(state, sub string) ([]byte, bool) {
	b.setKey(state, sub)
	if i, ok := b.overlay[string(b.buf)]; ok {
		e := &b.entries[i]
		return e.val, e.exists
	}
	v, ok := b.readDB(b.buf)
	b.add(overlayEntry{val: v, exists: ok, inDB: ok}, len(sub))
	b.maybeFlush()
	return v, ok
}

// Put implements KeyedBackend. The value is copied.
func (b *Badger) Put(state, sub string, value []byte) {
	b.setKey(state, sub)
	v := append(make([]byte, 0, len(value)), value...)
	if i, ok := b.overlay[string(b.buf)]; ok {
		e := &b.entries[i]
		if !e.exists {
			b.n++
		}
		b.overlayBytes += len(v) - len(e.val)
		e.val, e.exists = v, true
		b.markDirty(e)
	} else {
		inDB := b.hasDB(b.buf)
		if !inDB {
			b.n++
		}
		b.add(overlayEntry{val: v, exists: true, inDB: inDB, dirty: true}, len(sub))
		b.dirty++
	}
	b.maybeFlush()
}

// Delete implements KeyedBackend.
func (b *Badger) Delete(state, sub string) {
	b.setKey(state, sub)
	if i, ok := b.overlay[string(b.buf)]; ok {
		e := &b.entries[i]
		if !e.exists {
			return
		}
		b.n--
		b.overlayBytes -= len(e.val)
		e.val, e.exists = nil, false
		b.markDirty(e)
		return
	}
	inDB := b.hasDB(b.buf)
	if inDB {
		b.n--
		b.dirty++
	}
	b.add(overlayEntry{inDB: inDB, dirty: inDB}, len(sub))
	b.maybeFlush()
}

func (b *Badger) markDirty(e *overlayEntry) {
	if !e.dirty {
		e.dirty = true
		b.dirty++
	}
}

// add puts e, the entry at b.buf whose sub is the last subLen bytes, into
// the overlay.
func (b *Badger) add(e overlayEntry, subLen int) {
	e.key = string(b.buf)
	b.overlay[e.key] = int32(len(b.entries))
	b.entries = append(b.entries, e)
	b.overlayBytes += len(e.key) + len(e.val)
	if subLen > 0 {
		prefix := b.buf[:len(b.buf)-subLen]
		subs, ok := b.scopes[string(prefix)]
		if !ok {
			subs = new([]string)
			b.scopes[string(prefix)] = subs
		}
		*subs = append(*subs, e.key[len(e.key)-subLen:])
	}
}

// readDB reads key from what is flushed.
func (b *Badger) readDB(key []byte) ([]byte, bool) {
	item, err := b.reader.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false
	}
	if err != nil {
		panic(fmt.Errorf("keyed state in %s: read: %w", b.dir, err))
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		panic(fmt.Errorf("keyed state in %s: read: %w", b.dir, err))
	}
	return v, true
}

// hasDB reports whether key is in what is flushed.
func (b *Badger) hasDB(key []byte) bool {
	_, err := b.reader.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false
	}
	if err != nil {
		panic(fmt.Errorf("keyed state in %s: read: %w", b.dir, err))
	}
	return true
}

func (b *Badger) maybeFlush() {
	if b.scanning == 0 && (len(b.entries) >= b.maxEntries || b.overlayBytes >= b.maxBytes) {
		b.flush()
	}
}

// flush writes the overlay's dirty entries to Badger in one WriteBatch,
// records them in the change set, renews the reader and empties the overlay.
func (b *Badger) flush() {
	if b.dirty > 0 {
		size := 0
		for i := range b.entries {
			if e := &b.entries[i]; e.dirty {
				size += len(e.key)
			}
		}
		// Badger keeps the key slices until the batch is committed: one
		// arena for all of them, never written again.
		arena := make([]byte, 0, size)
		wb := b.db.NewWriteBatch()
		for i := range b.entries {
			e := &b.entries[i]
			if !e.dirty || (!e.exists && !e.inDB) {
				continue // unchanged, or created and deleted since the last flush
			}
			start := len(arena)
			arena = append(arena, e.key...)
			k := arena[start:len(arena):len(arena)]
			var err error
			if e.exists {
				err = wb.Set(k, e.val)
			} else {
				err = wb.Delete(k)
			}
			if err != nil {
				wb.Cancel()
				panic(fmt.Errorf("keyed state in %s: write: %w", b.dir, err))
			}
			if b.changes != nil {
				b.changes[e.key] = struct{}{}
			}
		}
		if err := wb.Flush(); err != nil {
			panic(fmt.Errorf("keyed state in %s: write: %w", b.dir, err))
		}
		b.renewReader()
		if b.changes != nil && len(b.changes) > max(minTrackedChanges, b.n/2) {
			b.changes = nil // a delta would be as large as the state
		}
	}
	clear(b.overlay)
	clear(b.entries)
	b.entries = b.entries[:0]
	clear(b.scopes)
	b.dirty, b.overlayBytes = 0, 0
}

func (b *Badger) renewReader() {
	b.reader.Discard()
	b.reader = b.db.NewTransaction(false)
}
