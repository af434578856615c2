package badgerstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"

	badger "github.com/dgraph-io/badger/v4"
)

// openBadger opens a Store in dir and closes it when the test ends.
func openBadger(t *testing.T, dir string, retained int) *Store {
	t.Helper()
	s, err := Open(dir, retained)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func closeStore(t *testing.T, s *Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// putAndAdd writes a blob for every task, of size bytes each (at least the
// text naming it), and adds the checkpoint.
func putAndAdd(t *testing.T, s checkpoint.Store, id int64, kind checkpoint.Kind, size int, tasks ...checkpoint.TaskID) *checkpoint.Completed {
	t.Helper()
	ctx := context.Background()
	c := &checkpoint.Completed{ID: id, Kind: kind, TriggerTime: t0, CompletionTime: t0, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{}}
	for _, task := range tasks {
		h, err := s.PutState(ctx, id, task, blobOf(task, id, size))
		if err != nil {
			t.Fatalf("PutState: %v", err)
		}
		c.Tasks[task] = checkpoint.SubtaskAck{Handle: h, Bytes: h.Size}
	}
	if err := s.Add(ctx, c); err != nil {
		t.Fatalf("Add %d: %v", id, err)
	}
	return c
}

// blobOf is task's state at checkpoint id: a header, then the alphabet
// over and over (byte i is 'a'+i%26) up to size bytes.
func blobOf(task checkpoint.TaskID, id int64, size int) []byte {
	head := fmt.Appendf(nil, "state of %s at %d;", task, id)
	if len(head) >= size {
		return head
	}
	b := make([]byte, size)
	n := copy(b, head)
	for i := n; i < min(size, n+26); i++ {
		b[i] = byte('a' + i%26)
	}
	// The cycle from n on repeats every 26 bytes: copy it in doubling
	// runs (a byte at a time is most of a large blob's cost under -race).
	for filled := min(size, n+26) - n; n+filled < size; filled *= 2 {
		copy(b[n+filled:], b[n:n+filled])
	}
	return b
}

func TestBadgerStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBadger(t, dir, 3)

	c := &checkpoint.Completed{
		ID:             7,
		Kind:           checkpoint.KindSavepoint,
		Job:            "orders",
		Mode:           "exactly-once",
		TriggerTime:    t0,
		CompletionTime: t0.Add(1234 * time.Millisecond),
		Tasks:          map[checkpoint.TaskID]checkpoint.SubtaskAck{},
	}
	tasks := []checkpoint.TaskID{{Operator: "orders-source", Index: 0}, {Operator: "orders-source", Index: 1}, {Operator: "join", Index: 0}, {Operator: "join", Index: 1}, {Operator: "sink", Index: 0}}
	for i, task := range tasks {
		data := blobOf(task, c.ID, 50+i*700) // some in the LSM tree, some in the value log
		h, err := s.PutState(ctx, c.ID, task, data)
		if err != nil {
			t.Fatal(err)
		}
		a := checkpoint.SubtaskAck{
			Handle:           h,
			SyncDuration:     time.Duration(i+1) * time.Millisecond,
			AsyncDuration:    time.Duration(i+2) * time.Millisecond,
			Alignment:        time.Duration(i) * time.Microsecond,
			StartDelay:       time.Duration(i) * time.Nanosecond,
			Bytes:            h.Size,
			IncrementalBytes: h.Size / 2,
			AckTime:          t0.Add(time.Duration(i) * time.Second),
		}
		if task.Operator == "orders-source" {
			a.Offsets = checkpoint.Offsets{"orders": {int32(2 * task.Index): 1203, int32(2*task.Index + 1): 1180}, "payments": {int32(task.Index): int64(100 + i)}}
		}
		if task.Operator == "join" && task.Index == 1 {
			a.Finished = true
		}
		c.Tasks[task] = a
	}
	if err := s.Add(ctx, c); err != nil {
		t.Fatal(err)
	}

	check := func(s *Store) {
		t.Helper()
		latest, err := s.Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(latest, c) {
			t.Errorf("Latest = %+v\nwant     %+v", latest, c)
		}
		all, err := s.All(ctx)
		if err != nil || len(all) != 1 || !reflect.DeepEqual(all[0], c) {
			t.Errorf("All = %+v, %v; want [%+v]", all, err, c)
		}
		for task, a := range c.Tasks {
			got, err := s.GetState(ctx, a.Handle)
			if err != nil || !bytes.Equal(got, blobOf(task, c.ID, int(a.Handle.Size))) {
				t.Errorf("GetState of %s = %d bytes, %v", task, len(got), err)
			}
		}
		if err := s.Verify(ctx, c.ID); err != nil {
			t.Errorf("Verify: %v", err)
		}
		if got := s.MaxID(); got != 7 {
			t.Errorf("MaxID = %d, want 7", got)
		}
		if got := latest.SourceOffsets(); got["orders"][3] != 1180 || got["payments"][1] != 101 {
			t.Errorf("SourceOffsets = %v", got)
		}
	}
	check(s)
	closeStore(t, s)
	check(openBadger(t, dir, 3))
}

func TestBadgerStoreMaxIDSurvives(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBadger(t, dir, 1)
	for id := int64(1); id <= 5; id++ {
		putAndAdd(t, s, id, checkpoint.KindCheckpoint, 100, sink)
	}
	if err := s.Delete(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.All(ctx); len(all) != 0 {
		t.Errorf("All after deleting the only retained checkpoint = %v", ids(all))
	}
	if err := s.Delete(ctx, 5); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("deleting 5 twice: err = %v, want ErrNotFound", err)
	}
	closeStore(t, s)

	s = openBadger(t, dir, 1)
	if got := s.MaxID(); got != 5 {
		t.Errorf("MaxID after reopen = %d, want 5", got)
	}
	if c, err := s.Latest(ctx); c != nil || err != nil {
		t.Errorf("Latest = %v, %v; want none", c, err)
	}
	putAndAdd(t, s, 6, checkpoint.KindCheckpoint, 100, sink)
	if got := s.MaxID(); got != 6 {
		t.Errorf("MaxID = %d, want 6", got)
	}
	if _, err := Open("", 1); err == nil {
		t.Errorf("Open with no directory succeeded")
	}
}

// TestBadgerStoreCoordinator runs the coordinator on a BadgerStore across a
// restart of the process: ids keep increasing and a finished subtask's state
// is carried over.
func TestBadgerStoreCoordinator(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := openBadger(t, dir, 2)
	c := coordinator(t, checkpoint.Config{Job: "orders", Mode: "exactly-once"}, store)
	c.Start(1, job)
	first := trigger(t, c, checkpoint.KindCheckpoint)
	ack(c, 1, first, job...)
	second := trigger(t, c, checkpoint.KindCheckpoint)
	ack(c, 1, second, src1, sink)
	c.TaskFinished(1, src0)
	latest, err := store.Latest(ctx)
	if err != nil || latest == nil || latest.ID != second {
		t.Fatalf("Latest = %v, %v; want checkpoint %d", latest, err, second)
	}
	if got := latest.Tasks[src0]; !got.Finished || got.Handle != ackOf(src0, first).Handle {
		t.Errorf("carried src/0 = %+v", got)
	}
	savepoint := trigger(t, c, checkpoint.KindSavepoint)
	ack(c, 1, savepoint, src1, sink)
	c.Stop(checkpoint.ReasonJobFailover, nil)
	closeStore(t, store)

	store = openBadger(t, dir, 2)
	c2 := coordinator(t, checkpoint.Config{}, store)
	if got := c2.NextID(); got != savepoint+1 {
		t.Errorf("NextID after reopen = %d, want %d", got, savepoint+1)
	}
	all, err := store.All(ctx)
	if err != nil || !slices.Equal(ids(all), []int64{first, second, savepoint}) {
		t.Errorf("All = %v, %v; want [%d %d %d]", ids(all), err, first, second, savepoint)
	}
	if all[2].Kind != checkpoint.KindSavepoint || all[2].Job != "orders" || all[2].Mode != "exactly-once" {
		t.Errorf("savepoint = %+v", all[2])
	}
}

func TestBadgerStoreOrphansRemovedOnOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBadger(t, dir, 2)
	kept := putAndAdd(t, s, 1, checkpoint.KindCheckpoint, 3000, src0, sink)
	var orphans []checkpoint.Handle
	for _, task := range []checkpoint.TaskID{src0, src1, sink} {
		h, err := s.PutState(ctx, 2, task, blobOf(task, 2, 3000)) // never completes
		if err != nil {
			t.Fatal(err)
		}
		orphans = append(orphans, h)
	}
	if _, err := s.GetState(ctx, orphans[0]); err != nil {
		t.Fatalf("pending state before reopen: %v", err)
	}
	closeStore(t, s)

	s = openBadger(t, dir, 2)
	for _, h := range orphans {
		if _, err := s.GetState(ctx, h); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("orphan %s after reopen: err = %v, want ErrNotFound", h.Key, err)
		}
	}
	if err := s.Verify(ctx, kept.ID); err != nil {
		t.Errorf("Verify(%d): %v", kept.ID, err)
	}
	if n := countBlobs(t, s); n != 2 {
		t.Errorf("%d blobs in the store, want 2", n)
	}
}

// countBlobs counts the state blobs in s.
func countBlobs(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = []byte(statePrefix)
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestBadgerStoreConcurrentUse(t *testing.T) {
	ctx := context.Background()
	s := openBadger(t, t.TempDir(), 2)
	const writers, checkpoints = 16, 30
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			task := checkpoint.TaskID{Operator: "map", Index: i}
			for id := int64(1); id <= checkpoints; id++ {
				data := bytes.Repeat([]byte{byte(i)}, 1+i*200)
				h, err := s.PutState(ctx, id, task, data)
				if err != nil {
					t.Error(err)
					return
				}
				// Retention may already have deleted it.
				if got, err := s.GetState(ctx, h); (err != nil && !errors.Is(err, checkpoint.ErrNotFound)) || (err == nil && !bytes.Equal(got, data)) {
					t.Errorf("GetState = %d bytes, %v", len(got), err)
				}
				_, _ = s.Latest(ctx)
				_ = s.MaxID()
			}
		})
	}
	wg.Go(func() {
		for id := int64(1); id <= checkpoints; id++ {
			h, err := s.PutState(ctx, id, sink, []byte("sink"))
			if err != nil {
				t.Error(err)
				return
			}
			if err := s.Add(ctx, &checkpoint.Completed{ID: id, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{sink: {Handle: h}}}); err != nil {
				t.Error(err)
			}
			if err := s.Verify(ctx, id); err != nil {
				t.Error(err)
			}
			_, _ = s.All(ctx)
		}
	})
	wg.Wait()
	if got := s.MaxID(); got != checkpoints {
		t.Errorf("MaxID = %d, want %d", got, checkpoints)
	}
	if all, _ := s.All(ctx); !slices.Equal(ids(all), []int64{checkpoints - 1, checkpoints}) {
		t.Errorf("All = %v", ids(all))
	}
}

func TestBadgerStoreClosed(t *testing.T) {
	ctx := context.Background()
	s := openBadger(t, t.TempDir(), 1)
	putAndAdd(t, s, 1, checkpoint.KindCheckpoint, 10, sink)
	closeStore(t, s)
	closeStore(t, s) // twice is fine
	if _, err := s.PutState(ctx, 2, sink, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("PutState after Close: err = %v", err)
	}
	if _, err := s.Latest(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Latest after Close: err = %v", err)
	}
	if err := s.Add(ctx, &checkpoint.Completed{ID: 2}); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close: err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), ownerFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OWNER after Close: %v", err)
	}
}
