package badgerstore

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"

	badger "github.com/dgraph-io/badger/v4"
)

// sweep deletes the state blobs that no intact record in entries refers to
// and whose checkpoint id is below below or equal to also (0: none). Blobs
// named after a damaged record are kept, as a damaged record's handles are
// unknown. Blobs whose key names no checkpoint are orphans too. The pieces
// of a blob go with it, and pieces whose index was never written (their
// process died first) are orphans like any blob.
func (s *Store) sweep(entries []metaEntry, below, also int64) error {
	referenced := map[string]bool{}
	damaged := map[int64]bool{}
	for _, e := range entries {
		if e.err != nil {
			damaged[e.id] = true
			continue
		}
		for _, a := range e.c.Tasks {
			for _, h := range a.Blobs() {
				referenced[h.Key] = true
			}
		}
	}
	var doomed [][]byte
	var bytes int64
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = []byte(statePrefix)
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			key := it.Item().Key()
			name := pieceOf(string(key[len(statePrefix):])) // a piece goes with its blob
			if referenced[name] {
				continue
			}
			id, ok := blobCheckpointID(name)
			if ok && (damaged[id] || (id >= below && id != also)) {
				continue
			}
			doomed = append(doomed, it.Item().KeyCopy(nil))
			bytes += it.Item().ValueSize()
		}
		return nil
	})
	if err != nil || len(doomed) == 0 {
		return err
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, key := range doomed {
		if err := wb.Delete(key); err != nil {
			return err
		}
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	s.garbage.Add(bytes)
	return nil
}

// kickGC asks the reclaimer to run value log GC, unless it already has work.
func (s *Store) kickGC() {
	select {
	case s.gcKick <- struct{}{}:
	default:
	}
}

// reclaim runs Badger's value log GC when kicked, until Close. GC rewrites
// value log files that are at least half garbage, and knows what is garbage
// only once a compaction has counted the deletions; so once half a value log
// file's worth of blobs was deleted, it first flushes the memtables (see
// flushDeletions), which holds the store's writes for a few milliseconds.
func (s *Store) reclaim() {
	defer close(s.gcDone)
	for {
		select {
		case <-s.gcQuit:
			return
		case <-s.gcKick:
		}
		if s.garbage.Load() >= valueLogFileSize/2 {
			s.garbage.Store(0)
			s.flushDeletions()
		}
		for s.runGC() {
			select {
			case <-s.gcQuit:
				return
			default:
			}
		}
	}
}

// flushDeletions flushes the memtables into a table and compacts it, so that
// Badger counts the value log space of the blobs deleted since the last
// flush as garbage (its discard statistics). Badger v4 flushes a memtable only
// when it is full, and the store's memtable holds only keys and value
// pointers: a few hundred bytes a checkpoint, so it filled once every few
// hundred checkpoints while the value log grew by all of their state. There
// is no public flush; DropPrefix of a key written for the purpose flushes
// every memtable and compacts the table it lands in, which is what counts.
func (s *Store) flushDeletions() {
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(flushKey), nil) }); err != nil {
		return
	}
	_ = s.db.DropPrefix([]byte(flushKey))
}

// runGC rewrites one value log file, with writes held off; it reports
// whether it did. It never does on a store with a damaged value log (see
// gcSafe).
func (s *Store) runGC() bool {
	if !s.gcSafe() {
		return false
	}
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	return s.db.RunValueLogGC(gcDiscardRatio) == nil
}

// gcSafe reports whether value log GC may run on the store, reading the
// value log files once (checkValueLogs) the first time. GC deletes a damaged
// file after copying only what comes before the damage: on a store with one
// it never runs, and the store keeps its space rather than lose values that
// reads still find.
func (s *Store) gcSafe() bool {
	s.gcCheck.Lock()
	defer s.gcCheck.Unlock()
	if !s.gcChecked {
		s.gcOK, s.gcChecked = s.checkValueLogs(), true
	}
	return s.gcOK
}

// checkValueLogs checks every value log file but the newest, which Badger
// writes to, with checkValueLog, and reports whether all are intact. It
// stops early, reporting false, when the store closes.
func (s *Store) checkValueLogs() bool {
	logs, err := filepath.Glob(filepath.Join(s.dir, "*"+valueLogExt))
	if err != nil {
		return false
	}
	slices.Sort(logs) // fixed-width numbers
	for _, path := range logs[:max(len(logs)-1, 0)] {
		select {
		case <-s.gcQuit:
			return false
		default:
		}
		err := checkValueLog(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}
