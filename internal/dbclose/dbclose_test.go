package dbclose

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

func open(t *testing.T, dir string) *badger.DB {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	// Something in the memtable, which Close must write out.
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	return db
}

// closeWithin fails t when Close has not returned after a minute (Badger's
// own Close never returns once its directory is gone).
func closeWithin(t *testing.T, db *badger.DB, dir string, interval time.Duration) error {
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
	if err := closeWithin(t, open(t, dir), dir, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	db := open(t, dir) // opens again: it was closed, not abandoned
	err := db.View(func(txn *badger.Txn) error {
		_, err := txn.Get([]byte("k"))
		return err
	})
	if err != nil {
		t.Fatalf("the value written before Close: %v", err)
	}
	if err := closeWithin(t, db, dir, 0); err != nil {
		t.Fatal(err)
	}
}

func TestCloseGivesUpOnARemovedDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db := open(t, dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := closeWithin(t, db, dir, 10*time.Millisecond); !errors.Is(err, ErrDirGone) {
		t.Fatalf("Close = %v, want ErrDirGone", err)
	}
}

// The directory goes after the first look, while Badger's Close is
// already retrying: a later look notices.
func TestCloseGivesUpWhenTheDirectoryGoesDuringClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db := open(t, dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	looks := 0
	statDir = func(name string) (os.FileInfo, error) {
		looks++
		if looks == 1 {
			return os.Stat(filepath.Dir(name)) // "still there"
		}
		return os.Stat(name)
	}
	defer func() { statDir = os.Stat }()
	if err := closeWithin(t, db, dir, 10*time.Millisecond); !errors.Is(err, ErrDirGone) {
		t.Fatalf("Close = %v, want ErrDirGone", err)
	}
	if looks < 2 {
		t.Fatalf("%d looks at the directory, want the one before Close and one during", looks)
	}
}

// A file where the directory was is no directory either.
func TestCloseGivesUpOnAFileInTheDirectorysPlace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db := open(t, dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := closeWithin(t, db, dir, 10*time.Millisecond); !errors.Is(err, ErrDirGone) {
		t.Fatalf("Close = %v, want ErrDirGone", err)
	}
}
