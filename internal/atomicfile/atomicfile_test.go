package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// Write makes the folder, replaces what was there, and leaves no
// temporary file behind.
func TestWriteReplacesWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "note.json")
	for _, want := range []string{"first\n", "second, longer\n"} {
		if err := Write(path, []byte(want)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("the temporary file stays: %v", err)
	}
}

// Write makes a missing folder, never the folders above it, and Replace
// makes none: a state dir removed under a run stays removed.
func TestWriteMakesNoFolderAboveItsOwn(t *testing.T) {
	dir := t.TempDir()
	if err := Write(filepath.Join(dir, "verify", "ledger"), []byte("x")); err != nil {
		t.Fatalf("a missing folder of its own: %v", err)
	}
	gone := filepath.Join(dir, "state")
	if err := Write(filepath.Join(gone, "verify", "ledger"), []byte("x")); err == nil {
		t.Fatal("Write made the folders above its own")
	}
	if err := Replace(filepath.Join(gone, "HELD"), []byte("x")); err == nil {
		t.Fatal("Replace made its folder")
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Fatalf("the removed folder is back: %v", err)
	}
}
