package backend

import (
	"encoding/binary"
	"fmt"
	"slices"

	badger "github.com/dgraph-io/badger/v4"
)

// Scan implements KeyedBackend. Subs come in ascending order; entries that
// f creates are not visited.
func (b *Badger) Scan(state string, f func(sub string, value []byte) bool) {
	b.setKey(state, "")
	prefix := slices.Clone(b.buf)
	var subs []string // of the overlay's entries under prefix
	if _, ok := b.overlay[string(prefix)]; ok {
		subs = append(subs, "")
	}
	if s, ok := b.scopes[string(prefix)]; ok {
		subs = append(subs, *s...)
	}
	slices.Sort(subs)
	key := slices.Clone(prefix)
	// fromOverlay calls f with the overlay's entry sub, if it exists.
	fromOverlay := func(sub string) bool {
		key = append(key[:len(prefix)], sub...)
		j, ok := b.overlay[string(key)]
		if !ok {
			return true
		}
		e := &b.entries[j]
		return !e.exists || f(sub, e.val)
	}

	b.scanning++
	defer func() {
		b.scanning--
		b.maybeFlush()
	}()
	it := b.reader.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	i := 0
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		item := it.Item()
		sub := string(item.Key()[len(prefix):])
		for ; i < len(subs) && subs[i] < sub; i++ {
			if !fromOverlay(subs[i]) {
				return
			}
		}
		if i < len(subs) && subs[i] == sub {
			i++
		}
		if j, ok := b.overlay[string(item.Key())]; ok {
			// Written since the last flush (also by f, during this Scan).
			if e := &b.entries[j]; e.exists && !f(sub, e.val) {
				return
			}
			continue
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			panic(fmt.Errorf("keyed state in %s: scan: %w", b.dir, err))
		}
		if !f(sub, v) {
			return
		}
	}
	for ; i < len(subs); i++ {
		if !fromOverlay(subs[i]) {
			return
		}
	}
}

// ScanKeys implements KeyScanner: it flushes the overlay, collects the
// state's entries of every key group from the database, then calls f.
func (b *Badger) ScanKeys(state string, f func(key, sub string, value []byte) bool) {
	b.flush()
	var found []keyedEntry
	prefix := statePrefix(state)
	for kg := b.kgs.Start; kg <= b.kgs.End; kg++ {
		p := append(binary.BigEndian.AppendUint16(nil, uint16(kg)), prefix...)
		it := b.reader.NewIterator(badger.IteratorOptions{Prefix: p, PrefetchValues: false})
		for it.Seek(p); it.ValidForPrefix(p); it.Next() {
			item := it.Item()
			k, s, ok := splitEntryKey(item.Key()[2:])
			if !ok {
				continue
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				it.Close()
				panic(fmt.Errorf("keyed state in %s: scan: %w", b.dir, err))
			}
			found = append(found, keyedEntry{string(k), string(s), v})
		}
		it.Close()
	}
	key, kg := b.currentKey, b.currentKG
	defer func() { b.currentKey, b.currentKG = key, kg }()
	for _, e := range found {
		if !f(e.key, e.sub, e.value) {
			return
		}
	}
}
