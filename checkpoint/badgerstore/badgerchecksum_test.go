package badgerstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/checkpoint"

	badger "github.com/dgraph-io/badger/v4"
)

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
			previous := putAndAdd(t, s, 1, checkpoint.KindCheckpoint, 2000, src0, sink)

			marker := []byte(strings.Repeat(fmt.Sprintf("FLIP-ME-%016x;", rand.Uint64()), 300))
			newest := &checkpoint.Completed{ID: 2, TriggerTime: t0, CompletionTime: t0, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{}}
			if tc.metadata {
				newest.Job = string(marker[:1500]) // a record above the value threshold
				marker = marker[:1500]
			}
			for _, task := range []checkpoint.TaskID{src0, sink} {
				data := blobOf(task, 2, 2000)
				if task == sink && !tc.metadata {
					data = marker
				}
				h, err := s.PutState(ctx, 2, task, data)
				if err != nil {
					t.Fatal(err)
				}
				newest.Tasks[task] = checkpoint.SubtaskAck{Handle: h}
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
			if !errors.Is(err, checkpoint.ErrChecksum) {
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
				if !errors.Is(gerr, checkpoint.ErrChecksum) {
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
			putAndAdd(t, s, 3, checkpoint.KindCheckpoint, 10, sink)
			putAndAdd(t, s, 4, checkpoint.KindCheckpoint, 10, sink)
			putAndAdd(t, s, 5, checkpoint.KindCheckpoint, 10, sink)
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
			if _, err := s.GetState(ctx, newest.Tasks[src0].Handle); !errors.Is(err, checkpoint.ErrNotFound) {
				t.Errorf("state of the deleted damaged checkpoint: err = %v, want ErrNotFound", err)
			}
		})
	}
}

func TestBadgerStoreVerify(t *testing.T) {
	ctx := context.Background()
	s := openBadger(t, t.TempDir(), 3)
	c := putAndAdd(t, s, 1, checkpoint.KindCheckpoint, 100, src0, src1, sink)
	if err := s.Verify(ctx, 1); err != nil {
		t.Errorf("Verify = %v", err)
	}
	if err := s.Verify(ctx, 9); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Verify of an unknown checkpoint = %v, want ErrNotFound", err)
	}
	// A handle whose blob is gone, and one whose checksum is wrong.
	gone := c.Tasks[src1]
	gone.Handle.Key = checkpoint.StateKey(1, checkpoint.TaskID{Operator: "gone", Index: 0})
	c.Tasks[src1] = gone
	wrong := c.Tasks[sink]
	wrong.Handle.Checksum++
	c.Tasks[sink] = wrong
	c.ID = 2
	if err := s.Add(ctx, c); err != nil {
		t.Fatal(err)
	}
	err := s.Verify(ctx, 2)
	if !errors.Is(err, checkpoint.ErrNotFound) || !errors.Is(err, checkpoint.ErrChecksum) ||
		!strings.Contains(err.Error(), "subtask src/1") || !strings.Contains(err.Error(), "subtask sink/0") ||
		strings.Contains(err.Error(), "src/0") {
		t.Errorf("Verify = %v, want src/1 not found and sink/0 checksum", err)
	}
}

func TestBadgerStoreDamagedRecordWritten(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBadger(t, dir, 3)
	putAndAdd(t, s, 1, checkpoint.KindCheckpoint, 10, sink)
	putAndAdd(t, s, 2, checkpoint.KindCheckpoint, 10, sink)
	rec, err := encodeCompleted(&checkpoint.Completed{ID: 3, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{}})
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
		if err := s.Verify(ctx, id); !errors.Is(err, checkpoint.ErrChecksum) {
			t.Errorf("Verify(%d) = %v, want ErrChecksum", id, err)
		}
	}
	if got := s.MaxID(); got != 4 {
		t.Errorf("MaxID = %d, want 4 (the highest record)", got)
	}
	if err := s.Add(ctx, &checkpoint.Completed{ID: 3}); err == nil {
		t.Errorf("Add over a damaged record succeeded")
	}
}
