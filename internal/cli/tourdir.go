package cli

// A tour's own state dir: a fresh folder in the temporary directory,
// deleted when the tour ends. A tour killed on the spot (kill -9, a closed
// laptop, the crash fault) cannot delete it, so each tour holds a lock on
// its folder while it lives, and the next tour removes the folders whose
// tour is gone.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
	"github.com/faultline-dev/faultline/internal/diskroom"
)

// tourDirPrefix starts the name of every tour's own state dir, and of the
// job files written next to it (builtInJobs).
const tourDirPrefix = "faultline-tour-"

// tourDirGrace is how young a folder may be and still be left alone though
// no tour holds it: its tour may have made it and not yet locked it.
const tourDirGrace = 5 * time.Second

// newTourDir makes a fresh state dir for tour name in tmp and locks it for
// as long as the tour lives; release unlocks and deletes it, and the job
// files next to it.
func newTourDir(tmp, name string) (dir string, release func(), err error) {
	dir, err = os.MkdirTemp(tmp, tourDirPrefix+name+"-")
	if err != nil {
		return "", nil, err
	}
	unlock, err := lockTourDir(dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, func() {
		removeTourDir(dir)
		unlock()
	}, nil
}

// lockTourDir takes an exclusive lock on dir (flock on the folder), or
// fails with syscall.EWOULDBLOCK when a live tour holds it.
func lockTourDir(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// removeTourDir deletes a tour's state dir and the job files written next
// to it, and returns the disk space they took.
func removeTourDir(dir string) int64 {
	size := treeSize(dir)
	os.RemoveAll(dir)
	files, _ := filepath.Glob(dir + "-*")
	for _, f := range files {
		size += treeSize(f)
		os.Remove(f)
	}
	return size
}

// sweepTourDirs deletes the state dirs in tmp that tours which are gone
// left behind: those no live tour holds, older than tourDirGrace at now. It
// returns how many it deleted and the disk space they took.
func sweepTourDirs(tmp string, now time.Time) (n int, size int64) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return 0, 0
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tourDirPrefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < tourDirGrace {
			continue
		}
		unlock, err := lockTourDir(dir)
		if err != nil {
			continue // a live tour's, or not ours to judge
		}
		if badgerstore.InUse(checkpointDir(dir)) {
			unlock()
			continue // a run (of a tour that took no lock) still uses it
		}
		size += removeTourDir(dir)
		unlock()
		n++
	}
	return n, size
}

// treeSize is the disk space the regular files under path take: the blocks
// allocated to them, not their length (Badger's value logs are sparse).
func treeSize(path string) int64 {
	var n int64
	filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile, or unreadable: not counted
		}
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += info.Size()
		}
		return nil
	})
	return n
}

// sweptNote says what sweepTourDirs deleted, for stderr ("" for nothing).
func sweptNote(n int, size int64) string {
	if n == 0 {
		return ""
	}
	if n == 1 {
		return fmt.Sprintf("removed the state dir that a tour stopped on the spot left behind (%s)", diskroom.Bytes(size))
	}
	return fmt.Sprintf("removed %d state dirs that tours stopped on the spot left behind (%s)", n, diskroom.Bytes(size))
}
