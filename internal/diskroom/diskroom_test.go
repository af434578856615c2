package diskroom

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Needed counts what the mapped files may still take: a value log up to
// half its mapped size, a memtable log up to its size, less what the disk
// holds of them already; other files count nothing.
func TestDiskShortCountsMappedFilesAndTheNextLog(t *testing.T) {
	dir := t.TempDir()
	sparse := func(name string, size int64) *os.File {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	if got, _ := Needed(dir); got != Margin {
		t.Fatalf("an empty dir needs %d, want the margin %d", got, Margin)
	}
	vlog := sparse("checkpoints/000001.vlog", 64<<20)
	sparse("checkpoints/00001.mem", 2<<20)
	sparse("kafka/partitions/orders-0/00000.log", 100<<20) // written, not mapped
	if got, want := mustNeeded(t, dir), int64(32<<20+2<<20+Margin); got != want {
		t.Fatalf("needed %d, want %d (32 MiB of value log, 2 MiB of memtable log, the margin)", got, want)
	}
	// What the value log holds already is no longer needed.
	if _, err := vlog.WriteAt(bytes.Repeat([]byte{1}, 10<<20), 0); err != nil {
		t.Fatal(err)
	}
	vlog.Sync()
	if got, want := mustNeeded(t, dir), int64(22<<20+2<<20+Margin); got != want {
		t.Fatalf("needed %d after 10 MiB written, want %d", got, want)
	}
	free := func(have int64) func(string) (int64, error) {
		return func(string) (int64, error) { return have, nil }
	}
	if err := Check(dir, 0, free(100<<20), dir); err != nil {
		t.Fatalf("100 MiB free: %v", err)
	}
	err := Check(dir, 0, free(20<<20), dir)
	if !errors.Is(err, ErrShort) || !strings.Contains(err.Error(), dir+" has 20.0 MiB free, and faultline needs 40.0 MiB") {
		t.Fatalf("20 MiB free: %v", err)
	}
	if err := Check(t.TempDir(), FreshStore, free(30<<20)); !errors.Is(err, ErrShort) {
		t.Fatalf("30 MiB free for a fresh store: %v, want ErrShort", err)
	}
}

func mustNeeded(t *testing.T, dir string) int64 {
	t.Helper()
	n, err := Needed(dir)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
