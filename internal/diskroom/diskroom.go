// Package diskroom tells whether the disk under a state dir has room for
// what faultline is about to write there.
//
// Badger maps its value logs and memtable logs into memory at twice their
// size limit, as sparse files. A write into such a mapping on a full disk is
// not an error a program can handle: the kernel sends SIGBUS, and the
// process dies in the middle of a checkpoint. So a run checks, before it
// starts and while it runs, that the disk has room for every mapped file to
// grow to its limit, plus a margin for the writes that go through write(2)
// (the embedded broker's log, the ledger, the log file), and stops cleanly
// with a message when it has not.
package diskroom

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
)

// Margin is the room kept beyond what the mapped files may take: for the
// writes between two checks and for the files written without a mapping.
const Margin = 16 << 20

// FreshStore is the least room a run needs on a disk whose state dir holds
// no checkpoint store yet: a new value log of 32 MiB, its memtable log and
// the margin.
const FreshStore = 48 << 20

// ErrShort means the disk under the state dir has too little free space.
var ErrShort = errors.New("the state dir's disk is nearly full")

// Free is the space that unprivileged writers may still use on the file
// system that holds dir.
func Free(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// Needed is the room the files under the folders mapped may still take
// without being written to: for each Badger value log (*.vlog, mapped at twice its limit)
// its limit less what it holds, for each memtable log (*.mem) and
// statistics file (DISCARD) its mapped size less what it holds; plus
// Margin. It counts only what the disk has not allocated yet.
func Needed(mapped ...string) (int64, error) {
	need := int64(Margin)
	for _, dir := range mapped {
		n, err := room(dir)
		if err != nil {
			return 0, err
		}
		need += n
	}
	return need, nil
}

// room is what the mapped files under dir may still take.
func room(dir string) (int64, error) {
	var need int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		name := d.Name()
		limit := int64(0)
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		switch {
		case strings.HasSuffix(name, ".vlog"):
			limit = fi.Size() / 2
		case strings.HasSuffix(name, ".mem"), name == "DISCARD":
			limit = fi.Size()
		default:
			return nil
		}
		if room := limit - allocated(fi); room > 0 {
			need += room
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("room needed in %s: %w", dir, err)
	}
	return need, nil
}

// allocated is what the disk holds of a file (sparse files hold less than
// their size).
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}

// Check returns an error wrapping ErrShort when the disk under dir has less
// free space (as free says) than the mapped files under the folders mapped
// need (see Needed), and at least least; nil otherwise. Only the folders
// that hold Badger's files are walked: the broker's log is written, not
// mapped, and the margin covers it.
func Check(dir string, least int64, free func(string) (int64, error), mapped ...string) error {
	need, err := Needed(mapped...)
	if err != nil {
		return err
	}
	need = max(need, least)
	have, err := free(dir)
	if err != nil {
		return err
	}
	if have >= need {
		return nil
	}
	return fmt.Errorf("%w: %s has %s free, and faultline needs %s there (its checkpoint files are mapped into memory, and a write into them on a full disk would kill the process); free some space, or give another --state-dir",
		ErrShort, dir, Bytes(have), Bytes(need))
}

// Bytes writes n for people: "12.0 MiB".
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
