package checkpoint

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"faultline/internal/dbclose"
)

// ErrLocked means another process (or another BadgerStore in this process)
// holds the checkpoint store's directory. Stop it, or use another directory.
var ErrLocked = errors.New("checkpoint store locked")

// ErrClosed means the BadgerStore was used after Close.
var ErrClosed = errors.New("checkpoint store is closed")

// On-disk layout. Every key lives in one Badger DB in the store's directory:
//
//	meta/<id, 20 digits>   the metadata of a completed checkpoint or savepoint:
//	                       recordMagic, CRC32C of the JSON, the JSON (metaRecord)
//	state/<Handle.Key>     a state blob, raw; its CRC32C is in the Handle
//	                       (Handle.Key is "chk-<id>/<operator>/<index>")
//	sys/max-id             the highest id ever added: 8 bytes big endian + CRC32C
//
// Beside Badger's own files the directory holds OWNER (JSON: pid and command
// line of the process that has the store open), removed by Close.
const (
	metaPrefix  = "meta/"
	statePrefix = "state/"
	maxIDKey    = "sys/max-id"
	flushKey    = "sys/flush" // written and dropped to flush the memtables (see flushDeletions)
	ownerFile   = "OWNER"
	recordMagic = "FLC1" // faultline checkpoint metadata, version 1
)

// Badger tuning: see OpenBadgerStore and badgerOptions.
const (
	memTableSize     = 1 << 20
	valueThreshold   = 1 << 10
	valueLogFileSize = 32 << 20
	gcDiscardRatio   = 0.5
)

// MaxStateSize is the largest state blob BadgerStore.PutState accepts: one
// Badger value must fit in one value log file.
const MaxStateSize = valueLogFileSize - 1<<20

// BadgerStore is a Store on a Badger database in one directory (Flink:
// CheckpointStorage + CompletedCheckpointStore on disk). It keeps the newest
// retained checkpoints (Flink: state.checkpoints.num-retained) and every
// savepoint, like MemoryStore, and survives the process: a checkpoint is
// listed once Add has returned, and stays listed through a crash at any
// moment.
//
// Metadata records that fail their checksum or cannot be read are "damaged":
// All and Latest skip them, so that a restore uses the newest intact
// checkpoint; Damaged lists them and Verify explains what is wrong. Retention
// never removes a damaged record (it cannot tell a damaged savepoint from a
// damaged checkpoint), nor the state blobs of its own id; Delete does.
//
// It is safe for concurrent use. Locks are taken in this order: life (read
// for every operation, write for Close), then writeMu (Add and Delete), then
// gcMu (read for every write to Badger, write for a value log GC run).
type BadgerStore struct {
	dir      string
	retained int
	db       *badger.DB

	life   sync.RWMutex
	closed bool // under life

	writeMu sync.Mutex // serialises Add and Delete: metadata and retention
	maxID   atomic.Int64

	// gcMu keeps value log GC apart from writes: Badger v4.9.6's GC reads
	// the memtable's max version unsynchronised with the write goroutine
	// (a data race the race detector reports), so writes hold it shared and
	// a GC run holds it exclusively.
	gcMu sync.RWMutex

	// garbage counts the bytes of state blobs deleted since the memtables
	// were last flushed for the reclaimer (see flushDeletions).
	garbage atomic.Int64

	gcKick chan struct{} // buffered 1: ask the reclaimer to run value log GC
	gcQuit chan struct{}
	gcDone chan struct{}
}

var _ Store = (*BadgerStore)(nil)

// OpenBadgerStore opens (creating) the checkpoint store in dir (Flink:
// CheckpointStorage + CompletedCheckpointStore on disk) that keeps the newest
// retained checkpoints (at least 1) plus every savepoint.
//
// Opening deletes the state blobs that no checkpoint refers to: those of
// checkpoints that never completed before the previous process stopped. When
// another process (or another BadgerStore of this process) has dir open, it
// returns an error wrapping ErrLocked that names dir and that process.
//
// Badger runs with 1 MiB memtables (an open takes about 10 ms and the store
// holds 1–6 MiB of heap), synchronous writes, no compression and no block
// cache; values of 1 KiB and more (state blobs, large metadata records) live
// in value log files of 32 MiB, so a state blob can be at most MaxStateSize.
// The space of deleted blobs is reclaimed in the background by value log GC
// (see reclaim). Badger never logs.
func OpenBadgerStore(dir string, retained int) (*BadgerStore, error) {
	if dir == "" {
		return nil, errors.New("open checkpoint store: no directory given")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open checkpoint store: %w", err)
	}
	if _, err := removeEmptyValueLogs(dir); err != nil {
		return nil, fmt.Errorf("open checkpoint store %s: %w", dir, err)
	}
	db, err := badger.Open(badgerOptions(dir))
	if err != nil {
		if isBadgerLockError(err) {
			return nil, fmt.Errorf("%w: %s is in use by %s", ErrLocked, dir, describeHolder(dir))
		}
		return nil, fmt.Errorf("open checkpoint store %s: %w", dir, err)
	}
	s := &BadgerStore{
		dir:      dir,
		retained: max(retained, 1),
		db:       db,
		gcKick:   make(chan struct{}, 1),
		gcQuit:   make(chan struct{}),
		gcDone:   make(chan struct{}),
	}
	if err := s.init(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open checkpoint store %s: %w", dir, err)
	}
	// The owner file is advisory: a store that cannot say who holds it still
	// works, so a failure to write it is not an error.
	_ = writeOwner(dir)
	go s.reclaim()
	s.kickGC()
	return s, nil
}

// badgerOptions are the Badger options of the store in dir. Small memtables
// need a value threshold below 15% of their size. One level-0 table is enough
// to start a compaction, and Close compacts level 0, because compactions are
// what tell value log GC which value log space is garbage.
func badgerOptions(dir string) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(nil).
		WithSyncWrites(true).
		WithMemTableSize(memTableSize).
		WithNumMemtables(2).
		WithValueThreshold(valueThreshold).
		WithValueLogFileSize(valueLogFileSize).
		WithCompression(options.None).
		WithBlockCacheSize(0).
		WithNumCompactors(2).
		WithNumLevelZeroTables(1).
		WithNumLevelZeroTablesStall(8).
		WithCompactL0OnClose(true).
		WithMetricsEnabled(false).
		WithDetectConflicts(false) // Add and Delete are serialised by writeMu
}

// init reads the highest id and deletes orphan state blobs. Nothing else uses
// the store yet, so every blob no checkpoint refers to is an orphan.
func (s *BadgerStore) init() error {
	var stored int64
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(maxIDKey))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if id, ok := decodeMaxID(v); ok {
				stored = id
			}
			// A damaged max id is recovered from the metadata below.
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("read max id: %w", err)
	}
	entries, err := s.list()
	if err != nil {
		return err
	}
	maxID := stored
	for _, e := range entries {
		maxID = max(maxID, e.id)
	}
	s.maxID.Store(maxID)
	if err := s.sweep(entries, math.MaxInt64, 0); err != nil {
		return fmt.Errorf("delete orphan state: %w", err)
	}
	return nil
}

// Dir is the directory the store lives in.
func (s *BadgerStore) Dir() string { return s.dir }

// Close waits for background work, releases the directory and closes the
// database. Closing twice is a no-op.
func (s *BadgerStore) Close() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.gcQuit)
	<-s.gcDone
	_ = os.Remove(filepath.Join(s.dir, ownerFile))
	if err := dbclose.Close(s.db, s.dir, 0); err != nil {
		return fmt.Errorf("close checkpoint store %s: %w", s.dir, err)
	}
	return nil
}

// enter takes the read side of the lifecycle lock; the caller must call
// s.life.RUnlock when it returns nil.
func (s *BadgerStore) enter() error {
	s.life.RLock()
	if s.closed {
		s.life.RUnlock()
		return ErrClosed
	}
	return nil
}

// PutState stores data as the state of task for checkpoint id and returns its
// handle with a CRC32 (Castagnoli) checksum. The blob is on disk when
// PutState returns.
func (s *BadgerStore) PutState(ctx context.Context, id int64, task TaskID, data []byte) (Handle, error) {
	if err := ctx.Err(); err != nil {
		return Handle{}, fmt.Errorf("put state of %s for checkpoint %d: %w", task, id, err)
	}
	if len(data) > MaxStateSize {
		return Handle{}, fmt.Errorf("put state of %s for checkpoint %d: %d bytes, more than the store's limit of %d",
			task, id, len(data), MaxStateSize)
	}
	if err := s.enter(); err != nil {
		return Handle{}, fmt.Errorf("put state of %s for checkpoint %d: %w", task, id, err)
	}
	defer s.life.RUnlock()
	h := Handle{Key: stateKey(id, task), Size: int64(len(data)), Checksum: checksum(data)}
	s.gcMu.RLock()
	err := s.db.Update(func(txn *badger.Txn) error {
		return txn.Set(blobKey(h.Key), data)
	})
	s.gcMu.RUnlock()
	if err != nil {
		return Handle{}, fmt.Errorf("put state of %s for checkpoint %d: %w", task, id, err)
	}
	return h, nil
}

// GetState returns the blob h points at. It returns an error wrapping
// ErrNotFound for an unknown key and ErrChecksum when the blob does not match
// h or cannot be read back from disk. (Badger itself does not report a value
// it cannot read from the value log: it returns it empty.)
func (s *BadgerStore) GetState(ctx context.Context, h Handle) ([]byte, error) {
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
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if data, err = item.ValueCopy(nil); err != nil {
			// The key is there but its value is not: the value log is
			// damaged (Badger truncates a damaged value log on open).
			return fmt.Errorf("unreadable (%v): %w", err, ErrChecksum)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("get state %s: %w", h.Key, err)
	}
	if len(data) == 0 && h.Size > 0 {
		return nil, fmt.Errorf("get state %s: empty, want %d bytes: its value log entry is lost: %w", h.Key, h.Size, ErrChecksum)
	}
	if got := checksum(data); got != h.Checksum || int64(len(data)) != h.Size {
		return nil, fmt.Errorf("get state %s: %d bytes with checksum %08x, want %d bytes with checksum %08x: %w",
			h.Key, len(data), got, h.Size, h.Checksum, ErrChecksum)
	}
	return data, nil
}

// Add records c durably and applies retention: only the newest retained
// checkpoints and every savepoint stay listed, and state blobs no listed
// checkpoint refers to are deleted, both those of dropped checkpoints and
// those left behind by checkpoints older than c that never completed.
//
// The metadata of c, the new highest id and the removal of the dropped
// checkpoints' metadata are one Badger transaction, on disk when Add returns.
// The state blobs are deleted afterwards; when that fails (or the process
// dies first) the next Add or the next open deletes them, so Add still
// succeeds.
func (s *BadgerStore) Add(ctx context.Context, c *Completed) error {
	if c == nil {
		return errors.New("add checkpoint: nil")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("add checkpoint %d: %w", c.ID, err)
	}
	if c.ID < 1 {
		return fmt.Errorf("add checkpoint %d: ids start at 1", c.ID)
	}
	rec, err := encodeCompleted(c)
	if err != nil {
		return fmt.Errorf("add checkpoint %d: %w", c.ID, err)
	}
	if err := s.enter(); err != nil {
		return fmt.Errorf("add checkpoint %d: %w", c.ID, err)
	}
	defer s.life.RUnlock()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.gcMu.RLock()
	defer s.gcMu.RUnlock()

	entries, err := s.list()
	if err != nil {
		return fmt.Errorf("add checkpoint %d: %w", c.ID, err)
	}
	if slices.ContainsFunc(entries, func(e metaEntry) bool { return e.id == c.ID }) {
		return fmt.Errorf("add checkpoint %d: already in the store", c.ID)
	}
	entries = append(entries, metaEntry{id: c.ID, c: c})
	slices.SortFunc(entries, func(a, b metaEntry) int { return cmp.Compare(a.id, b.id) })

	var checkpoints []int64
	for _, e := range entries {
		if e.c != nil && e.c.Kind == KindCheckpoint {
			checkpoints = append(checkpoints, e.id)
		}
	}
	var dropped []int64
	if n := len(checkpoints) - s.retained; n > 0 {
		dropped = checkpoints[:n]
	}
	maxID := max(s.maxID.Load(), c.ID)

	err = s.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set(metaKey(c.ID), rec); err != nil {
			return err
		}
		if err := txn.Set([]byte(maxIDKey), encodeMaxID(maxID)); err != nil {
			return err
		}
		for _, id := range dropped {
			// After the Set above when c itself is dropped: the last write
			// of a key in a transaction wins.
			if err := txn.Delete(metaKey(id)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add checkpoint %d: %w", c.ID, err)
	}
	s.maxID.Store(maxID)

	entries = slices.DeleteFunc(entries, func(e metaEntry) bool { return slices.Contains(dropped, e.id) })
	// A failed sweep leaves orphans that the next sweep deletes.
	_ = s.sweep(entries, maxID, 0)
	s.kickGC()
	return nil
}

// Delete removes checkpoint or savepoint id and the state blobs that only it
// refers to (for `faultline checkpoints delete ID`). It also removes a damaged
// record. It returns an error wrapping ErrNotFound when id is not in the
// store. MaxID does not go down.
func (s *BadgerStore) Delete(ctx context.Context, id int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete checkpoint %d: %w", id, err)
	}
	if err := s.enter(); err != nil {
		return fmt.Errorf("delete checkpoint %d: %w", id, err)
	}
	defer s.life.RUnlock()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.gcMu.RLock()
	defer s.gcMu.RUnlock()

	entries, err := s.list()
	if err != nil {
		return fmt.Errorf("delete checkpoint %d: %w", id, err)
	}
	if !slices.ContainsFunc(entries, func(e metaEntry) bool { return e.id == id }) {
		return fmt.Errorf("delete checkpoint %d: %w", id, ErrNotFound)
	}
	err = s.db.Update(func(txn *badger.Txn) error { return txn.Delete(metaKey(id)) })
	if err != nil {
		return fmt.Errorf("delete checkpoint %d: %w", id, err)
	}
	entries = slices.DeleteFunc(entries, func(e metaEntry) bool { return e.id == id })
	if err := s.sweep(entries, s.maxID.Load(), id); err != nil {
		return fmt.Errorf("delete checkpoint %d: metadata deleted, state left for the next open: %w", id, err)
	}
	s.kickGC()
	return nil
}

// Latest returns the newest intact checkpoint or savepoint, or nil when there
// is none. Damaged records are skipped.
func (s *BadgerStore) Latest(ctx context.Context) (*Completed, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("latest checkpoint: %w", err)
	}
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("latest checkpoint: %w", err)
	}
	defer s.life.RUnlock()
	var latest *Completed
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Reverse = true
		opts.Prefix = []byte(metaPrefix)
		it := txn.NewIterator(opts)
		defer it.Close()
		// The largest possible key under the prefix: '9' sorts after every digit.
		for it.Seek([]byte(metaPrefix + strings.Repeat("9", 21))); it.Valid(); it.Next() {
			if e := readMeta(it.Item()); e.err == nil {
				latest = e.c
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("latest checkpoint: %w", err)
	}
	return latest, nil
}

// All returns every retained, intact checkpoint and savepoint, oldest first.
// Damaged records are skipped; Damaged lists them.
func (s *BadgerStore) All(ctx context.Context) ([]*Completed, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", err)
	}
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", err)
	}
	defer s.life.RUnlock()
	entries, err := s.list()
	if err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", err)
	}
	out := make([]*Completed, 0, len(entries))
	for _, e := range entries {
		if e.err == nil {
			out = append(out, e.c)
		}
	}
	return out, nil
}

// Damaged returns the ids of the metadata records that cannot be read or fail
// their checksum, ascending. All and Latest skip them; Verify says what is
// wrong; Delete removes them.
func (s *BadgerStore) Damaged(ctx context.Context) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list damaged checkpoints: %w", err)
	}
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("list damaged checkpoints: %w", err)
	}
	defer s.life.RUnlock()
	entries, err := s.list()
	if err != nil {
		return nil, fmt.Errorf("list damaged checkpoints: %w", err)
	}
	var out []int64
	for _, e := range entries {
		if e.err != nil {
			out = append(out, e.id)
		}
	}
	return out, nil
}

// MaxID is the highest checkpoint id ever added, 0 when none. It survives
// retention, Delete and restarts of the process.
func (s *BadgerStore) MaxID() int64 { return s.maxID.Load() }

// Verify reads the metadata of checkpoint id and every state blob it refers
// to, and checks their checksums. It returns nil when all are intact, an
// error wrapping ErrNotFound when id is not in the store, and otherwise an
// error that names each damaged part (the metadata, or a subtask and its
// blob) and wraps ErrChecksum or ErrNotFound.
func (s *BadgerStore) Verify(ctx context.Context, id int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("verify checkpoint %d: %w", id, err)
	}
	if err := s.enter(); err != nil {
		return fmt.Errorf("verify checkpoint %d: %w", id, err)
	}
	var e metaEntry
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(metaKey(id))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		e = readMeta(item)
		return nil
	})
	s.life.RUnlock()
	if err != nil {
		return fmt.Errorf("verify checkpoint %d: %w", id, err)
	}
	if e.err != nil {
		return fmt.Errorf("verify checkpoint %d: %w", id, e.err)
	}
	tasks := slices.SortedFunc(func(yield func(TaskID) bool) {
		for t := range e.c.Tasks {
			if !yield(t) {
				return
			}
		}
	}, compareTasks)
	var errs []error
	for _, task := range tasks {
		for _, h := range e.c.Tasks[task].Blobs() {
			if _, err := s.GetState(ctx, h); err != nil {
				if ctx.Err() != nil || errors.Is(err, ErrClosed) {
					return fmt.Errorf("verify checkpoint %d: %w", id, err)
				}
				errs = append(errs, fmt.Errorf("verify checkpoint %d: subtask %s: %w", id, task, err))
			}
		}
	}
	return errors.Join(errs...)
}

// metaEntry is one metadata record: its id and either the checkpoint or why
// it is damaged.
type metaEntry struct {
	id  int64
	c   *Completed
	err error
}

// list reads every metadata record, ascending by id.
func (s *BadgerStore) list() ([]metaEntry, error) {
	var out []metaEntry
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = []byte(metaPrefix)
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			out = append(out, readMeta(it.Item()))
		}
		return nil
	})
	return out, err
}

// readMeta decodes the metadata record item; a record that cannot be read is
// returned with its error.
func readMeta(item *badger.Item) metaEntry {
	key := string(item.Key())
	id, err := strconv.ParseInt(strings.TrimPrefix(key, metaPrefix), 10, 64)
	if err != nil {
		return metaEntry{id: -1, err: fmt.Errorf("metadata key %q: %w", key, ErrChecksum)}
	}
	e := metaEntry{id: id}
	if err := item.Value(func(v []byte) error {
		e.c, e.err = decodeCompleted(id, v)
		return nil
	}); err != nil {
		e.err = fmt.Errorf("metadata unreadable (%v): %w", err, ErrChecksum)
	}
	return e
}

// sweep deletes the state blobs that no intact record in entries refers to
// and whose checkpoint id is below below or equal to also (0: none). Blobs
// named after a damaged record are kept, as a damaged record's handles are
// unknown. Blobs whose key names no checkpoint are orphans too.
func (s *BadgerStore) sweep(entries []metaEntry, below, also int64) error {
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
			name := string(key[len(statePrefix):])
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
func (s *BadgerStore) kickGC() {
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
func (s *BadgerStore) reclaim() {
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
func (s *BadgerStore) flushDeletions() {
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(flushKey), nil) }); err != nil {
		return
	}
	_ = s.db.DropPrefix([]byte(flushKey))
}

// runGC rewrites one value log file, with writes held off; it reports
// whether it did.
func (s *BadgerStore) runGC() bool {
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	return s.db.RunValueLogGC(gcDiscardRatio) == nil
}

// metaKey is the Badger key of the metadata of checkpoint id; fixed-width so
// that keys sort by id.
func metaKey(id int64) []byte { return fmt.Appendf(nil, "%s%020d", metaPrefix, id) }

// blobKey is the Badger key of the state blob named key.
func blobKey(key string) []byte { return []byte(statePrefix + key) }

// blobCheckpointID is the checkpoint id in a state key made by stateKey.
func blobCheckpointID(key string) (int64, bool) {
	rest, ok := strings.CutPrefix(key, "chk-")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(num, 10, 64)
	return id, err == nil
}

func encodeMaxID(id int64) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(id))
	return binary.BigEndian.AppendUint32(b, checksum(b))
}

func decodeMaxID(v []byte) (int64, bool) {
	if len(v) != 12 || binary.BigEndian.Uint32(v[8:]) != checksum(v[:8]) {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(v[:8])), true
}

// metaRecord is the JSON of a completed checkpoint's metadata.
type metaRecord struct {
	ID             int64        `json:"id"`
	Kind           string       `json:"kind"`
	Job            string       `json:"job"`
	Mode           string       `json:"mode"`
	TriggerTime    time.Time    `json:"trigger_time"`
	CompletionTime time.Time    `json:"completion_time"`
	Tasks          []taskRecord `json:"tasks"`
}

// taskRecord is one entry of Completed.Tasks.
type taskRecord struct {
	Operator string     `json:"operator"`
	Index    int        `json:"index"`
	Ack      SubtaskAck `json:"ack"`
}

func compareTasks(a, b TaskID) int {
	return cmp.Or(cmp.Compare(a.Operator, b.Operator), cmp.Compare(a.Index, b.Index))
}

// encodeCompleted makes the metadata record of c: recordMagic, the CRC32C of
// the JSON (4 bytes, big endian), the JSON.
func encodeCompleted(c *Completed) ([]byte, error) {
	r := metaRecord{
		ID:             c.ID,
		Kind:           c.Kind.String(),
		Job:            c.Job,
		Mode:           c.Mode,
		TriggerTime:    c.TriggerTime,
		CompletionTime: c.CompletionTime,
		Tasks:          make([]taskRecord, 0, len(c.Tasks)),
	}
	for task, ack := range c.Tasks {
		r.Tasks = append(r.Tasks, taskRecord{Operator: task.Operator, Index: task.Index, Ack: ack})
	}
	slices.SortFunc(r.Tasks, func(a, b taskRecord) int {
		return compareTasks(TaskID{a.Operator, a.Index}, TaskID{b.Operator, b.Index})
	})
	payload, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	out := make([]byte, 0, len(recordMagic)+4+len(payload))
	out = append(out, recordMagic...)
	out = binary.BigEndian.AppendUint32(out, checksum(payload))
	return append(out, payload...), nil
}

// decodeCompleted reads the metadata record v stored under id. Every error
// wraps ErrChecksum.
func decodeCompleted(id int64, v []byte) (*Completed, error) {
	bad := func(format string, args ...any) (*Completed, error) {
		return nil, fmt.Errorf("metadata %s: %w", fmt.Sprintf(format, args...), ErrChecksum)
	}
	head := len(recordMagic) + 4
	if len(v) == 0 {
		return bad("record is empty: its value log entry is lost")
	}
	if len(v) < head || string(v[:len(recordMagic)]) != recordMagic {
		return bad("record of %d bytes does not start with %q", len(v), recordMagic)
	}
	payload := v[head:]
	if got, want := checksum(payload), binary.BigEndian.Uint32(v[len(recordMagic):head]); got != want {
		return bad("has checksum %08x, want %08x", got, want)
	}
	var r metaRecord
	if err := json.Unmarshal(payload, &r); err != nil {
		return bad("does not decode: %v", err)
	}
	if r.ID != id {
		return bad("says checkpoint %d", r.ID)
	}
	c := &Completed{
		ID:             r.ID,
		Job:            r.Job,
		Mode:           r.Mode,
		TriggerTime:    r.TriggerTime,
		CompletionTime: r.CompletionTime,
		Tasks:          make(map[TaskID]SubtaskAck, len(r.Tasks)),
	}
	switch r.Kind {
	case KindCheckpoint.String():
		c.Kind = KindCheckpoint
	case KindSavepoint.String():
		c.Kind = KindSavepoint
	default:
		return bad("has unknown kind %q", r.Kind)
	}
	for _, t := range r.Tasks {
		c.Tasks[TaskID{t.Operator, t.Index}] = t.Ack
	}
	return c, nil
}

// owner is the content of the OWNER file: who has the store open.
type owner struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

// writeOwner records this process as the holder of dir.
func writeOwner(dir string) error {
	args := slices.Clone(os.Args)
	if len(args) > 0 {
		args[0] = filepath.Base(args[0])
	}
	b, err := json.Marshal(owner{PID: os.Getpid(), Command: strings.Join(args, " "), Since: time.Now().UTC()})
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ownerFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, ownerFile))
}

// isBadgerLockError tells Badger's "directory is locked" error.
func isBadgerLockError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot acquire directory lock") ||
		strings.Contains(msg, "Another process is using this Badger database")
}

// describeHolder names the process that holds dir, e.g.
// "faultline (pid 1234, `faultline run --headless`)", from the OWNER file,
// checked against the pid Badger writes into its LOCK file.
func describeHolder(dir string) string {
	lockPID := 0
	if b, err := os.ReadFile(filepath.Join(dir, "LOCK")); err == nil {
		lockPID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	var o owner
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err == nil && json.Unmarshal(b, &o) == nil && o.PID > 0 && (lockPID == 0 || lockPID == o.PID) {
		cmdline := o.Command
		if len(cmdline) > 200 {
			cmdline = cmdline[:200] + "…"
		}
		name, _, _ := strings.Cut(cmdline, " ")
		if name == "" {
			name = "a process"
		}
		return fmt.Sprintf("%s (pid %d, `%s`)", name, o.PID, cmdline)
	}
	if lockPID > 0 {
		return fmt.Sprintf("another process (pid %d)", lockPID)
	}
	return "another process"
}

// Corrupt damages the stored blob key in place, keeping its handle's
// checksum, so that reading it fails as bytes damaged on disk would (the
// corrupt-checkpoint fault).
func (s *BadgerStore) Corrupt(key string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.life.RUnlock()
	s.gcMu.RLock()
	defer s.gcMu.RUnlock()
	return s.db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(blobKey(key))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("corrupt state %s: %w", key, ErrNotFound)
		}
		if err != nil {
			return err
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
		return txn.Set(blobKey(key), v)
	})
}
