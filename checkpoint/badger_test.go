package checkpoint

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// openBadger opens a BadgerStore in dir and closes it when the test ends.
func openBadger(t *testing.T, dir string, retained int) *BadgerStore {
	t.Helper()
	s, err := OpenBadgerStore(dir, retained)
	if err != nil {
		t.Fatalf("OpenBadgerStore: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func closeStore(t *testing.T, s *BadgerStore) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// storeFactories are the Store implementations the contract tests run on.
var storeFactories = []struct {
	name string
	open func(t *testing.T, retained int) Store
}{
	{"memory", func(t *testing.T, retained int) Store { return NewMemoryStore(retained) }},
	{"badger", func(t *testing.T, retained int) Store { return openBadger(t, t.TempDir(), retained) }},
}

// putAndAdd writes a blob for every task, of size bytes each (at least the
// text naming it), and adds the checkpoint.
func putAndAdd(t *testing.T, s Store, id int64, kind Kind, size int, tasks ...TaskID) *Completed {
	t.Helper()
	ctx := context.Background()
	c := &Completed{ID: id, Kind: kind, TriggerTime: t0, CompletionTime: t0, Tasks: map[TaskID]SubtaskAck{}}
	for _, task := range tasks {
		h, err := s.PutState(ctx, id, task, blobOf(task, id, size))
		if err != nil {
			t.Fatalf("PutState: %v", err)
		}
		c.Tasks[task] = SubtaskAck{Handle: h, Bytes: h.Size}
	}
	if err := s.Add(ctx, c); err != nil {
		t.Fatalf("Add %d: %v", id, err)
	}
	return c
}

// blobOf is task's state at checkpoint id: a header, then the alphabet
// over and over (byte i is 'a'+i%26) up to size bytes.
func blobOf(task TaskID, id int64, size int) []byte {
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

func TestStoreContractRetention(t *testing.T) {
	tests := []struct {
		name     string
		retained int
		add      []Kind // ids 1, 2, …
		want     []int64
	}{
		{"keeps the newest", 2, []Kind{KindCheckpoint, KindCheckpoint, KindCheckpoint, KindCheckpoint}, []int64{3, 4}},
		{"at least one", 0, []Kind{KindCheckpoint, KindCheckpoint}, []int64{2}},
		{"savepoints stay", 1, []Kind{KindCheckpoint, KindSavepoint, KindCheckpoint, KindCheckpoint}, []int64{2, 4}},
		{"fewer than retained", 5, []Kind{KindCheckpoint, KindSavepoint}, []int64{1, 2}},
	}
	for _, f := range storeFactories {
		for _, tc := range tests {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				s := f.open(t, tc.retained)
				var added []*Completed
				for i, kind := range tc.add {
					// Blobs above and below Badger's value threshold.
					added = append(added, putAndAdd(t, s, int64(i+1), kind, 100+i*1000, src0, sink))
				}
				all, err := s.All(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if got := ids(all); !slices.Equal(got, tc.want) {
					t.Errorf("All = %v, want %v", got, tc.want)
				}
				for _, c := range added {
					kept := slices.Contains(tc.want, c.ID)
					for task, a := range c.Tasks {
						_, err := s.GetState(ctx, a.Handle)
						switch {
						case kept && err != nil:
							t.Errorf("state of %s in retained %d: %v", task, c.ID, err)
						case !kept && !errors.Is(err, ErrNotFound):
							t.Errorf("state of %s in dropped %d: err = %v, want ErrNotFound", task, c.ID, err)
						}
					}
				}
				if got, want := s.MaxID(), int64(len(tc.add)); got != want {
					t.Errorf("MaxID = %d, want %d", got, want)
				}
			})
		}
	}
}

func TestStoreContractSharedAndPendingState(t *testing.T) {
	for _, f := range storeFactories {
		t.Run(f.name, func(t *testing.T) {
			ctx := context.Background()
			s := f.open(t, 1)
			first := putAndAdd(t, s, 1, KindCheckpoint, 2000, src0, sink)

			// Checkpoint 2 never completes; 4 is still pending when 3 completes.
			failed, _ := s.PutState(ctx, 2, sink, []byte("failed"))
			pending, _ := s.PutState(ctx, 4, sink, []byte("pending"))

			// Checkpoint 3 carries the state of the finished src/0 from checkpoint 1.
			h, _ := s.PutState(ctx, 3, sink, []byte("sink at 3"))
			carried := first.Tasks[src0]
			carried.Finished = true
			third := &Completed{ID: 3, Tasks: map[TaskID]SubtaskAck{src0: carried, sink: {Handle: h}}}
			if err := s.Add(ctx, third); err != nil {
				t.Fatal(err)
			}

			if _, err := s.GetState(ctx, carried.Handle); err != nil {
				t.Errorf("carried state of dropped checkpoint 1: %v", err)
			}
			if _, err := s.GetState(ctx, first.Tasks[sink].Handle); !errors.Is(err, ErrNotFound) {
				t.Errorf("state only checkpoint 1 used: err = %v, want ErrNotFound", err)
			}
			if _, err := s.GetState(ctx, failed); !errors.Is(err, ErrNotFound) {
				t.Errorf("state of failed checkpoint 2: err = %v, want ErrNotFound", err)
			}
			if got, err := s.GetState(ctx, pending); err != nil || string(got) != "pending" {
				t.Errorf("state of pending checkpoint 4 = %q, %v", got, err)
			}
		})
	}
}

func TestStoreContractLatestAllMaxID(t *testing.T) {
	for _, f := range storeFactories {
		t.Run(f.name, func(t *testing.T) {
			ctx := context.Background()
			s := f.open(t, 2)
			if c, err := s.Latest(ctx); c != nil || err != nil {
				t.Errorf("Latest of an empty store = %v, %v", c, err)
			}
			if all, err := s.All(ctx); len(all) != 0 || err != nil {
				t.Errorf("All of an empty store = %v, %v", all, err)
			}
			if got := s.MaxID(); got != 0 {
				t.Errorf("MaxID of an empty store = %d", got)
			}
			putAndAdd(t, s, 1, KindCheckpoint, 10, sink)
			putAndAdd(t, s, 2, KindSavepoint, 10, sink)
			if c, _ := s.Latest(ctx); c.ID != 2 || c.Kind != KindSavepoint {
				t.Errorf("Latest = %+v, want savepoint 2", c)
			}
			putAndAdd(t, s, 3, KindCheckpoint, 10, sink)
			putAndAdd(t, s, 4, KindCheckpoint, 10, sink)
			latest, _ := s.Latest(ctx)
			if latest.ID != 4 {
				t.Errorf("Latest = %d, want 4", latest.ID)
			}
			if all, _ := s.All(ctx); !slices.Equal(ids(all), []int64{2, 3, 4}) {
				t.Errorf("All = %v, want [2 3 4]", ids(all))
			}
			delete(latest.Tasks, sink)
			if again, _ := s.Latest(ctx); len(again.Tasks) != 1 {
				t.Errorf("Latest returned the store's own Tasks map")
			}
			if err := s.Add(ctx, &Completed{ID: 4}); err == nil {
				t.Errorf("adding checkpoint 4 twice succeeded")
			}
			canceled, cancel := context.WithCancel(ctx)
			cancel()
			if err := s.Add(canceled, &Completed{ID: 5}); !errors.Is(err, context.Canceled) {
				t.Errorf("Add with a canceled context: err = %v", err)
			}
			if _, err := s.GetState(ctx, Handle{Key: "chk-9/none/0"}); !errors.Is(err, ErrNotFound) {
				t.Errorf("unknown key: err = %v, want ErrNotFound", err)
			}
		})
	}
}

func TestBadgerStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBadger(t, dir, 3)

	c := &Completed{
		ID:             7,
		Kind:           KindSavepoint,
		Job:            "orders",
		Mode:           "exactly-once",
		TriggerTime:    t0,
		CompletionTime: t0.Add(1234 * time.Millisecond),
		Tasks:          map[TaskID]SubtaskAck{},
	}
	tasks := []TaskID{{"orders-source", 0}, {"orders-source", 1}, {"join", 0}, {"join", 1}, {"sink", 0}}
	for i, task := range tasks {
		data := blobOf(task, c.ID, 50+i*700) // some in the LSM tree, some in the value log
		h, err := s.PutState(ctx, c.ID, task, data)
		if err != nil {
			t.Fatal(err)
		}
		a := SubtaskAck{
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
			a.Offsets = Offsets{"orders": {int32(2 * task.Index): 1203, int32(2*task.Index + 1): 1180}, "payments": {int32(task.Index): int64(100 + i)}}
		}
		if task.Operator == "join" && task.Index == 1 {
			a.Finished = true
		}
		c.Tasks[task] = a
	}
	if err := s.Add(ctx, c); err != nil {
		t.Fatal(err)
	}

	check := func(s *BadgerStore) {
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
		putAndAdd(t, s, id, KindCheckpoint, 100, sink)
	}
	if err := s.Delete(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.All(ctx); len(all) != 0 {
		t.Errorf("All after deleting the only retained checkpoint = %v", ids(all))
	}
	if err := s.Delete(ctx, 5); !errors.Is(err, ErrNotFound) {
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
	putAndAdd(t, s, 6, KindCheckpoint, 100, sink)
	if got := s.MaxID(); got != 6 {
		t.Errorf("MaxID = %d, want 6", got)
	}
	if _, err := OpenBadgerStore("", 1); err == nil {
		t.Errorf("OpenBadgerStore with no directory succeeded")
	}
}

// TestBadgerStoreCoordinator runs the coordinator on a BadgerStore across a
// restart of the process: ids keep increasing and a finished subtask's state
// is carried over.
func TestBadgerStoreCoordinator(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := openBadger(t, dir, 2)
	h := newHarness(t, Config{Job: "orders", Mode: "exactly-once"}, store)
	h.c.Start(1, job)
	first := h.trigger(KindCheckpoint)
	h.ack(1, first, job...)
	second := h.trigger(KindCheckpoint)
	h.ack(1, second, src1, sink)
	h.c.TaskFinished(1, src0)
	latest, err := store.Latest(ctx)
	if err != nil || latest == nil || latest.ID != second {
		t.Fatalf("Latest = %v, %v; want checkpoint %d", latest, err, second)
	}
	if got := latest.Tasks[src0]; !got.Finished || got.Handle != ackOf(src0, first).Handle {
		t.Errorf("carried src/0 = %+v", got)
	}
	savepoint := h.trigger(KindSavepoint)
	h.ack(1, savepoint, src1, sink)
	h.c.Stop(ReasonJobFailover, nil)
	closeStore(t, store)

	store = openBadger(t, dir, 2)
	h2 := newHarness(t, Config{}, store)
	if got := h2.c.NextID(); got != savepoint+1 {
		t.Errorf("NextID after reopen = %d, want %d", got, savepoint+1)
	}
	all, err := store.All(ctx)
	if err != nil || !slices.Equal(ids(all), []int64{first, second, savepoint}) {
		t.Errorf("All = %v, %v; want [%d %d %d]", ids(all), err, first, second, savepoint)
	}
	if all[2].Kind != KindSavepoint || all[2].Job != "orders" || all[2].Mode != "exactly-once" {
		t.Errorf("savepoint = %+v", all[2])
	}
}

func TestBadgerStoreOrphansRemovedOnOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBadger(t, dir, 2)
	kept := putAndAdd(t, s, 1, KindCheckpoint, 3000, src0, sink)
	var orphans []Handle
	for _, task := range []TaskID{src0, src1, sink} {
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
		if _, err := s.GetState(ctx, h); !errors.Is(err, ErrNotFound) {
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
func countBlobs(t *testing.T, s *BadgerStore) int {
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

// flipOnDisk flips one byte in the middle of every copy of marker in the
// files under dir and returns how many it flipped.
func flipOnDisk(t *testing.T, dir string, marker []byte) int {
	t.Helper()
	flipped := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		changed := false
		for off := 0; ; {
			i := bytes.Index(b[off:], marker)
			if i < 0 {
				break
			}
			b[off+i+len(marker)/2] ^= 0xff
			off += i + len(marker)
			flipped++
			changed = true
		}
		if changed {
			t.Logf("flipped a byte in %s", filepath.Base(path))
			return os.WriteFile(path, b, d.Type().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return flipped
}

func TestBadgerStoreDetectsFlippedBytes(t *testing.T) {
	tests := []struct {
		name string
		// metadata flips a byte of checkpoint 2's metadata rather than of
		// one of its blobs.
		metadata bool
		// older leaves the bytes in an older value log file: Badger
		// truncates the newest one at a damaged entry when it opens.
		older bool
	}{
		{"blob in the newest value log", false, false},
		{"blob in an older value log", false, true},
		{"metadata in the newest value log", true, false},
		{"metadata in an older value log", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s := openBadger(t, dir, 3)
			previous := putAndAdd(t, s, 1, KindCheckpoint, 2000, src0, sink)

			marker := []byte(strings.Repeat(fmt.Sprintf("FLIP-ME-%016x;", rand.Uint64()), 300))
			newest := &Completed{ID: 2, TriggerTime: t0, CompletionTime: t0, Tasks: map[TaskID]SubtaskAck{}}
			if tc.metadata {
				newest.Job = string(marker[:1500]) // a record above the value threshold
				marker = marker[:1500]
			}
			for _, task := range []TaskID{src0, sink} {
				data := blobOf(task, 2, 2000)
				if task == sink && !tc.metadata {
					data = marker
				}
				h, err := s.PutState(ctx, 2, task, data)
				if err != nil {
					t.Fatal(err)
				}
				newest.Tasks[task] = SubtaskAck{Handle: h}
			}
			if err := s.Add(ctx, newest); err != nil {
				t.Fatal(err)
			}
			closeStore(t, s)
			if tc.older {
				closeStore(t, openBadger(t, dir, 3))
			}
			if n := flipOnDisk(t, dir, marker); n == 0 {
				t.Fatalf("marker not found on disk")
			}

			s = openBadger(t, dir, 3)
			if err := s.Verify(ctx, previous.ID); err != nil {
				t.Errorf("Verify(previous) = %v, want nil", err)
			}
			err := s.Verify(ctx, newest.ID)
			t.Logf("Verify(newest) = %v", err)
			if !errors.Is(err, ErrChecksum) {
				t.Errorf("Verify(newest) = %v, want ErrChecksum", err)
			}
			damaged, derr := s.Damaged(ctx)
			if derr != nil {
				t.Fatal(derr)
			}
			latest, lerr := s.Latest(ctx)
			if lerr != nil {
				t.Fatal(lerr)
			}
			all, aerr := s.All(ctx)
			if aerr != nil {
				t.Fatal(aerr)
			}
			if got := s.MaxID(); got != 2 {
				t.Errorf("MaxID = %d, want 2", got)
			}

			if !tc.metadata {
				if err == nil || !strings.Contains(err.Error(), "subtask sink/0") || strings.Contains(err.Error(), "src/0") {
					t.Errorf("Verify(newest) = %v, want it to name sink/0 only", err)
				}
				_, gerr := s.GetState(ctx, newest.Tasks[sink].Handle)
				if !errors.Is(gerr, ErrChecksum) {
					t.Errorf("GetState of the flipped blob: err = %v, want ErrChecksum", gerr)
				}
				if len(damaged) != 0 || latest == nil || latest.ID != 2 || !slices.Equal(ids(all), []int64{1, 2}) {
					t.Errorf("Damaged = %v, Latest = %v, All = %v; want none, 2, [1 2]", damaged, latest, ids(all))
				}
				return
			}

			if err == nil || !strings.Contains(err.Error(), "metadata") {
				t.Errorf("Verify(newest) = %v, want it to name the metadata", err)
			}
			if !slices.Equal(damaged, []int64{2}) || latest == nil || latest.ID != 1 || !slices.Equal(ids(all), []int64{1}) {
				t.Fatalf("Damaged = %v, Latest = %v, All = %v; want [2], 1, [1]", damaged, latest, ids(all))
			}
			// Retention keeps the damaged record and its state; Delete removes both.
			putAndAdd(t, s, 3, KindCheckpoint, 10, sink)
			putAndAdd(t, s, 4, KindCheckpoint, 10, sink)
			putAndAdd(t, s, 5, KindCheckpoint, 10, sink)
			if d, _ := s.Damaged(ctx); !slices.Equal(d, []int64{2}) {
				t.Errorf("Damaged after retention = %v, want [2]", d)
			}
			if _, err := s.GetState(ctx, newest.Tasks[src0].Handle); err != nil {
				t.Errorf("state of the damaged checkpoint: %v", err)
			}
			if err := s.Delete(ctx, 2); err != nil {
				t.Fatal(err)
			}
			if d, _ := s.Damaged(ctx); len(d) != 0 {
				t.Errorf("Damaged after Delete = %v, want none", d)
			}
			if _, err := s.GetState(ctx, newest.Tasks[src0].Handle); !errors.Is(err, ErrNotFound) {
				t.Errorf("state of the deleted damaged checkpoint: err = %v, want ErrNotFound", err)
			}
		})
	}
}

func TestBadgerStoreVerify(t *testing.T) {
	ctx := context.Background()
	s := openBadger(t, t.TempDir(), 3)
	c := putAndAdd(t, s, 1, KindCheckpoint, 100, src0, src1, sink)
	if err := s.Verify(ctx, 1); err != nil {
		t.Errorf("Verify = %v", err)
	}
	if err := s.Verify(ctx, 9); !errors.Is(err, ErrNotFound) {
		t.Errorf("Verify of an unknown checkpoint = %v, want ErrNotFound", err)
	}
	// A handle whose blob is gone, and one whose checksum is wrong.
	gone := c.Tasks[src1]
	gone.Handle.Key = stateKey(1, TaskID{"gone", 0})
	c.Tasks[src1] = gone
	wrong := c.Tasks[sink]
	wrong.Handle.Checksum++
	c.Tasks[sink] = wrong
	c.ID = 2
	if err := s.Add(ctx, c); err != nil {
		t.Fatal(err)
	}
	err := s.Verify(ctx, 2)
	if !errors.Is(err, ErrNotFound) || !errors.Is(err, ErrChecksum) ||
		!strings.Contains(err.Error(), "subtask src/1") || !strings.Contains(err.Error(), "subtask sink/0") ||
		strings.Contains(err.Error(), "src/0") {
		t.Errorf("Verify = %v, want src/1 not found and sink/0 checksum", err)
	}
}

func TestBadgerStoreDamagedRecordWritten(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBadger(t, dir, 3)
	putAndAdd(t, s, 1, KindCheckpoint, 10, sink)
	putAndAdd(t, s, 2, KindCheckpoint, 10, sink)
	rec, err := encodeCompleted(&Completed{ID: 3, Tasks: map[TaskID]SubtaskAck{}})
	if err != nil {
		t.Fatal(err)
	}
	damage := map[int64][]byte{
		2: append(slices.Clone(rec[:len(rec)-1]), '!'), // checksum mismatch
		3: rec[:3],                                     // too short
		4: rec,                                         // says checkpoint 3
	}
	for id, v := range damage {
		if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(metaKey(id), v) }); err != nil {
			t.Fatal(err)
		}
	}
	closeStore(t, s)
	s = openBadger(t, dir, 3)
	if d, err := s.Damaged(ctx); err != nil || !slices.Equal(d, []int64{2, 3, 4}) {
		t.Errorf("Damaged = %v, %v; want [2 3 4]", d, err)
	}
	if c, err := s.Latest(ctx); err != nil || c == nil || c.ID != 1 {
		t.Errorf("Latest = %v, %v; want 1", c, err)
	}
	if all, err := s.All(ctx); err != nil || !slices.Equal(ids(all), []int64{1}) {
		t.Errorf("All = %v, %v; want [1]", ids(all), err)
	}
	for id := range damage {
		if err := s.Verify(ctx, id); !errors.Is(err, ErrChecksum) {
			t.Errorf("Verify(%d) = %v, want ErrChecksum", id, err)
		}
	}
	if got := s.MaxID(); got != 4 {
		t.Errorf("MaxID = %d, want 4 (the highest record)", got)
	}
	if err := s.Add(ctx, &Completed{ID: 3}); err == nil {
		t.Errorf("Add over a damaged record succeeded")
	}
}

func TestBadgerStoreConcurrentUse(t *testing.T) {
	ctx := context.Background()
	s := openBadger(t, t.TempDir(), 2)
	const writers, checkpoints = 16, 30
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			task := TaskID{"map", i}
			for id := int64(1); id <= checkpoints; id++ {
				data := bytes.Repeat([]byte{byte(i)}, 1+i*200)
				h, err := s.PutState(ctx, id, task, data)
				if err != nil {
					t.Error(err)
					return
				}
				// Retention may already have deleted it.
				if got, err := s.GetState(ctx, h); (err != nil && !errors.Is(err, ErrNotFound)) || (err == nil && !bytes.Equal(got, data)) {
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
			if err := s.Add(ctx, &Completed{ID: id, Tasks: map[TaskID]SubtaskAck{sink: {Handle: h}}}); err != nil {
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
	putAndAdd(t, s, 1, KindCheckpoint, 10, sink)
	closeStore(t, s)
	closeStore(t, s) // twice is fine
	if _, err := s.PutState(ctx, 2, sink, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("PutState after Close: err = %v", err)
	}
	if _, err := s.Latest(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Latest after Close: err = %v", err)
	}
	if err := s.Add(ctx, &Completed{ID: 2}); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close: err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), ownerFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OWNER after Close: %v", err)
	}
}

func TestBadgerStoreLockedInProcess(t *testing.T) {
	dir := t.TempDir()
	s := openBadger(t, dir, 1)
	_, err := OpenBadgerStore(dir, 1)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: err = %v, want ErrLocked", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, dir) || !strings.Contains(msg, fmt.Sprintf("(pid %d, `", os.Getpid())) || strings.Contains(msg, "Cannot acquire") {
		t.Errorf("second open: %q, want the directory and this process, no Badger message", msg)
	}
	t.Log(msg)
	closeStore(t, s)
	closeStore(t, openBadger(t, dir, 1))
}

// helperEnv makes the test binary act as another process holding a store:
// "hold" opens the store and waits; "churn" adds checkpoints until killed.
const helperEnv = "FAULTLINE_BADGER_HELPER"

// TestBadgerStoreHelperProcess is the other process of the lock and crash
// tests; it does nothing in a normal test run.
func TestBadgerStoreHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process of the lock and crash tests")
	}
	ctx := context.Background()
	s, err := OpenBadgerStore(os.Getenv(helperEnv+"_DIR"), 2)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	go func() { // never outlive the parent test
		time.Sleep(2 * time.Minute)
		os.Exit(3)
	}()
	switch mode {
	case "hold":
		_, _ = io.Copy(io.Discard, os.Stdin)
	case "churn":
		tasks := []TaskID{src0, src1, {"join", 0}, sink}
		for id := s.MaxID() + 1; ; id++ {
			c := &Completed{ID: id, Kind: Kind(id % 7 / 6), TriggerTime: t0, CompletionTime: t0, Tasks: map[TaskID]SubtaskAck{}}
			for _, task := range tasks {
				h, err := s.PutState(ctx, id, task, blobOf(task, id, 500+int(id%5)*1000))
				if err != nil {
					fmt.Println("error:", err)
					os.Exit(2)
				}
				c.Tasks[task] = SubtaskAck{Handle: h, Offsets: Offsets{"orders": {int32(task.Index): id}}}
			}
			if err := s.Add(ctx, c); err != nil {
				fmt.Println("error:", err)
				os.Exit(2)
			}
			fmt.Printf("added %d\n", id)
		}
	}
	_ = s.Close()
	os.Exit(0)
}

// helper is a running helper process.
type helper struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *bytes.Buffer
}

func startHelper(t *testing.T, mode, dir string) *helper {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("needs flock and SIGKILL")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBadgerStoreHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperEnv+"_DIR="+dir)
	h := &helper{cmd: cmd, lines: make(chan string, 1024), stderr: &bytes.Buffer{}}
	cmd.Stderr = h.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil { // open until the helper dies
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	if line := h.next(t); line != "ready" {
		t.Fatalf("helper says %q, stderr %q", line, h.stderr.String())
	}
	return h
}

// next is the helper's next line of output, "" when it has exited.
func (h *helper) next(t *testing.T) string {
	t.Helper()
	select {
	case line := <-h.lines:
		return line
	case <-time.After(60 * time.Second):
		t.Fatalf("helper said nothing for a minute")
		return ""
	}
}

// kill sends SIGKILL to the helper, waits for it and returns what it printed
// until it died.
func (h *helper) kill(t *testing.T) []string {
	t.Helper()
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = h.cmd.Wait()
	var rest []string
	for line := range h.lines {
		rest = append(rest, line)
	}
	return rest
}

func TestBadgerStoreLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	h := startHelper(t, "hold", dir)
	_, err := OpenBadgerStore(dir, 1)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("open while the helper holds the store: err = %v, want ErrLocked", err)
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{dir, fmt.Sprintf("(pid %d, `", h.cmd.Process.Pid), "TestBadgerStoreHelperProcess"} {
		if !strings.Contains(msg, want) {
			t.Errorf("lock error %q does not contain %q", msg, want)
		}
	}
	if strings.Contains(msg, "Cannot acquire") {
		t.Errorf("lock error %q shows Badger's message", msg)
	}

	h.kill(t) // SIGKILL: no Close, no cleanup
	if h.stderr.Len() > 0 {
		t.Errorf("the helper wrote to stderr: %q", h.stderr.String())
	}
	s := openBadger(t, dir, 1)
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil || !strings.Contains(string(b), `"pid":`+strconv.Itoa(os.Getpid())) {
		t.Errorf("OWNER = %q, %v; want this process", b, err)
	}
	putAndAdd(t, s, 1, KindCheckpoint, 10, sink)
}

// TestBadgerStoreSurvivesKill kills a process that adds checkpoints as fast
// as it can at a random moment, several times, and checks that every
// checkpoint whose Add returned is still there and intact, and that no
// orphan state is left.
func TestBadgerStoreSurvivesKill(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var lastAdded int64
	for round := range 5 {
		h := startHelper(t, "churn", dir)
		var printed []string
		for range 3 + rand.IntN(10) {
			printed = append(printed, h.next(t))
		}
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		printed = append(printed, h.kill(t)...)
		for _, line := range printed {
			id, err := strconv.ParseInt(strings.TrimPrefix(line, "added "), 10, 64)
			if err != nil {
				t.Fatalf("helper says %q, stderr %q", line, h.stderr.String())
			}
			if id <= lastAdded {
				t.Errorf("round %d: added %d after %d", round, id, lastAdded)
			}
			lastAdded = id
		}

		s := openBadger(t, dir, 2)
		latest, err := s.Latest(ctx)
		if err != nil || latest == nil {
			t.Fatalf("round %d: Latest = %v, %v", round, latest, err)
		}
		t.Logf("round %d: last added %d, latest %d, max id %d", round, lastAdded, latest.ID, s.MaxID())
		// The Add in flight when the helper died may have committed.
		if latest.ID < lastAdded || latest.ID > lastAdded+1 || s.MaxID() != latest.ID {
			t.Errorf("round %d: Latest %d, MaxID %d; last added %d", round, latest.ID, s.MaxID(), lastAdded)
		}
		lastAdded = latest.ID
		all, err := s.All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		blobs := map[string]bool{}
		for _, c := range all {
			if err := s.Verify(ctx, c.ID); err != nil {
				t.Errorf("round %d: %v", round, err)
			}
			for _, a := range c.Tasks {
				blobs[a.Handle.Key] = true
			}
		}
		if d, err := s.Damaged(ctx); len(d) != 0 || err != nil {
			t.Errorf("round %d: Damaged = %v, %v", round, d, err)
		}
		if n := countBlobs(t, s); n != len(blobs) {
			t.Errorf("round %d: %d blobs on disk, %d referenced", round, n, len(blobs))
		}
		closeStore(t, s)
	}
}

// valueLogBytes is the size of the value log files under dir; when open, the
// newest file, which Badger writes to (and which is sparse), is left out.
func valueLogBytes(t *testing.T, dir string, open bool) int64 {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(logs) // fixed-width numbers
	if open && len(logs) > 0 {
		logs = logs[:len(logs)-1]
	}
	var n int64
	for _, path := range logs {
		if fi, err := os.Stat(path); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// TestBadgerStoreReclaimsSpace checks that the value log space of the blobs
// retention deleted is given back after a restart, while the job writes.
func TestBadgerStoreReclaimsSpace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBadger(t, dir, 2)
	tasks := []TaskID{src0, src1, sink}
	const blob = 64 << 10
	for id := int64(1); id <= 60; id++ {
		putAndAdd(t, s, id, KindCheckpoint, blob, tasks...)
	}
	closeStore(t, s)
	before := valueLogBytes(t, dir, false)
	if before < 60*3*blob {
		t.Fatalf("%d bytes of value log before reopen, want at least %d", before, 60*3*blob)
	}

	s = openBadger(t, dir, 2)
	// Keep writing while GC runs in the background.
	var wg sync.WaitGroup
	wg.Go(func() {
		for id := int64(61); id <= 80; id++ {
			putAndAdd(t, s, id, KindCheckpoint, blob, tasks...)
		}
	})
	deadline := time.Now().Add(time.Minute)
	for valueLogBytes(t, dir, true) > 10*3*blob && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	after := valueLogBytes(t, dir, true)
	t.Logf("older value log files: %d bytes before reopen, %d after", before, after)
	if after > 10*3*blob {
		t.Errorf("value log not reclaimed: %d bytes before reopen, %d after", before, after)
	}
	for _, id := range []int64{79, 80} {
		if err := s.Verify(ctx, id); err != nil {
			t.Error(err)
		}
	}
}

// An incremental snapshot's chain keeps the blobs it builds on alive after
// the checkpoints that wrote them were dropped by retention, and Verify
// checks them.
func TestStoreContractKeepsIncrementalChains(t *testing.T) {
	for _, f := range storeFactories {
		t.Run(f.name, func(t *testing.T) {
			ctx := context.Background()
			s := f.open(t, 1)
			base := putAndAdd(t, s, 1, KindCheckpoint, 2000, src0)
			// Checkpoint 2 builds on 1's blob; checkpoint 1 is dropped.
			h2, err := s.PutState(ctx, 2, src0, blobOf(src0, 2, 2000))
			if err != nil {
				t.Fatal(err)
			}
			chain := []Handle{base.Tasks[src0].Handle}
			c2 := &Completed{ID: 2, TriggerTime: t0, CompletionTime: t0, Tasks: map[TaskID]SubtaskAck{src0: {Handle: h2, Chain: chain}}}
			if err := s.Add(ctx, c2); err != nil {
				t.Fatal(err)
			}
			if got := ids(mustAll(t, s)); !slices.Equal(got, []int64{2}) {
				t.Fatalf("All = %v, want [2]", got)
			}
			if _, err := s.GetState(ctx, chain[0]); err != nil {
				t.Fatalf("the chain's base was deleted with its checkpoint: %v", err)
			}
			if v, ok := s.(interface {
				Verify(context.Context, int64) error
			}); ok {
				if err := v.Verify(ctx, 2); err != nil {
					t.Fatalf("Verify: %v", err)
				}
			}
			// A full checkpoint after it frees the base.
			putAndAdd(t, s, 3, KindCheckpoint, 2000, src0)
			if _, err := s.GetState(ctx, chain[0]); !errors.Is(err, ErrNotFound) {
				t.Fatalf("the base outlived every checkpoint that needs it: %v", err)
			}
		})
	}
}

func mustAll(t *testing.T, s Store) []*Completed {
	t.Helper()
	all, err := s.All(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// TestBadgerStoreOpensAfterKillLeftEmptyValueLog opens a store in which a
// killed process left a zero-length value log file (killed between creating
// the file and sizing it): Badger alone refuses to open such a directory; the
// store opens it with every checkpoint intact.
func TestBadgerStoreOpensAfterKillLeftEmptyValueLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBadger(t, dir, 3)
	for id := int64(1); id <= 3; id++ {
		putAndAdd(t, s, id, KindCheckpoint, 4<<10, sink) // in the value log
	}
	closeStore(t, s)
	vlogs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if len(vlogs) == 0 {
		t.Fatal("no value log file after writing 4 KiB blobs")
	}
	empty := filepath.Join(dir, "000099.vlog")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Badger by itself cannot open it: this is what the store works around.
	if db, err := badger.Open(badgerOptions(dir)); err == nil {
		db.Close()
		t.Fatal("badger.Open accepted an empty value log file; the workaround may be obsolete")
	} else if !strings.Contains(err.Error(), "Create a new file") {
		t.Fatalf("badger.Open: %v, want its empty-value-log error", err)
	}
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s = openBadger(t, dir, 3)
	all, err := s.All(ctx)
	if err != nil || !slices.Equal(ids(all), []int64{1, 2, 3}) {
		t.Fatalf("All after reopen = %v, %v; want [1 2 3]", ids(all), err)
	}
	for _, c := range all {
		if _, err := s.GetState(ctx, c.Tasks[sink].Handle); err != nil {
			t.Errorf("state of checkpoint %d: %v", c.ID, err)
		}
	}
	if _, err := os.Stat(empty); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the empty value log file is still there: %v", err)
	}
}

// TestBadgerStoreStaysBoundedWhileRunning checks that a store kept open
// gives back the space of the checkpoints retention dropped while it runs:
// many checkpoints of a few megabytes each, two retained, and the value log
// never holds more than a few value log files.
func TestBadgerStoreStaysBoundedWhileRunning(t *testing.T) {
	dir := t.TempDir()
	s := openBadger(t, dir, 2)
	tasks := []TaskID{src0, src1, sink}
	const blob = 1 << 20
	const limit = 4 * valueLogFileSize
	peak := int64(0)
	// 80 checkpoints of 3 MiB write twice what the limit allows.
	const n = 80
	for id := int64(1); id <= n; id++ {
		putAndAdd(t, s, id, KindCheckpoint, blob, tasks...)
		peak = max(peak, valueLogBytes(t, dir, false))
	}
	// Reclaiming runs in the background: give it a moment to catch up.
	deadline := time.Now().Add(time.Minute)
	for valueLogBytes(t, dir, false) > limit && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	final := valueLogBytes(t, dir, false)
	t.Logf("value log: %d MiB at most, %d MiB at the end, after %d MiB written", peak>>20, final>>20, n*3*blob>>20)
	if final > limit {
		t.Fatalf("value log holds %d MiB after %d checkpoints of 3 MiB with 2 retained, want at most %d MiB", final>>20, n, limit>>20)
	}
	closeStore(t, s)
}
