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

// ErrDirGone means the database's directory was removed while it was open.
var ErrDirGone = errors.New("its directory was removed while it was open")

// Close closes db, whose files are in dir, checking every interval (a
// second when 0) that dir still exists. Badger's Close writes the memtable
// into a new table file and, when it cannot, retries every second for good:
// with dir removed (a user deleting the state dir of a running faultline)
// it would never return, and the process would never exit. Close returns
// ErrDirGone instead, once dir is gone, and leaves the database's
// goroutines to the end of the process; what they would write has nowhere
// to go.
func Close(db *badger.DB, dir string, interval time.Duration) error {
	if interval <= 0 {
		interval = time.Second
	}
	if gone(dir) {
		return fmt.Errorf("close %s: %w", dir, ErrDirGone)
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
			if gone(dir) {
				return fmt.Errorf("close %s: %w", dir, ErrDirGone)
			}
		}
	}
}

// gone reports whether dir is no longer a directory.
func gone(dir string) bool {
	fi, err := statDir(dir)
	return errors.Is(err, os.ErrNotExist) || err == nil && !fi.IsDir()
}

var statDir = os.Stat // a test makes the first look miss the removal
