package backend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"faultline/internal/dbclose"
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

	// The overlay: index by storage key into entries, the entries in the
	// order they came, scopes: the non-empty subs in the overlay under each
	// (state, current key) prefix, for Scan.
	overlay      map[string]int32
	entries      []overlayEntry
	scopes       map[string]*[]string
	dirty        int // entries written since the last flush
	overlayBytes int
	maxEntries   int
	maxBytes     int

	n int // entries in the state

	// changes are the storage keys changed since the last snapshot; nil
	// means everything (no snapshot yet, or too many changes).
	changes map[string]struct{}

	mu       sync.Mutex // guards closed, views and viewState of every view
	closed   bool
	views    map[*badgerView]struct{} // snapshots not yet encoded or released
	encoding sync.WaitGroup           // Encodes under way
	closing  atomic.Bool              // set by Close: Encodes under way stop early
}

var _ KeyedBackend = (*Badger)(nil)

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
	b := &Badger{
		dir:        abs,
		db:         db,
		maxPar:     maxParallelism,
		kgs:        kgs,
		overlay:    map[string]int32{},
		scopes:     map[string]*[]string{},
		maxEntries: overlayMaxEntries,
		maxBytes:   overlayMaxBytes,
		views:      map[*badgerView]struct{}{},
	}
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

// Len implements KeyedBackend.
func (b *Badger) Len() int { return b.n }

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
	err := dbclose.Close(b.db, b.dir, 0)
	if rerr := os.RemoveAll(b.dir); rerr != nil {
		err = errors.Join(err, rerr)
	}
	openDirs.Delete(b.dir)
	if err != nil {
		return fmt.Errorf("close keyed state in %s: %w", b.dir, err)
	}
	return nil
}
