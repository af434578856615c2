package badgerstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/faultline-dev/faultline/checkpoint"

	badger "github.com/dgraph-io/badger/v4"
)

func TestBadgerStoreClear(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBadger(t, dir, 2)
	var handles []checkpoint.Handle
	for id := int64(1); id <= 4; id++ {
		kind := checkpoint.KindCheckpoint
		if id == 2 {
			kind = checkpoint.KindSavepoint
		}
		c := putAndAdd(t, s, id, kind, 3000, src0, sink)
		handles = append(handles, c.Tasks[sink].Handle)
	}
	// A damaged record and a pending blob go too.
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(metaKey(5), []byte("junk")) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutState(ctx, 6, sink, blobOf(sink, 6, 3000)); err != nil {
		t.Fatal(err)
	}

	// Readers keep going while the store is cleared.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = s.All(ctx)
				_, _ = s.Latest(ctx)
				_, _ = s.GetState(ctx, handles[3])
			}
		})
	}
	err := s.Clear(ctx)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Clear: %v", err)
	}
	check := func(s *Store) {
		t.Helper()
		if all, err := s.All(ctx); len(all) != 0 || err != nil {
			t.Errorf("All after Clear = %v, %v", ids(all), err)
		}
		if d, err := s.Damaged(ctx); len(d) != 0 || err != nil {
			t.Errorf("Damaged after Clear = %v, %v", d, err)
		}
		if s.MaxID() != 0 || s.Newest() != 0 {
			t.Errorf("MaxID %d, Newest %d after Clear; want 0", s.MaxID(), s.Newest())
		}
		if n := countBlobs(t, s); n != 0 {
			t.Errorf("%d blobs after Clear", n)
		}
		if _, err := s.GetState(ctx, handles[0]); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("GetState after Clear: %v, want ErrNotFound", err)
		}
	}
	check(s)
	closeStore(t, s)
	s = openBadger(t, dir, 2)
	check(s)
	putAndAdd(t, s, 1, checkpoint.KindCheckpoint, 3000, sink)
	if got := s.MaxID(); got != 1 {
		t.Errorf("MaxID after adding 1 to a cleared store = %d", got)
	}
	closeStore(t, s)

	ro, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Clear(ctx); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Clear of a read-only store: %v, want ErrReadOnly", err)
	}
	closeStore(t, ro)
	if err := ro.Clear(ctx); err == nil {
		t.Errorf("Clear of a closed store succeeded")
	}
}

func TestRemove(t *testing.T) {
	fixture, _ := damageFixture(t)
	dir := copyDir(t, fixture)
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	overwriteAt(func(int64) int64 { return 100 }, true)(t, tables[0])
	if _, err := Open(dir, 3); !errors.Is(err, ErrDamaged) {
		t.Fatalf("open of a damaged store: %v, want ErrDamaged", err)
	}
	if err := Remove(dir); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("dir after Remove: %v", err)
	}
	if err := Remove(dir); err != nil {
		t.Errorf("Remove of a removed store: %v", err)
	}
	s := openBadger(t, dir, 3)
	if s.MaxID() != 0 {
		t.Errorf("MaxID of a store opened after Remove = %d", s.MaxID())
	}
	putAndAdd(t, s, 1, checkpoint.KindCheckpoint, 3000, sink)

	// Never while a process holds it: this one, or another.
	before := listing(t, dir)
	if err := Remove(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("Remove while held here: %v, want ErrLocked", err)
	}
	closeStore(t, s)
	startHelper(t, "hold", dir)
	if err := Remove(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("Remove while another process holds it: %v, want ErrLocked", err)
	}
	if after := listing(t, dir); len(after) < len(before) {
		t.Errorf("Remove of a held store deleted files:\nbefore %v\nafter  %v", before, after)
	}

	// Never a directory that is not only a store.
	other := copyDir(t, fixture)
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	before = listing(t, other)
	err := Remove(other)
	if err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("Remove of a dir with a file of its own: %v, want an error naming it", err)
	}
	if after := listing(t, other); !slices.Equal(before, after) {
		t.Errorf("Remove deleted files of a dir that is not only a store")
	}
}
