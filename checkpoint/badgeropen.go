package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// OpenBadgerStore opens (creating) the checkpoint store in dir (Flink:
// CheckpointStorage + CompletedCheckpointStore on disk) that keeps the newest
// retained checkpoints (at least 1) plus every savepoint.
//
// Opening deletes the state blobs that no checkpoint refers to: those of
// checkpoints that never completed before the previous process stopped. When
// another process (or another BadgerStore of this process) has dir open, it
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
// in value log files of 32 MiB, so a state blob can be at most MaxStateSize.
// Table blocks and values are checked against their checksums when read. The
// space of deleted blobs is reclaimed in the background by value log GC (see
// reclaim). Badger never logs.
func OpenBadgerStore(dir string, retained int) (*BadgerStore, error) {
	if dir == "" {
		return nil, errors.New("open checkpoint store: no directory given")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open checkpoint store: %w", err)
	}
	if err := prepare(dir); err != nil {
		return nil, err
	}
	db, err := openDB(badgerOptions(dir))
	if err != nil {
		return nil, openError(dir, err)
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

// prepare inspects the store in dir for a read-write open, under dir's lock,
// and makes the repairs Badger cannot: it removes empty value log files and
// damaged DISCARD and KEYREGISTRY files.
func prepare(dir string) error {
	unlock, err := lockDir(dir, true)
	if err != nil {
		return err
	}
	defer unlock()
	in, err := inspect(dir)
	if err != nil {
		return openError(dir, err)
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
	return fmt.Errorf("%w: %s: %v; the store cannot be repaired: `faultline run --fresh` starts the job again from nothing",
		ErrDamaged, dir, err)
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
