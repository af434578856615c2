package badgerstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"golang.org/x/sys/unix"

	"github.com/faultline-dev/faultline/internal/dbclose"
	"github.com/faultline-dev/faultline/internal/smallfile"
)

// ErrNoStore means the directory holds no checkpoint store, or does not
// exist: the state dir given is probably not the one meant.
var ErrNoStore = errors.New("no checkpoint store")

// ErrReadOnly means a write (PutState, Add, Delete, Clear, Corrupt) to a
// store opened with OpenReadOnly. Open it with Open to
// change it.
var ErrReadOnly = errors.New("checkpoint store is open read-only")

// ErrNeedsRecovery means the store was left by a process that died holding it
// (or holds files only a read-write open can set right), and its directory
// cannot be written, so it cannot be opened even to read it. Open it where
// the state dir is writable, or copy the state dir somewhere writable and
// open the copy.
var ErrNeedsRecovery = errors.New("checkpoint store needs recovery")

// ErrLockFileInTheWay means something other than a file (a folder, a named
// pipe) stands where Badger writes its lock file (LOCK, which holds only the
// pid of the process that has the store open), so the store cannot be
// opened to write. The store itself is intact: remove what stands there and
// it opens again, with every checkpoint.
var ErrLockFileInTheWay = errors.New("checkpoint store cannot write its lock file")

// ErrHeldFileInTheWay means something other than a file (a folder, a named
// pipe) stands where the store writes HELD, its list of the checkpoints it
// holds (see Store), so the store cannot be opened to write. The
// store itself is intact: remove what stands there and it opens again, with
// every checkpoint.
var ErrHeldFileInTheWay = errors.New("checkpoint store cannot write its list of checkpoints")

// OpenOption changes how Open opens a store.
type OpenOption func(*openConfig)

// openConfig is what the OpenOptions chose.
type openConfig struct {
	existing bool // fail with ErrNoStore rather than create a store
	readOnly bool // refuse writes (a read-only open that had to recover)
}

// Existing makes Open open only a store that exists: a missing
// directory, or one without a store, is an error wrapping ErrNoStore, and
// nothing is created.
func Existing() OpenOption { return func(c *openConfig) { c.existing = true } }

// Open opens (creating, unless Existing is given) the checkpoint
// store in dir (Flink: CheckpointStorage + CompletedCheckpointStore on disk)
// that keeps the newest retained checkpoints (at least 1) plus every
// savepoint.
//
// Opening deletes the state blobs that no checkpoint refers to: those of
// checkpoints that never completed before the previous process stopped. When
// another process (or another Store of this process) has dir open, it
// returns an error wrapping ErrLocked that names dir and that process.
//
// Before Badger opens the store, every table file is read and checked
// against its checksums, and the MANIFEST that lists them is replayed: damage
// there returns an error wrapping ErrDamaged that names the file (Badger
// would panic, or silently drop the table). A damaged DISCARD or KEYREGISTRY,
// which hold nothing the store needs, is replaced.
//
// Badger runs with 1 MiB memtables (an open takes about 10 ms and the store
// holds 1–6 MiB of heap), synchronous writes, no compression and no block
// cache; values of 1 KiB and more (state blobs, large metadata records) live
// in value log files of 32 MiB; a state blob over 8 MiB is stored in pieces
// of 8 MiB, up to MaxStateSize.
// Table blocks and values are checked against their checksums when read. The
// space of deleted blobs is reclaimed in the background by value log GC (see
// reclaim). Badger never logs.
func Open(dir string, retained int, opts ...OpenOption) (*Store, error) {
	var cfg openConfig
	for _, o := range opts {
		o(&cfg)
	}
	if dir == "" {
		return nil, errors.New("open checkpoint store: no directory given")
	}
	if cfg.existing {
		if err := isDir(dir); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open checkpoint store: %w", err)
	}
	if err := prepare(dir, cfg); err != nil {
		return nil, err
	}
	db, err := openDB(badgerOptions(dir))
	if err != nil {
		return nil, openError(dir, err)
	}
	s := newStore(dir, retained, db)
	s.readOnly = cfg.readOnly
	if err := s.init(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open checkpoint store %s: %w", dir, err)
	}
	if s.readOnly {
		close(s.gcDone) // no writes, nothing to reclaim
		return s, nil
	}
	// The owner file is advisory: a store that cannot say who holds it still
	// works, so a failure to write it is not an error.
	_ = writeOwner(dir)
	go s.reclaim()
	s.kickGC()
	return s, nil
}

// OpenReadOnly opens the checkpoint store in dir to read it, for
// the commands that only look (list, inspect, verify): it never creates
// anything, and every write returns an error wrapping ErrReadOnly. A dir
// that does not exist or holds no store is an error wrapping ErrNoStore.
//
// Badger opens read-only, with a shared lock on dir: while a process has the
// store open to write, it returns an error wrapping ErrLocked that names it.
// A store left by a process that died needs Badger to replay and truncate
// its memtable log, which a read-only open cannot: then, when dir is
// writable, it falls back to a read-write open that recovers the store (as
// the next run would) and still refuses writes; otherwise it returns an
// error wrapping ErrNeedsRecovery that says what to do. Damage is reported
// as Open does.
func OpenReadOnly(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("open checkpoint store: no directory given")
	}
	if err := isDir(dir); err != nil {
		return nil, err
	}
	unlock, err := lockDir(dir, false)
	if err != nil {
		return nil, err
	}
	in, err := inspect(dir)
	unlock()
	switch {
	case err != nil:
		return nil, openError(dir, err)
	case in.empty:
		return nil, noStore(dir)
	case len(in.recover)+len(in.replace) > 0:
		why := slices.Clone(in.recover)
		for _, name := range in.replace {
			why = append(why, "damaged "+name+" replaced")
		}
		return recoverReadOnly(dir, why)
	}
	db, err := openDB(badgerOptions(dir).WithReadOnly(true))
	if err != nil && strings.Contains(err.Error(), badger.ErrTruncateNeeded.Error()) {
		return recoverReadOnly(dir, []string{"its memtable log truncated"})
	}
	if err != nil {
		return nil, openError(dir, err)
	}
	s := newStore(dir, 1, db)
	s.readOnly = true
	if err := s.init(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open checkpoint store %s: %w", dir, err)
	}
	close(s.gcDone)
	return s, nil
}

// recoverReadOnly opens the store in dir, which a read-only open cannot open
// for the reasons why, read-write for Badger to recover it, refusing writes;
// or, when dir cannot be written, says what to do.
func recoverReadOnly(dir string, why []string) (*Store, error) {
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return nil, fmt.Errorf("%w: %s needs its %s before it can be read, which needs write access (%v): "+
			"run the command where the state dir is writable, or on a writable copy of it", ErrNeedsRecovery, dir, strings.Join(why, ", "), err)
	}
	return Open(dir, 1, Existing(), func(c *openConfig) { c.readOnly = true })
}

// newStore is the store on db, not yet initialised.
func newStore(dir string, retained int, db *badger.DB) *Store {
	return &Store{
		dir:      dir,
		home:     dbclose.At(dir),
		retained: max(retained, 1),
		db:       db,
		gcKick:   make(chan struct{}, 1),
		gcQuit:   make(chan struct{}),
		gcDone:   make(chan struct{}),
	}
}

// isDir returns an error wrapping ErrNoStore when dir does not exist.
func isDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return noStore(dir)
	case err != nil:
		return fmt.Errorf("open checkpoint store: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("open checkpoint store: %s is not a directory", dir)
	}
	return nil
}

// noStore says that dir holds no store.
func noStore(dir string) error {
	return fmt.Errorf("%w in %s", ErrNoStore, dir)
}

// prepare inspects the store in dir for a read-write open, under dir's lock,
// and makes the repairs Badger cannot: it removes empty value log files and
// damaged DISCARD and KEYREGISTRY files. With cfg.existing, a dir without a
// store is an error wrapping ErrNoStore.
func prepare(dir string, cfg openConfig) error {
	unlock, err := lockDir(dir, true)
	if err != nil {
		return err
	}
	defer unlock()
	if err := checkLockFile(dir); err != nil {
		return err
	}
	if !cfg.readOnly { // a store that refuses writes never writes HELD
		if err := checkHeldFile(dir); err != nil {
			return err
		}
	}
	in, err := inspect(dir)
	if err != nil {
		return openError(dir, err)
	}
	if in.empty && cfg.existing {
		return noStore(dir)
	}
	if _, err := removeEmptyValueLogs(dir); err != nil {
		return fmt.Errorf("open checkpoint store %s: %w", dir, err)
	}
	for _, name := range in.replace {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("open checkpoint store %s: replace damaged %s: %w", dir, name, err)
		}
	}
	return nil
}

// checkLockFile returns an error wrapping ErrLockFileInTheWay when
// something other than a regular file stands where Badger writes its lock
// file in dir (a read-write open writes it; a read-only one does not).
func checkLockFile(dir string) error {
	return inTheWay(dir, lockFile, ErrLockFileInTheWay, "the pid of the process that opens it")
}

// checkHeldFile returns an error wrapping ErrHeldFileInTheWay when
// something other than a regular file stands where the store writes HELD
// in dir (a read-write open writes it; a read-only one does not).
func checkHeldFile(dir string) error {
	return inTheWay(dir, heldFile, ErrHeldFileInTheWay, "the ids of the checkpoints it holds")
}

// inTheWay returns an error wrapping sentinel when something other than a
// regular file stands at name in dir, where the store writes what.
func inTheWay(dir, name string, sentinel error, what string) error {
	path := filepath.Join(dir, name)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().IsRegular() {
		return nil // the store makes a missing one
	}
	it := "it"
	if fi.IsDir() {
		it = "that folder"
	}
	return fmt.Errorf("%w: %s is %s, where the store writes %s (no checkpoint is kept there): remove %s and try again",
		sentinel, path, smallfile.Kind(fi.Mode()), what, it)
}

// Remove deletes the checkpoint store in dir and dir itself, for a store too
// damaged to open (`faultline run --fresh`). It refuses with an error
// wrapping ErrLocked while a process has the store open, and deletes only a
// store: when dir holds a file that is not one of a store's, it deletes
// nothing and says which. An empty folder where a file of the store belongs
// (a LOCK or a table file replaced by a folder) goes too; a folder with
// something in it is not a store's. A dir that does not exist is not an
// error.
func Remove(dir string) error {
	if dir == "" {
		return errors.New("remove checkpoint store: no directory given")
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	unlock, err := lockDir(dir, true)
	if err != nil {
		return fmt.Errorf("remove checkpoint store: %w", err)
	}
	defer unlock()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("remove checkpoint store: %w", err)
	}
	for _, e := range entries {
		switch {
		case isStoreFile(e):
		case e.IsDir() && isStoreName(e.Name()) && isEmptyDir(filepath.Join(dir, e.Name())):
		case e.IsDir():
			return fmt.Errorf("remove checkpoint store: %s holds the folder %s, with files in it, which is not a checkpoint store's: remove it yourself if it should go",
				dir, e.Name())
		default:
			return fmt.Errorf("remove checkpoint store: %s holds %s, which is not a checkpoint store's: remove it yourself if it should go",
				dir, e.Name())
		}
	}
	// HELD goes first: a store it outlived would list every checkpoint as
	// lost (see held).
	rank := func(e fs.DirEntry) int {
		if e.Name() == heldFile {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(entries, func(a, b fs.DirEntry) int { return rank(a) - rank(b) })
	for _, e := range entries {
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("remove checkpoint store: %w", err)
		}
	}
	if err := os.Remove(dir); err != nil {
		return fmt.Errorf("remove checkpoint store: %w", err)
	}
	return nil
}

// isStoreFile tells the files Badger and the store keep in a store's
// directory.
func isStoreFile(e fs.DirEntry) bool {
	return !e.IsDir() && isStoreName(e.Name())
}

// isEmptyDir reports whether path is a folder with nothing in it.
func isEmptyDir(path string) bool {
	entries, err := os.ReadDir(path)
	return err == nil && len(entries) == 0
}

// isStoreName tells the names of the files Badger and the store keep in a
// store's directory.
func isStoreName(name string) bool {
	switch name {
	case manifestFile, "MANIFEST-REWRITE", keyRegistryFile, "REWRITE-KEYREGISTRY", discardFile, lockFile, ownerFile, ownerFile + ".tmp",
		heldFile, heldFile + ".tmp":
		return true
	default:
		ext := filepath.Ext(name)
		num := strings.TrimSuffix(name, ext)
		_, err := strconv.ParseUint(num, 10, 64)
		return err == nil && (ext == tableExt || ext == valueLogExt || ext == memLogExt)
	}
}

// lockDir takes Badger's own lock on dir (flock on the directory), exclusive
// or shared, so that the store's files are inspected and repaired only while
// no process has it open; it returns an error wrapping ErrLocked when one
// has. The lock must be released before Badger takes it.
func lockDir(dir string, exclusive bool) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint store: %w", err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, lockedError(dir)
		}
		return nil, fmt.Errorf("open checkpoint store: lock %s: %w", dir, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// InUse says whether a process has the checkpoint store in dir open (holds
// Badger's lock on it); false when there is no store there.
func InUse(dir string) bool {
	unlock, err := lockDir(dir, false)
	if err != nil {
		return errors.Is(err, ErrLocked)
	}
	unlock()
	return false
}

// lockedError says that another process holds the store in dir.
func lockedError(dir string) error {
	return fmt.Errorf("%w: %s is in use by %s", ErrLocked, dir, describeHolder(dir))
}

// openDB opens Badger, turning a panic in the opening goroutine into an
// error. (Panics in Badger's own goroutines cannot be recovered: inspect
// keeps Badger from meeting the damage that causes them.)
func openDB(opts badger.Options) (db *badger.DB, err error) {
	err = recoverPanic(func() (err error) {
		db, err = badger.Open(opts)
		return err
	})
	return db, err
}

// openError wraps an error of opening the store in dir: the lock, damage, or
// what the system said.
func openError(dir string, err error) error {
	switch {
	case errors.Is(err, ErrLocked) || errors.Is(err, ErrDamaged):
		return err
	case isBadgerLockError(err):
		return lockedError(dir)
	case isSystemError(err):
		return fmt.Errorf("open checkpoint store %s: %w", dir, err)
	}
	return fmt.Errorf("%w: %s: %v; the store cannot be repaired", ErrDamaged, dir, err)
}

// isSystemError tells an error about the system (permissions, space, file
// handles) from one about the store's bytes. Badger flattens the errors it
// wraps into text, so the text is all there is.
func isSystemError(err error) bool {
	if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.ENOSPC) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"permission denied", "read-only file system", "no space left", "too many open files", "cannot allocate memory"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// badgerOptions are the Badger options of the store in dir. Small memtables
// need a value threshold below 15% of their size. One level-0 table is enough
// to start a compaction, and Close compacts level 0, because compactions are
// what tell value log GC which value log space is garbage. Every table is
// checked against its checksums when opened (inspect has done so first, as
// Badger silently leaves out a table that fails), and every table block and
// every value when read.
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
		WithChecksumVerificationMode(options.OnTableAndBlockRead).
		WithVerifyValueChecksum(true).
		WithDetectConflicts(false) // Add and Delete are serialised by writeMu
}
