// Package dbclose closes a Badger database without hanging on a directory
// that is gone.
package dbclose

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// ErrDirGone means the database's directory was removed while it was
// open (and maybe made again, by another run: not the one it opened).
var ErrDirGone = errors.New("its directory was removed while it was open")

// Dir is the directory a database was opened in, as it was then: known by
// its identity, not only its path, so that a directory removed and made
// again at the same path (a new run's, in a state dir a user removed) is
// not taken for it.
type Dir struct {
	Path string
	id   os.FileInfo // nil when it could not be read: the path alone
}

// At returns the directory at path as it is now; call it once the
// database is open.
func At(path string) Dir {
	fi, _ := statDir(path)
	return Dir{Path: path, id: fi}
}

// Gone reports whether d's path no longer holds the directory d was.
func (d Dir) Gone() bool {
	fi, err := statDir(d.Path)
	switch {
	case errors.Is(err, os.ErrNotExist) || err == nil && !fi.IsDir():
		return true
	case err == nil && d.id != nil:
		return !os.SameFile(d.id, fi)
	}
	return false
}

// Close closes db, whose files are in dir, checking every interval (a
// second when 0) that dir is still there. Badger's Close writes the
// memtable into a new table file, deletes the memtable's file by its path,
// and when it cannot write, retries every second for good: with dir
// removed (a user deleting the state dir of a running faultline) it would
// never return, and the process would never exit; with dir removed and
// made again by a new run, it would write into that run's database and
// delete its memtable. Close returns ErrDirGone instead, once dir is gone,
// and leaves the database's goroutines to the end of the process; what
// they would write has nowhere to go.
func Close(db *badger.DB, dir Dir, interval time.Duration) error {
	if interval <= 0 {
		interval = time.Second
	}
	if dir.Gone() {
		return fmt.Errorf("close %s: %w", dir.Path, ErrDirGone)
	}
	done := make(chan error, 1)
	go func() { done <- db.Close() }()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-t.C:
			if dir.Gone() {
				return fmt.Errorf("close %s: %w", dir.Path, ErrDirGone)
			}
		}
	}
}

var statDir = os.Stat // a test makes the first look miss the removal
