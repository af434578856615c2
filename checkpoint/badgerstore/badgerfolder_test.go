package badgerstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/checkpoint"
)

// TestLockFileReplacedByAFolder: a folder where Badger writes its lock
// file (LOCK) keeps the store from opening to write; the error names it
// and says to remove it, not to start from nothing, since the store is
// intact. Reading works meanwhile, and once the folder is gone the store
// opens with every checkpoint it had.
func TestLockFileReplacedByAFolder(t *testing.T) {
	fixture, newest := damageFixture(t)
	dir := copyDir(t, fixture)
	lock := filepath.Join(dir, "LOCK")
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, 3)
	if msg := errString(err); !errors.Is(err, ErrLockFileInTheWay) || errors.Is(err, ErrDamaged) || strings.Contains(msg, "\n") ||
		!strings.Contains(msg, lock+" is a folder") || !strings.Contains(msg, "remove that folder") || strings.Contains(msg, "--fresh") {
		t.Fatalf("open with a folder as LOCK: %q; want one line naming %s and saying to remove it, no --fresh", msg, lock)
	}
	ro, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatalf("read-only open with a folder as LOCK: %v", err)
	}
	closeStore(t, ro)
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	s := openBadger(t, dir, 3)
	defer closeStore(t, s)
	all, err := s.All(context.Background())
	if err != nil || !slices.Contains(ids(all), newest) {
		t.Fatalf("after removing the folder: checkpoints %v, %v; want %d among them", ids(all), err, newest)
	}
	putAndAdd(t, s, newest+1, checkpoint.KindCheckpoint, 3000, sink)
}

// TestDataFileReplacedByAFolder: a folder where a table, a value log or
// the MANIFEST belongs is damage: both opens say so in one line that
// names the file (not Badger's two lines about mmap), with the way on,
// and that way on (Remove, as run --fresh does) works when the folder is
// empty.
func TestDataFileReplacedByAFolder(t *testing.T) {
	fixture, _ := damageFixture(t)
	tables, _ := filepath.Glob(filepath.Join(fixture, "*.sst"))
	vlogs, _ := filepath.Glob(filepath.Join(fixture, "*.vlog"))
	for _, name := range []string{filepath.Base(tables[0]), filepath.Base(vlogs[0]), manifestFile} {
		t.Run(name, func(t *testing.T) {
			dir := copyDir(t, fixture)
			path := filepath.Join(dir, name)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, open := range []func() (*Store, error){
				func() (*Store, error) { return Open(dir, 3) },
				func() (*Store, error) { return OpenReadOnly(dir) },
			} {
				var err error
				within(t, "open", func() { _, err = open() })
				want := "checkpoint store damaged: " + path + ": a folder where "
				if msg := errString(err); !errors.Is(err, ErrDamaged) || strings.Contains(msg, "\n") ||
					!strings.HasPrefix(msg, want) || !strings.HasSuffix(msg, "the store cannot be repaired") {
					t.Errorf("open: %q; want one line starting %q, said to be beyond repair", msg, want)
				}
			}
			if err := Remove(dir); err != nil {
				t.Fatalf("Remove: %v", err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("dir after Remove: %v", err)
			}
		})
	}
}

// Remove deletes an empty folder that stands where a file of the store
// belongs, but never one with something in it.
func TestRemoveLeavesAFolderWithFilesInIt(t *testing.T) {
	fixture, _ := damageFixture(t)
	dir := copyDir(t, fixture)
	lock := filepath.Join(dir, "LOCK")
	if err := os.MkdirAll(filepath.Join(lock, "mine"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := listing(t, dir)
	if err := Remove(dir); err == nil || !strings.Contains(err.Error(), "holds the folder LOCK") {
		t.Errorf("Remove of a store with a folder of files as LOCK: %v, want an error naming it", err)
	}
	if after := listing(t, dir); !slices.Equal(before, after) {
		t.Errorf("Remove deleted files: before %v, after %v", before, after)
	}
}

// errString is err's message, or "<nil>".
func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
