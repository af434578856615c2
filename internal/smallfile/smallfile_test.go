package smallfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadsOnlyRegularFilesOfASaneSize: a device, a named pipe, a folder
// or a file larger than allowed is refused at once in one line naming it,
// never read for ever or waited on; a small regular file is read whole.
func TestReadsOnlyRegularFilesOfASaneSize(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, 101), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", "read tour /dev/zero: not a regular file (a device)"},
		{fifo, "read tour " + fifo + ": not a regular file (a named pipe)"},
		{dir, "read tour " + dir + ": is a folder"},
		{big, "read tour " + big + ": 101 bytes, more than the 100 a tour may have"},
		{filepath.Join(dir, "nope.yaml"), "read tour: stat " + filepath.Join(dir, "nope.yaml") + ": no such file"},
	} {
		done := make(chan error, 1)
		go func() { _, err := Read(tc.path, "tour", 100); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Read(%s) = %v; want one line starting %q", tc.path, err, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Read(%s) still runs after 5s", tc.path)
		}
	}
	small := filepath.Join(dir, "small.yaml")
	if err := os.WriteFile(small, []byte("title: T\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(small, "tour", 100); err != nil || string(b) != "title: T\n" {
		t.Errorf("Read(small) = %q, %v", b, err)
	}
}
