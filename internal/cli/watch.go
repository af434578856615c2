package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"faultline/checkpoint"
	"faultline/internal/supervise"
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

// notifyStop returns a context that a stop signal (Ctrl-C, SIGTERM, SIGHUP)
// ends: the run then stops, settles its outputs and verifies them. A second
// stop signal quits at once, without the verification, leaving the state
// dir as a crash would (the next run goes on from its last completed
// checkpoint). Two copies of one Ctrl-C, the terminal's and the one the
// supervisor passes on, arrive within supervise.Again and count once.
func notifyStop(parent context.Context, stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stopSignals()...)
	done := make(chan struct{})
	go func() {
		var first time.Time
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				switch {
				case first.IsZero():
					first = time.Now()
					cancel()
				case time.Since(first) >= supervise.Again:
					fmt.Fprintf(stderr, "faultline: %s again: quitting now, without checking the output; the state dir is as a crash leaves it, and the next run goes on from its last completed checkpoint\n", sig)
					os.Exit(1)
				}
			}
		}
	}()
	return ctx, sync.OnceFunc(func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	})
}

// openStore opens the checkpoint store in dir, which holds the state dir's
// lock. A faultline whose supervisor was just killed (a SIGKILL of the
// whole program) may still hold it for a moment while the kernel ends it:
// openStore waits for that, and only for that, up to a few seconds.
func openStore(dir string, retained int) (*checkpoint.BadgerStore, error) {
	return waitForDying(dir, func() (*checkpoint.BadgerStore, error) { return checkpoint.OpenBadgerStore(dir, retained) })
}

// waitForDying calls open until it does not fail with ErrLocked by a
// holder that is dying (see openStore), for up to 5 s.
func waitForDying(dir string, open func() (*checkpoint.BadgerStore, error)) (*checkpoint.BadgerStore, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := open()
		if err == nil || !errors.Is(err, checkpoint.ErrLocked) || time.Now().After(deadline) || !supervise.Dying(lockHolder(dir)) {
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
