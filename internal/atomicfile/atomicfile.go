// Package atomicfile writes small files whole or not at all, so that a crash
// leaves either the old content or the new: the state dir's notes
// (input.json, bad-record.json) and the oracle's ledger and periods.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces the file at path with b: a temporary file beside it,
// synced, renamed over path, and the folder synced. It makes the folder
// when it is missing, never the folders above it: a state dir removed
// under a run stays removed (the run's watch sees it and stops).
func Write(path string, b []byte) error {
	if err := os.Mkdir(filepath.Dir(path), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return Replace(path, b)
}

// Replace is Write in a folder that must exist: it makes none.
func Replace(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
