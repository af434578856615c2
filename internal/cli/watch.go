package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
	"github.com/faultline-dev/faultline/internal/supervise"
)

// watchStateDir calls gone, once, when dir stops being a directory,
// checking every interval until ctx ends.
func watchStateDir(ctx context.Context, dir string, interval time.Duration, gone func()) {
	watchFor(ctx, interval, func() bool { return dirGone(dir) }, gone)
}

// dirGone reports whether path no longer exists or is no directory (an
// error that says neither, such as a denied look, is not taken for it).
func dirGone(path string) bool {
	fi, err := os.Stat(path)
	return errors.Is(err, os.ErrNotExist) || err == nil && !fi.IsDir()
}

// openStore opens the checkpoint store in dir, which holds the state dir's
// lock. A faultline whose supervisor was just killed (a SIGKILL of the
// whole program) may still hold it for a moment while the kernel ends it:
// openStore waits for that, and only for that, up to a few seconds.
func openStore(dir string, retained int) (*badgerstore.Store, error) {
	return waitForDying(dir, func() (*badgerstore.Store, error) { return badgerstore.Open(dir, retained) })
}

// waitForDying calls open until it does not fail with ErrLocked by a
// holder that is dying (see openStore), for up to 5 s.
func waitForDying(dir string, open func() (*badgerstore.Store, error)) (*badgerstore.Store, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := open()
		if err == nil || !errors.Is(err, badgerstore.ErrLocked) || time.Now().After(deadline) || !supervise.Dying(lockHolder(dir)) {
			return s, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockHolder is the pid that Badger wrote into dir's LOCK file (0: none).
func lockHolder(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "LOCK"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// watchFor calls then, once, when cond holds, checking every interval until
// ctx ends.
func watchFor(ctx context.Context, interval time.Duration, cond func() bool, then func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if cond() {
				then()
				return
			}
		}
	}
}
