package badgerstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/checkpoint"

	badger "github.com/dgraph-io/badger/v4"
)

// dropKey deletes key from the store's database behind its back, as damage
// that takes a key away would.
func dropKey(t *testing.T, s *Store, key []byte) {
	t.Helper()
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Delete(key) }); err != nil {
		t.Fatal(err)
	}
}

func TestBadgerStoreNewest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBadger(t, dir, 2)
	if got := s.Newest(); got != 0 {
		t.Errorf("Newest of an empty store = %d", got)
	}
	for id := int64(1); id <= 3; id++ {
		putAndAdd(t, s, id, checkpoint.KindCheckpoint, 100, sink)
	}
	if got := s.Newest(); got != 3 {
		t.Errorf("Newest = %d, want 3", got)
	}
	if err := s.Delete(ctx, 2); err != nil { // not the newest
		t.Fatal(err)
	}
	if got := s.Newest(); got != 3 {
		t.Errorf("Newest after deleting an older checkpoint = %d, want 3", got)
	}
	putAndAdd(t, s, 4, checkpoint.KindSavepoint, 100, sink)
	putAndAdd(t, s, 5, checkpoint.KindCheckpoint, 100, sink)
	if err := s.Delete(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if got, max := s.Newest(), s.MaxID(); got != 4 || max != 5 {
		t.Errorf("after deleting the newest: Newest = %d, MaxID = %d; want 4 and 5", got, max)
	}
	if d, err := s.Damaged(ctx); len(d) != 0 || err != nil {
		t.Errorf("Damaged = %v, %v; want none", d, err)
	}
	closeStore(t, s)

	s = openBadger(t, dir, 2)
	if got, max := s.Newest(), s.MaxID(); got != 4 || max != 5 {
		t.Errorf("after reopen: Newest = %d, MaxID = %d; want 4 and 5", got, max)
	}
	for _, id := range []int64{4, 3} {
		if err := s.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Newest(); got != 0 {
		t.Errorf("Newest after deleting everything = %d, want 0", got)
	}
	if err := s.Delete(ctx, 5); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Delete of a deleted id: err = %v, want ErrNotFound", err)
	}
	closeStore(t, s)
	if got := openBadger(t, dir, 2).Newest(); got != 0 {
		t.Errorf("Newest after reopening an emptied store = %d, want 0", got)
	}
}

// A store written before sys/newest and HELD existed holds its highest id.
func TestBadgerStoreNewestOfAnOlderStore(t *testing.T) {
	dir := t.TempDir()
	s := openBadger(t, dir, 3)
	putAndAdd(t, s, 1, checkpoint.KindCheckpoint, 100, sink)
	putAndAdd(t, s, 2, checkpoint.KindCheckpoint, 100, sink)
	dropKey(t, s, []byte(newestKey))
	closeStore(t, s)
	if err := os.Remove(filepath.Join(dir, heldFile)); err != nil {
		t.Fatal(err)
	}
	s = openBadger(t, dir, 3)
	if got := s.Newest(); got != 2 {
		t.Errorf("Newest without sys/newest = %d, want the max id 2", got)
	}
}

// A newest record that is gone, key and all, is lost: Damaged lists it,
// Verify says so, and a restore goes back to the one before it.
func TestBadgerStoreLostNewest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBadger(t, dir, 3)
	for id := int64(1); id <= 3; id++ {
		putAndAdd(t, s, id, checkpoint.KindCheckpoint, 2000, src0, sink)
	}
	dropKey(t, s, metaKey(3))
	closeStore(t, s)

	s = openBadger(t, dir, 3)
	if d, err := s.Damaged(ctx); err != nil || !slices.Equal(d, []int64{3}) {
		t.Errorf("Damaged = %v, %v; want [3]", d, err)
	}
	err := s.Verify(ctx, 3)
	t.Logf("Verify(3) = %v", err)
	if !errors.Is(err, ErrLost) || errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Verify(3) = %v, want ErrLost", err)
	}
	if err := s.Verify(ctx, 9); !errors.Is(err, checkpoint.ErrNotFound) || errors.Is(err, ErrLost) {
		t.Errorf("Verify(9) = %v, want ErrNotFound", err)
	}
	if c, err := s.Latest(ctx); err != nil || c == nil || c.ID != 2 {
		t.Errorf("Latest = %v, %v; want 2", c, err)
	}
	if got := s.MaxID(); got != 3 {
		t.Errorf("MaxID = %d, want 3", got)
	}
	// Deleting it acknowledges the loss.
	if err := s.Delete(ctx, 3); err != nil {
		t.Fatalf("Delete of the lost checkpoint: %v", err)
	}
	if d, err := s.Damaged(ctx); err != nil || len(d) != 0 {
		t.Errorf("Damaged after Delete = %v, %v; want none", d, err)
	}
	if got := s.Newest(); got != 2 {
		t.Errorf("Newest after Delete = %d, want 2", got)
	}
}

// A value log cut short takes the metadata records stored in it: their keys
// stay in the LSM tree, and Badger reads their values as empty. They are
// damaged, not silently gone.
func TestBadgerStoreTruncatedValueLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBadger(t, dir, 3)
	for id := int64(1); id <= 3; id++ {
		c := &checkpoint.Completed{ID: id, Job: strings.Repeat("j", 2000), TriggerTime: t0, CompletionTime: t0, // in the value log
			Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{}}
		h, err := s.PutState(ctx, id, sink, blobOf(sink, id, 100_000))
		if err != nil {
			t.Fatal(err)
		}
		c.Tasks[sink] = checkpoint.SubtaskAck{Handle: h}
		if err := s.Add(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	closeStore(t, s)
	vlogs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	slices.Sort(vlogs)
	// The value log holds blob 1, record 1, blob 2, record 2, blob 3, record
	// 3: cut it inside blob 2.
	fi, err := os.Stat(vlogs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(vlogs[0], fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	s = openBadger(t, dir, 3)
	d, err := s.Damaged(ctx)
	if err != nil || !slices.Equal(d, []int64{2, 3}) {
		t.Fatalf("Damaged = %v, %v; want [2 3]", d, err)
	}
	for _, id := range d {
		err := s.Verify(ctx, id)
		t.Logf("Verify(%d) = %v", id, err)
		if !errors.Is(err, checkpoint.ErrChecksum) {
			t.Errorf("Verify(%d) = %v, want ErrChecksum", id, err)
		}
	}
	if c, err := s.Latest(ctx); err != nil || c == nil || c.ID != 1 {
		t.Errorf("Latest = %v, %v; want 1", c, err)
	}
	if got := s.Newest(); got != 3 {
		t.Errorf("Newest = %d, want 3", got)
	}
}
