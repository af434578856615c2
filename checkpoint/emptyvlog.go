package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// removeEmptyValueLogs deletes the zero-length value log files (*.vlog) of
// the Badger database in dir, which Badger v4.9.6 cannot open again: a
// process killed between creating a value log file and sizing it leaves one
// behind, and every later Open fails with "Open existing file: …vlog err:
// Create a new file" (the memtable files have the same gap but Badger handles
// it there). An empty value log file holds no value, so removing it loses
// nothing.
//
// It holds Badger's own directory lock (flock on dir itself) while it looks, so
// it never touches a database another process has open; when the lock is
// taken it does nothing and Badger's Open reports the lock. It returns the
// names it removed.
func removeEmptyValueLogs(dir string) ([]string, error) {
	lock, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".vlog") {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Size() != 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return removed, err
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}
