package backend

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/faultline-dev/faultline/internal/dbclose"
)

// ErrBackendClosed means a Badger backend, or a snapshot of it, was used
// after the backend was closed (its attempt ended). A checkpoint whose
// snapshot meets it is declined; the next attempt takes new ones.
var ErrBackendClosed = errors.New("keyed state backend is closed")

// ErrSnapshotReleased means Encode was called a second time on a snapshot, or
// after Discard.
var ErrSnapshotReleased = errors.New("snapshot already encoded or discarded")

// ErrBackendDirInUse means two Badger backends of this process were given the
// same working directory: every subtask needs its own.
var ErrBackendDirInUse = errors.New("keyed state directory in use")

// Badger tuning (see badgerBackendOptions) and the overlay's limits.
const (
	backendMemTableSize   = 4 << 20
	backendValueThreshold = 512 << 10 // below 15% of the memtable, as Badger demands
	backendVlogFileSize   = 64 << 20

	// overlayMaxEntries and overlayMaxBytes bound the overlay: reaching either
	// flushes it to Badger. They also bound the synchronous part of a
	// snapshot, which flushes what is pending (a few milliseconds).
	overlayMaxEntries = 4096
	overlayMaxBytes   = 4 << 20

	// minTrackedChanges: the change set is dropped (the next incremental
	// snapshot holds all of the state) once it holds more keys than half the
	// state and at least this many.
	minTrackedChanges = 4096

	// cancelCheckEvery is how many entries Encode writes between two looks at
	// whether the backend is closing.
	cancelCheckEvery = 4096
)

// Badger keeps one subtask's keyed state in a Badger database in dir, so that it can exceed memory.
// It is faultline's EmbeddedRocksDBStateBackend, with Badger in RocksDB's
// place, and it supports incremental checkpoints.
//
// Storage keys are the key group (2 bytes, big endian) followed by the entry
// key the heap backend builds (state, current key, sub; see appendEntryKey),
// so a key group is a contiguous key range and the entries of one (state,
// current key) are a prefix. Values are copies of the bytes given to Put.
//
// Writes are batched: an in-memory overlay keeps the entries written, deleted
// or read since the last flush (at most overlayMaxEntries or overlayMaxBytes),
// and every read looks there first, so the subtask sees its own writes at
// once. A flush writes the overlay's dirty entries in one Badger WriteBatch
// and opens a new read transaction (reader) on what is flushed; a snapshot
// always flushes first. Because Put and Delete look the key up once per
// overlay epoch (the overlay caches what Get read), Len is exact.
//
// For incremental snapshots a change set holds the storage keys flushed
// since the previous snapshot, filled at flush time from the overlay's dirty
// keys. It is dropped, meaning "everything changed", when it grows past half
// the state, and at the start (after NewBadger and after Restore): the next
// SnapshotIncremental then gives a full snapshot, from which the chain of
// deltas starts again.
//
// A snapshot is a read-only Badger transaction: its read timestamp freezes
// the view while the subtask writes on. Encode, called once on another
// goroutine, iterates it and discards it. A snapshot that is never encoded
// holds its transaction (and keeps Badger from dropping the versions it
// sees) until Discard, until the garbage collector finds the snapshot
// unreachable (a cleanup discards it then), or until Close.
//
// Like every KeyedBackend it is owned by the subtask's goroutine; only
// Snapshot.Encode and Snapshot.Discard may run elsewhere. Errors of the
// local database (a full disk, a damaged file) panic, which fails the task:
// the runtime restarts it from the latest checkpoint.
type Badger struct {
	dir    string
	home   dbclose.Dir // dir as it was opened: Close touches only that one
	db     *badger.DB
	maxPar int
	kgs    KeyGroupRange

	currentKey string
	currentKG  int
	buf        []byte // storage key of the entry being accessed

	// reader is a read transaction on everything flushed; every flush
	// renews it. scanning counts Scans under way: no flush happens then
	// (their iterators use reader).
	reader   *badger.Txn
	scanning int

	badgerOverlay

	n int // entries in the state

	// changes are the storage keys changed since the last snapshot; nil
	// means everything (no snapshot yet, or too many changes).
	changes map[string]struct{}

	badgerViews
}

// badgerOverlay is what a Badger backend holds in memory until it flushes:
// index by storage key into entries, the entries in the order they came,
// scopes: the non-empty subs in the overlay under each (state, current
// key) prefix, for Scan.
type badgerOverlay struct {
	overlay      map[string]int32
	entries      []overlayEntry
	scopes       map[string]*[]string
	dirty        int // entries written since the last flush
	overlayBytes int
	maxEntries   int
	maxBytes     int
}

// badgerViews are a Badger backend's snapshots not yet encoded or
// released, and its closing.
type badgerViews struct {
	mu       sync.Mutex // guards closed, views and viewState of every view
	closed   bool
	views    map[*badgerView]struct{} // snapshots not yet encoded or released
	encoding sync.WaitGroup           // Encodes under way
	closing  atomic.Bool              // set by Close: Encodes under way stop early
}

var (
	_ KeyedBackend = (*Badger)(nil)
	_ Abandoner    = (*Badger)(nil)
	_ io.Closer    = (*Badger)(nil)
)

// openDirs are the working directories of the open Badger backends of this
// process: emptying a directory a live backend uses would destroy its state.
var openDirs sync.Map

// NewBadger opens a Badger backend in dir for the given key groups. dir is
// the subtask's own working directory, created if needed and emptied first
// (everything in it is deleted): the state of a new attempt comes only from
// Restore. Close removes it. Two open backends of this process cannot share
// a directory (ErrBackendDirInUse).
func NewBadger(dir string, maxParallelism int, kgs KeyGroupRange) (*Badger, error) {
	if dir == "" {
		return nil, errors.New("open keyed state: no directory given")
	}
	if maxParallelism < 1 || maxParallelism > 1<<16 {
		return nil, fmt.Errorf("open keyed state in %s: max parallelism %d is outside 1-%d", dir, maxParallelism, 1<<16)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open keyed state in %s: %w", dir, err)
	}
	if filepath.Dir(abs) == abs {
		return nil, fmt.Errorf("open keyed state: will not empty %s, the root of a file system", abs)
	}
	if _, loaded := openDirs.LoadOrStore(abs, true); loaded {
		return nil, fmt.Errorf("open keyed state in %s: %w by another subtask", dir, ErrBackendDirInUse)
	}
	fail := func(err error) (*Badger, error) {
		openDirs.Delete(abs)
		return nil, fmt.Errorf("open keyed state in %s: %w", dir, err)
	}
	if err := os.RemoveAll(abs); err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return fail(err)
	}
	db, err := badger.Open(badgerBackendOptions(abs))
	if err != nil {
		return fail(err)
	}
	b := &Badger{dir: abs, home: dbclose.At(abs), db: db, maxPar: maxParallelism, kgs: kgs}
	b.badgerOverlay = badgerOverlay{overlay: map[string]int32{}, scopes: map[string]*[]string{},
		maxEntries: overlayMaxEntries, maxBytes: overlayMaxBytes}
	b.views = map[*badgerView]struct{}{}
	b.reader = db.NewTransaction(false)
	return b, nil
}

// badgerBackendOptions are the options of a backend's database, chosen like
// the checkpoint store's (checkpoint/badger.go): Badger never logs, no
// compression and no block cache, small memtables (here 4 MiB: state is
// written far more often than checkpoints). Unlike the store it does not
// sync writes: the directory is a working copy that the next attempt empties,
// and durability comes from checkpoints. Values up to 512 KiB stay in the LSM
// tree, where compaction reclaims overwritten versions; larger ones go to the
// value log, which is never garbage collected while the attempt runs.
func badgerBackendOptions(dir string) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(nil).
		WithSyncWrites(false).
		WithMemTableSize(backendMemTableSize).
		WithNumMemtables(3).
		WithValueThreshold(backendValueThreshold).
		WithValueLogFileSize(backendVlogFileSize).
		WithCompression(options.None).
		WithBlockCacheSize(0).
		WithNumCompactors(2).
		WithMetricsEnabled(false).
		WithDetectConflicts(false) // one writer: the subtask
}

// Abandon tells the backend it is going away (its subtask is being torn
// down): snapshots being encoded stop early with ErrBackendClosed, so that
// a failover does not wait for them. Close must still be called.
func (b *Badger) Abandon() { b.closing.Store(true) }

// Dir is the backend's working directory.
func (b *Badger) Dir() string { return b.dir }

// KeyGroups implements KeyedBackend.
func (b *Badger) KeyGroups() KeyGroupRange { return b.kgs }

// SetCurrentKey implements KeyedBackend. A key outside the subtask's key
// groups is a routing bug and panics.
func (b *Badger) SetCurrentKey(key string) { b.setCurrent(key, KeyGroupFor(key, b.maxPar)) }

// SetCurrentKeyInGroup implements GroupedKeys.
func (b *Badger) SetCurrentKeyInGroup(key string, kg int) {
	checkKeyGroup(key, kg, b.maxPar)
	b.setCurrent(key, kg)
}

func (b *Badger) setCurrent(key string, kg int) {
	b.currentKey = key
	b.currentKG = kg
	if !b.kgs.Contains(b.currentKG) {
		panic(fmt.Sprintf("key %q is in key group %d, outside this subtask's %s", key, b.currentKG, b.kgs))
	}
}

// CurrentKey implements KeyedBackend.
func (b *Badger) CurrentKey() string { return b.currentKey }

// Len implements KeyedBackend.
func (b *Badger) Len() int { return b.n }

// Close discards the snapshots not yet encoded, waits for (and cuts short)
// the Encodes under way, closes the database and removes its directory.
// Closing twice does nothing.
func (b *Badger) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.closing.Store(true)
	for v := range b.views {
		if v.state == viewPending {
			v.txn.Discard()
			v.state = viewDone
			delete(b.views, v)
		}
	}
	b.mu.Unlock()
	b.encoding.Wait()
	b.reader.Discard()
	err := dbclose.Close(b.db, b.home, 0)
	if b.home.Gone() {
		// Removed, or made again by another run: nothing here is ours.
	} else if rerr := os.RemoveAll(b.dir); rerr != nil {
		err = errors.Join(err, rerr)
	}
	openDirs.Delete(b.dir)
	if err != nil {
		return fmt.Errorf("close keyed state in %s: %w", b.dir, err)
	}
	return nil
}
