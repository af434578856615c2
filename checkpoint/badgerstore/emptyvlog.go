package badgerstore

import (
	"os"
	"path/filepath"
	"strings"
)

// removeEmptyValueLogs deletes the zero-length value log files (*.vlog) of
// the Badger database in dir, which Badger v4.9.6 cannot open again: a
// process killed between creating a value log file and sizing it leaves one
// behind, and every later Open fails with "Open existing file: …vlog err:
// Create a new file" (the memtable files have the same gap but Badger handles
// it there). An empty value log file holds no value, so removing it loses
// nothing.
//
// The caller holds dir's lock (see lockDir). It returns the names it
// removed.
func removeEmptyValueLogs(dir string) ([]string, error) {
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
