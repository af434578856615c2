package dbclose

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

func open(t *testing.T, dir string) (*badger.DB, Dir) {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	// Something in the memtable, which Close must write out.
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	return db, At(dir)
}

// closeWithin fails t when Close has not returned after a minute (Badger's
// own Close never returns once its directory is gone).
func closeWithin(t *testing.T, db *badger.DB, dir Dir, interval time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- Close(db, dir, interval) }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("Close still waiting after a minute")
		return nil
	}
}

func TestCloseWritesTheDatabaseOut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, at := open(t, dir)
	if err := closeWithin(t, db, at, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	db, at = open(t, dir) // opens again: it was closed, not abandoned
	err := db.View(func(txn *badger.Txn) error {
		_, err := txn.Get([]byte("k"))
		return err
	})
	if err != nil {
		t.Fatalf("the value written before Close: %v", err)
	}
	if err := closeWithin(t, db, at, 0); err != nil {
		t.Fatal(err)
	}
}

func TestCloseGivesUpOnARemovedDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, at := open(t, dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := closeWithin(t, db, at, 10*time.Millisecond); !errors.Is(err, ErrDirGone) {
		t.Fatalf("Close = %v, want ErrDirGone", err)
	}
}

// The directory goes after the first look, while Badger's Close is
// already retrying: a later look notices.
func TestCloseGivesUpWhenTheDirectoryGoesDuringClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, at := open(t, dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	looks := 0
	statDir = func(name string) (os.FileInfo, error) {
		looks++
		if looks == 1 {
			return at.id, nil // "still there"
		}
		return os.Stat(name)
	}
	defer func() { statDir = os.Stat }()
	if err := closeWithin(t, db, at, 10*time.Millisecond); !errors.Is(err, ErrDirGone) {
		t.Fatalf("Close = %v, want ErrDirGone", err)
	}
	if looks < 2 {
		t.Fatalf("%d looks at the directory, want the one before Close and one during", looks)
	}
}

// A file where the directory was is no directory either.
func TestCloseGivesUpOnAFileInTheDirectorysPlace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, at := open(t, dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := closeWithin(t, db, at, 10*time.Millisecond); !errors.Is(err, ErrDirGone) {
		t.Fatalf("Close = %v, want ErrDirGone", err)
	}
}

// A directory removed and made again at its path, by a new run's database,
// is not the one the database was opened in: Close leaves it alone.
// Badger's Close would write its memtable there and delete the new
// database's memtable file, which has the same name.
func TestCloseLeavesADirectoryMadeAgainAlone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	old, at := open(t, dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	db, again := open(t, dir)
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("new"), []byte("run")) }); err != nil {
		t.Fatal(err)
	}
	if err := closeWithin(t, old, at, 10*time.Millisecond); !errors.Is(err, ErrDirGone) {
		t.Fatalf("Close of the old database = %v, want ErrDirGone", err)
	}
	if err := closeWithin(t, db, again, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	db, again = open(t, dir)
	defer closeWithin(t, db, again, 0)
	if err := db.View(func(txn *badger.Txn) error { _, err := txn.Get([]byte("new")); return err }); err != nil {
		t.Fatalf("the new database lost what it wrote: %v", err)
	}
}
