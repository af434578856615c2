package badgerstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/dbclose"
)

// ErrLocked means another process (or another Store in this process)
// holds the checkpoint store's directory. Stop it, or use another directory.
var ErrLocked = errors.New("checkpoint store locked")

// ErrClosed means the Store was used after Close.
var ErrClosed = errors.New("checkpoint store is closed")

// ErrLost means a checkpoint the store completed is gone: its metadata record
// is missing, though the store still records that it holds it (in HELD, or
// as the newest, see Store.Newest). Its files were damaged or lost (a
// deleted memtable log takes the newest records with it). A resumed run
// goes back to the newest intact checkpoint before it; `faultline
// checkpoints delete` of its id acknowledges the loss.
var ErrLost = errors.New("checkpoint lost")

// Badger tuning: see Open and badgerOptions.
const (
	memTableSize     = 1 << 20
	valueThreshold   = 1 << 10
	valueLogFileSize = 32 << 20
	gcDiscardRatio   = 0.5
)

// MaxStateSize is the largest state blob Store.PutState accepts. Blobs
// above pieceSize are stored in pieces, as one Badger value must fit in one
// value log file.
const MaxStateSize = 1 << 30

// Store is a checkpoint.Store on a Badger database in one directory (Flink:
// CheckpointStorage + CompletedCheckpointStore on disk). It keeps the newest
// retained checkpoints (Flink: state.checkpoints.num-retained) and every
// savepoint, like checkpoint.MemoryStore, and survives the process: a checkpoint is
// listed once Add has returned, and stays listed through a crash at any
// moment.
//
// Metadata records that fail their checksum or cannot be read are "damaged":
// All and Latest skip them, so that a restore uses the newest intact
// checkpoint; Damaged lists them and Verify explains what is wrong. Retention
// never removes a damaged record (it cannot tell a damaged savepoint from a
// damaged checkpoint), nor the state blobs of its own id; Delete does.
//
// The store also records the ids of the records it holds, in a file beside
// Badger's (HELD, see held), and the newest id it must still hold (Newest):
// when one of those records is missing altogether, the checkpoint is "lost"
// (ErrLost) and Damaged lists it too, so that damage that takes a record
// away with its key (a deleted memtable log) is seen as well as damage that
// leaves a record unreadable.
//
// It is safe for concurrent use. Locks are taken in this order: life (read
// for every operation, write for Close and Clear), then writeMu (Add and
// Delete), then gcMu (read for every write to Badger, write for a value log
// GC run and for Clear), then gcCheck (whether GC may run).
type Store struct {
	dir      string
	home     dbclose.Dir // dir as it was opened: Close touches only that one
	retained int
	db       *badger.DB
	readOnly bool // see OpenReadOnly

	life   sync.RWMutex
	closed bool // under life

	writeMu sync.Mutex // serialises Add and Delete: metadata and retention
	maxID   atomic.Int64
	newest  atomic.Int64 // written under writeMu
	// must holds the ids the store must hold, ascending (see held): written
	// under writeMu, raised after Badger adds a record and lowered before
	// it deletes one, so that a reader that loads it before reading Badger
	// never takes a record being added or deleted for a lost one.
	must atomic.Pointer[[]int64]

	// gcMu keeps value log GC apart from writes: Badger v4.9.6's GC reads
	// the memtable's max version unsynchronised with the write goroutine
	// (a data race the race detector reports), so writes hold it shared and
	// a GC run holds it exclusively.
	gcMu sync.RWMutex

	// gcCheck guards gcChecked and gcOK: whether value log GC may run (see
	// gcSafe). Taken alone, or after gcMu (Clear).
	gcCheck   sync.Mutex
	gcChecked bool
	gcOK      bool

	// garbage counts the bytes of state blobs deleted since the memtables
	// were last flushed for the reclaimer (see flushDeletions).
	garbage atomic.Int64

	gcKick chan struct{} // buffered 1: ask the reclaimer to run value log GC
	gcQuit chan struct{}
	gcDone chan struct{}
}

var (
	_ checkpoint.Store        = (*Store)(nil)
	_ checkpoint.PartsStorage = (*Store)(nil)
)

// init reads the highest id, the newest and the ids the store must hold
// (see settle), and deletes orphan state blobs. Nothing else uses the store
// yet, so every blob no checkpoint refers to is an orphan. Opened to write,
// it brings HELD up to what the store holds (see held).
func (s *Store) init() error {
	var in storeIDs
	err := s.db.View(func(txn *badger.Txn) (err error) {
		if in.sysMax, in.sysMaxOK, err = readID(txn, maxIDKey); err != nil {
			return err
		}
		in.sysNewest, in.sysNewestOK, err = readID(txn, newestKey)
		return err
	})
	if err != nil {
		return fmt.Errorf("read max id: %w", err)
	}
	if in.held, in.heldOK, err = readHeld(s.dir); err != nil {
		return fmt.Errorf("read %s: %w", heldFile, err)
	}
	entries, err := s.list()
	if err != nil {
		return err
	}
	in.present = presentIDs(entries)
	maxID, newest, must := settle(in)
	s.maxID.Store(maxID)
	s.newest.Store(newest)
	s.must.Store(&must)
	if s.readOnly {
		return nil
	}
	if !in.heldOK || in.held.maxID != maxID || !slices.Equal(in.held.ids, must) {
		// Behind the store after a crash, or missing: a failure leaves
		// it so, which reports nothing falsely.
		_ = writeHeld(s.dir, held{maxID: maxID, ids: must})
	}
	if err := s.sweep(entries, math.MaxInt64, 0); err != nil {
		return fmt.Errorf("delete orphan state: %w", err)
	}
	return nil
}

// readID reads sys/max-id or sys/newest; ok is false when the key is missing
// or its value damaged.
func readID(txn *badger.Txn, key string) (id int64, ok bool, err error) {
	item, err := txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	err = item.Value(func(v []byte) error {
		id, ok = decodeID(v)
		return nil
	})
	return id, ok, err
}

// Dir is the directory the store lives in.
func (s *Store) Dir() string { return s.dir }

var _ checkpoint.Located = (*Store)(nil)

// Close waits for background work, releases the directory and closes the
// database. Closing twice is a no-op.
func (s *Store) Close() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.gcQuit)
	<-s.gcDone
	if !s.readOnly && !s.home.Gone() { // a read-only store wrote no OWNER; a new run's dir has its own
		_ = os.Remove(filepath.Join(s.dir, ownerFile))
	}
	if err := dbclose.Close(s.db, s.home, 0); err != nil {
		return fmt.Errorf("close checkpoint store %s: %w", s.dir, err)
	}
	return nil
}

// enter takes the read side of the lifecycle lock; the caller must call
// s.life.RUnlock when it returns nil.
func (s *Store) enter() error {
	s.life.RLock()
	if s.closed {
		s.life.RUnlock()
		return ErrClosed
	}
	return nil
}

// enterWrite is enter for the methods that write: it also refuses a
// read-only store.
func (s *Store) enterWrite() error {
	if s.readOnly {
		return fmt.Errorf("%w: %s", ErrReadOnly, s.dir)
	}
	return s.enter()
}

// Add records c durably and applies retention: only the newest retained
// checkpoints and every savepoint stay listed, and state blobs no listed
// checkpoint refers to are deleted, both those of dropped checkpoints and
// those left behind by checkpoints older than c that never completed.
//
// The metadata of c, the new highest id and the removal of the dropped
// checkpoints' metadata are one Badger transaction, on disk when Add returns.
// HELD (see held) is written without the dropped ids before it and with c's
// after it. The state blobs are deleted afterwards; when that fails (or the
// process dies first) the next Add or the next open deletes them, so Add
// still succeeds.
func (s *Store) Add(ctx context.Context, c *checkpoint.Completed) error {
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
	if err := s.enterWrite(); err != nil {
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
	entries, dropped := retention(append(entries, metaEntry{id: c.ID, c: c}), s.retained)
	maxID := max(s.maxID.Load(), c.ID)
	newest := max(s.newest.Load(), c.ID)
	must := *s.must.Load()
	if len(dropped) > 0 {
		// Their ids leave HELD before Badger deletes their records (see held).
		must = without(must, dropped...)
		if err := writeHeld(s.dir, held{maxID: s.maxID.Load(), ids: must}); err != nil {
			return fmt.Errorf("add checkpoint %d: record in %s the checkpoints retention drops: %w", c.ID, heldFile, err)
		}
		s.must.Store(&must)
	}
	if err := s.commitAdd(c.ID, rec, maxID, newest, dropped); err != nil {
		return fmt.Errorf("add checkpoint %d: %w", c.ID, err)
	}
	s.maxID.Store(maxID)
	s.newest.Store(newest)
	if !slices.Contains(dropped, c.ID) {
		must = with(must, c.ID)
	}
	s.must.Store(&must)
	// Its id enters HELD now that Badger holds its record. A failure
	// leaves HELD behind the store, which reports nothing falsely; the
	// next Add or open writes it.
	_ = writeHeld(s.dir, held{maxID: maxID, ids: must})

	// A failed sweep leaves orphans that the next sweep deletes.
	_ = s.sweep(entries, maxID, 0)
	s.kickGC()
	return nil
}

// retention sorts entries by id and splits off the oldest checkpoints
// beyond the newest retained ones: it returns the entries kept and the ids
// dropped. Savepoints and damaged records are always kept.
func retention(entries []metaEntry, retained int) (kept []metaEntry, dropped []int64) {
	slices.SortFunc(entries, func(a, b metaEntry) int { return cmp.Compare(a.id, b.id) })
	var checkpoints []int64
	for _, e := range entries {
		if e.c != nil && e.c.Kind == checkpoint.KindCheckpoint {
			checkpoints = append(checkpoints, e.id)
		}
	}
	if n := len(checkpoints) - retained; n > 0 {
		dropped = checkpoints[:n]
	}
	kept = slices.DeleteFunc(entries, func(e metaEntry) bool { return slices.Contains(dropped, e.id) })
	return kept, dropped
}

// commitAdd is Add's Badger transaction: the record rec of checkpoint id,
// the highest id and the newest, and the deletion of the records of the
// checkpoints dropped.
func (s *Store) commitAdd(id int64, rec []byte, maxID, newest int64, dropped []int64) error {
	return s.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set(metaKey(id), rec); err != nil {
			return err
		}
		if err := txn.Set([]byte(maxIDKey), encodeID(maxID)); err != nil {
			return err
		}
		if err := txn.Set([]byte(newestKey), encodeID(newest)); err != nil {
			return err
		}
		for _, d := range dropped {
			// After the Set above when the checkpoint itself is dropped:
			// the last write of a key in a transaction wins.
			if err := txn.Delete(metaKey(d)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Delete removes checkpoint or savepoint id and the state blobs that only it
// refers to (for `faultline checkpoints delete ID`). It also removes a damaged
// record, and deleting a lost one (see ErrLost) acknowledges the loss. It
// returns an error wrapping ErrNotFound when id is not in the store. MaxID
// does not go down; Newest goes down to the next lower id the store holds
// when id was the newest.
func (s *Store) Delete(ctx context.Context, id int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete checkpoint %d: %w", id, err)
	}
	if err := s.enterWrite(); err != nil {
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
	must := *s.must.Load()
	present := slices.ContainsFunc(entries, func(e metaEntry) bool { return e.id == id })
	if !present && !slices.Contains(must, id) {
		return fmt.Errorf("delete checkpoint %d: %w", id, checkpoint.ErrNotFound)
	}
	entries = slices.DeleteFunc(entries, func(e metaEntry) bool { return e.id == id })
	must = without(must, id)
	newest := s.newest.Load()
	if id == newest {
		newest = 0
		for _, m := range must {
			if m < id {
				newest = max(newest, m)
			}
		}
	}
	// Its id leaves HELD before Badger deletes its record (see held).
	if err := writeHeld(s.dir, held{maxID: s.maxID.Load(), ids: must}); err != nil {
		return fmt.Errorf("delete checkpoint %d: record it in %s: %w", id, heldFile, err)
	}
	s.must.Store(&must)
	maxID := s.maxID.Load()
	err = s.db.Update(func(txn *badger.Txn) error {
		if err := txn.Delete(metaKey(id)); err != nil {
			return err
		}
		if err := txn.Set([]byte(maxIDKey), encodeID(maxID)); err != nil { // back, if it was lost
			return err
		}
		return txn.Set([]byte(newestKey), encodeID(newest))
	})
	if err != nil {
		return fmt.Errorf("delete checkpoint %d: %w", id, err)
	}
	s.newest.Store(newest)
	if err := s.sweep(entries, s.maxID.Load(), id); err != nil {
		return fmt.Errorf("delete checkpoint %d: metadata deleted, state left for the next open: %w", id, err)
	}
	s.kickGC()
	return nil
}

// Clear deletes every checkpoint, savepoint and state blob, damaged or not,
// and resets MaxID and Newest to 0, so that ids start at 1 again (for
// `faultline run --fresh`). Nothing else runs on the store meanwhile: Badger
// drops its data only while nothing reads it.
func (s *Store) Clear(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("clear checkpoint store: %w", err)
	}
	if s.readOnly {
		return fmt.Errorf("clear checkpoint store: %w: %s", ErrReadOnly, s.dir)
	}
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return fmt.Errorf("clear checkpoint store: %w", ErrClosed)
	}
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	// HELD is emptied before Badger drops the records (see held).
	if err := writeHeld(s.dir, held{}); err != nil {
		return fmt.Errorf("clear checkpoint store %s: %w", s.dir, err)
	}
	s.must.Store(&[]int64{})
	if err := s.db.DropAll(); err != nil {
		return fmt.Errorf("clear checkpoint store %s: %w", s.dir, err)
	}
	err := s.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set([]byte(maxIDKey), encodeID(0)); err != nil {
			return err
		}
		return txn.Set([]byte(newestKey), encodeID(0))
	})
	if err != nil {
		return fmt.Errorf("clear checkpoint store %s: %w", s.dir, err)
	}
	s.maxID.Store(0)
	s.newest.Store(0)
	s.garbage.Store(0)
	s.gcCheck.Lock()
	s.gcChecked = false // the value logs checked before are gone
	s.gcCheck.Unlock()
	return nil
}

// Latest returns the newest intact checkpoint or savepoint, or nil when there
// is none. Damaged records are skipped.
func (s *Store) Latest(ctx context.Context) (*checkpoint.Completed, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("latest checkpoint: %w", err)
	}
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("latest checkpoint: %w", err)
	}
	defer s.life.RUnlock()
	var latest *checkpoint.Completed
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
func (s *Store) All(ctx context.Context) ([]*checkpoint.Completed, error) {
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
	out := make([]*checkpoint.Completed, 0, len(entries))
	for _, e := range entries {
		if e.err == nil {
			out = append(out, e.c)
		}
	}
	return out, nil
}

// Damaged returns the ids of the metadata records that cannot be read or fail
// their checksum, and of those the store must hold whose record is missing
// (lost, see ErrLost), ascending. All and Latest skip them; Verify says what
// is wrong; Delete removes them.
func (s *Store) Damaged(ctx context.Context) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list damaged checkpoints: %w", err)
	}
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("list damaged checkpoints: %w", err)
	}
	defer s.life.RUnlock()
	must := *s.must.Load() // before Badger is read: see Store.must
	entries, err := s.list()
	if err != nil {
		return nil, fmt.Errorf("list damaged checkpoints: %w", err)
	}
	out := lostIDs(must, presentIDs(entries))
	for _, e := range entries {
		if e.err != nil {
			out = append(out, e.id)
		}
	}
	slices.Sort(out)
	return out, nil
}

// MaxID is the highest checkpoint id ever added, 0 when none. It survives
// retention, Delete and restarts of the process; only Clear resets it.
func (s *Store) MaxID() int64 { return s.maxID.Load() }

// Newest is the newest checkpoint or savepoint id the store must still hold,
// 0 when none: set by Add, lowered only by Delete of that id. When its
// metadata record is missing, the checkpoint is lost (ErrLost). A store
// written before the store kept it (in sys/newest or HELD) takes MaxID.
func (s *Store) Newest() int64 { return s.newest.Load() }

// Verify reads the metadata of checkpoint id and every state blob it refers
// to, and checks their checksums. It returns nil when all are intact, an
// error wrapping ErrLost when the store must hold id and its record is
// missing (see held), an
// error wrapping ErrNotFound when id is not in the store otherwise, and an
// error that names each damaged part (the metadata, or a subtask and its
// blob) and wraps ErrChecksum or ErrNotFound.
func (s *Store) Verify(ctx context.Context, id int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("verify checkpoint %d: %w", id, err)
	}
	if err := s.enter(); err != nil {
		return fmt.Errorf("verify checkpoint %d: %w", id, err)
	}
	var e metaEntry
	must := *s.must.Load() // before Badger is read: see Store.must
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(metaKey(id))
		if errors.Is(err, badger.ErrKeyNotFound) && slices.Contains(must, id) {
			return fmt.Errorf("the store completed it, but its metadata record is gone "+
				"(a file of the store that held it, such as a memtable log *%s, was deleted or lost): %w", memLogExt, ErrLost)
		}
		if errors.Is(err, badger.ErrKeyNotFound) {
			return checkpoint.ErrNotFound
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
	tasks := slices.SortedFunc(func(yield func(checkpoint.TaskID) bool) {
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
