package badgerstore

import (
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
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
)

// damageFixture writes a store with checkpoints 1 to 6 (4 a savepoint),
// opened and closed twice so that it has two value logs and tables, whose
// metadata records and sink blobs are in the value log, and returns its
// directory and its newest id.
func damageFixture(t *testing.T) (string, int64) {
	t.Helper()
	dir := t.TempDir()
	var id int64
	for range 2 {
		s, err := Open(dir, 3)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			id++
			kind := checkpoint.KindCheckpoint
			if id == 4 {
				kind = checkpoint.KindSavepoint
			}
			c := &checkpoint.Completed{ID: id, Kind: kind, Job: strings.Repeat("j", 1500), TriggerTime: t0, CompletionTime: t0,
				Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{}}
			for _, task := range []checkpoint.TaskID{src0, sink} {
				size := 100 // in the LSM tree
				if task == sink {
					size = 5000 // in the value log
				}
				h, err := s.PutState(context.Background(), id, task, blobOf(task, id, size))
				if err != nil {
					t.Fatal(err)
				}
				c.Tasks[task] = checkpoint.SubtaskAck{Handle: h, Offsets: checkpoint.Offsets{"orders": {0: id * 100}}}
			}
			if err := s.Add(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dir, id
}

// copyDir copies the files of src into a new temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// damage is one way to damage a file: it changes the file at path.
type damage struct {
	name string
	do   func(t *testing.T, path string)
}

// damages are the kinds of damage the store must survive: a file cut short
// (as a disk that lost its end), zeroed (as a lost block) or overwritten
// with random bytes, at several offsets, or deleted (as a careless copy).
var damages = []damage{
	{"deleted", func(t *testing.T, path string) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}},
	{"truncated to 0", truncateAt(func(int64) int64 { return 0 })},
	{"truncated to 10", truncateAt(func(int64) int64 { return 10 })},
	{"truncated to half", truncateAt(func(n int64) int64 { return n / 2 })},
	{"last byte cut", truncateAt(func(n int64) int64 { return n - 1 })},
	{"zeroes at 0", overwriteAt(func(int64) int64 { return 0 }, false)},
	{"zeroes at 100", overwriteAt(func(int64) int64 { return 100 }, false)},
	{"zeroes at half", overwriteAt(func(n int64) int64 { return n / 2 }, false)},
	{"random at 0", overwriteAt(func(int64) int64 { return 0 }, true)},
	{"random at 100", overwriteAt(func(int64) int64 { return 100 }, true)},
	{"random at half", overwriteAt(func(n int64) int64 { return n / 2 }, true)},
	{"random near the end", overwriteAt(func(n int64) int64 { return n - 60 }, true)},
}

func truncateAt(at func(size int64) int64) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, max(0, min(at(fi.Size()), fi.Size()-1))); err != nil {
			t.Fatal(err)
		}
	}
}

// overwriteAt writes up to 1,000 zeroes or random bytes at an offset inside
// the file (the middle when the offset is past its end), never past its end.
func overwriteAt(at func(size int64) int64, random bool) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		off := max(0, at(int64(len(b))))
		if off >= int64(len(b)) {
			off = int64(len(b)) / 2
		}
		end := min(off+1000, int64(len(b)))
		for i := off; i < end; i++ {
			if random {
				b[i] = byte(rand.IntN(256))
			} else {
				b[i] = 0
			}
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// within runs f and fails t when it has not returned after a minute: a
// damaged store must never hang.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s still running after a minute", what)
	}
}

// damagedFiles are the store files the damage table test damages, by the
// name of a file in the fixture.
func damagedFiles(t *testing.T, dir string) []string {
	t.Helper()
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	vlogs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	slices.Sort(tables)
	slices.Sort(vlogs)
	if len(tables) == 0 || len(vlogs) == 0 {
		t.Fatalf("fixture has %d tables and %d value logs", len(tables), len(vlogs))
	}
	files := []string{filepath.Base(tables[0]), filepath.Base(tables[len(tables)-1]),
		filepath.Base(vlogs[0]), filepath.Base(vlogs[len(vlogs)-1]), // Badger reads the newest one through when it opens
		manifestFile, keyRegistryFile, discardFile, heldFile}
	return slices.Compact(files)
}

// TestBadgerStoreSurvivesDamagedFiles damages each kind of file of a store
// in each way and opens it, read-only (as checkpoints list and verify do) and
// to write (as a run does): every case is a clear error that names the
// damage (ErrDamaged) or a store that opens and shows every checkpoint it
// holds, intact or damaged, and never a panic or a hang.
func TestBadgerStoreSurvivesDamagedFiles(t *testing.T) {
	fixture, newest := damageFixture(t)
	t.Logf("fixture: %v", dirNames(t, fixture))
	for _, file := range damagedFiles(t, fixture) {
		for _, d := range damages {
			t.Run(file+"/"+d.name, func(t *testing.T) {
				dir := copyDir(t, fixture)
				d.do(t, filepath.Join(dir, file))
				within(t, "open read-only, read and close", func() { checkDamagedStore(t, dir, newest, true) })
				within(t, "open, read, write and close", func() { checkDamagedStore(t, dir, newest, false) })
			})
		}
	}
}

// checkDamagedStore opens the damaged store in dir whose newest checkpoint
// was newest, read-only or to write, and checks what it shows.
func checkDamagedStore(t *testing.T, dir string, newest int64, readOnly bool) {
	t.Helper()
	ctx := context.Background()
	open := func() (*Store, error) { return Open(dir, 3) }
	if readOnly {
		open = func() (*Store, error) { return OpenReadOnly(dir) }
	}
	s, err := open()
	if err != nil {
		t.Logf("open: %v", err)
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "the store cannot be repaired") {
			t.Errorf("open: %v, want ErrDamaged, said to be beyond repair", err)
		}
		return
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	all, err := s.All(ctx)
	if err != nil {
		t.Fatalf("All: %v", err)
	}
	bad, err := s.Damaged(ctx)
	if err != nil {
		t.Fatalf("Damaged: %v", err)
	}
	var verified []string
	for _, id := range slices.Concat(ids(all), bad) {
		err := s.Verify(ctx, id)
		verified = append(verified, fmt.Sprintf("%d: %v", id, err))
		if slices.Contains(bad, id) && err == nil {
			t.Errorf("Verify(%d) = nil for a damaged record", id)
		}
	}
	t.Logf("opened (read-only %v): intact %v, damaged %v, max id %d, newest %d; %s", readOnly, ids(all), bad, s.MaxID(), s.Newest(), strings.Join(verified, "; "))
	// Damage never takes the newest checkpoint away unseen.
	if !slices.Contains(ids(all), newest) && !slices.Contains(bad, newest) {
		t.Errorf("checkpoint %d is neither intact nor damaged: intact %v, damaged %v", newest, ids(all), bad)
	}
	if _, err := s.Latest(ctx); err != nil {
		t.Errorf("Latest: %v", err)
	}
	if readOnly {
		return
	}
	// Value log GC, as the store runs it, loses nothing that was intact.
	for s.runGC() {
	}
	for _, c := range all {
		if before, after := slices.Contains(verified, fmt.Sprintf("%d: <nil>", c.ID)), s.Verify(ctx, c.ID); before && after != nil {
			t.Errorf("checkpoint %d was intact before value log GC: %v", c.ID, after)
		}
	}
	// The store still takes checkpoints.
	putAndAdd(t, s, s.MaxID()+1, checkpoint.KindCheckpoint, 3000, sink)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s (%d)", d.Name(), fi.Size()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A table the MANIFEST lists that is gone is named itself, read-only and
// to write: the MANIFEST is not what is damaged.
func TestDeletedTableIsNamed(t *testing.T) {
	fixture, _ := damageFixture(t)
	dir := copyDir(t, fixture)
	tables, _ := filepath.Glob(filepath.Join(dir, "*"+tableExt))
	if len(tables) == 0 {
		t.Fatal("no table in the fixture")
	}
	if err := os.Remove(tables[0]); err != nil {
		t.Fatal(err)
	}
	for _, open := range []func() (*Store, error){
		func() (*Store, error) { return OpenReadOnly(dir) },
		func() (*Store, error) { return Open(dir, 3) },
	} {
		s, err := open()
		if err == nil {
			s.Close()
		}
		t.Log(err)
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), tables[0]+": missing") {
			t.Errorf("open without %s: %v, want ErrDamaged naming it", filepath.Base(tables[0]), err)
		}
	}
}
