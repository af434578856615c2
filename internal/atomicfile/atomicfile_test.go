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
