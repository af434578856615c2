package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/checkpoint"
)

// listing is what dir holds: every file's name, size and modification time.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %d %d", path, fi.Size(), fi.ModTime().UnixNano()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOpenWithoutAStore(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "typo")
	empty := t.TempDir()
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("not a store"), 0o644); err != nil {
		t.Fatal(err)
	}
	opens := map[string]func(dir string) (*Store, error){
		"read-only": OpenReadOnly,
		"existing":  func(dir string) (*Store, error) { return Open(dir, 1, Existing()) },
	}
	for name, open := range opens {
		for _, dir := range []string{missing, empty, other} {
			t.Run(name+"/"+filepath.Base(dir), func(t *testing.T) {
				before := listing(t, filepath.Dir(dir))
				s, err := open(dir)
				if err == nil {
					s.Close()
				}
				if !errors.Is(err, ErrNoStore) || !strings.Contains(err.Error(), "no checkpoint store in "+dir) {
					t.Errorf("open: %v, want ErrNoStore naming %s", err, dir)
				}
				if after := listing(t, filepath.Dir(dir)); !slices.Equal(before, after) {
					t.Errorf("open created or changed files:\nbefore %v\nafter  %v", before, after)
				}
			})
		}
	}
}

// readOnlyFixture writes a store with checkpoints 1 to 3 into a new
// directory and closes it.
func readOnlyFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 3; id++ {
		putAndAdd(t, s, id, checkpoint.KindCheckpoint, 3000, src0, sink)
	}
	closeStore(t, s)
	return dir
}

// checkReadOnly checks that s shows checkpoints 1 to 3 and refuses every
// write.
func checkReadOnly(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	all, err := s.All(ctx)
	if err != nil || !slices.Equal(ids(all), []int64{1, 2, 3}) {
		t.Fatalf("All = %v, %v; want [1 2 3]", ids(all), err)
	}
	for _, c := range all {
		if err := s.Verify(ctx, c.ID); err != nil {
			t.Errorf("Verify(%d): %v", c.ID, err)
		}
	}
	if s.MaxID() != 3 || s.Newest() != 3 {
		t.Errorf("MaxID %d, Newest %d; want 3 and 3", s.MaxID(), s.Newest())
	}
	writes := map[string]error{
		"Add":     s.Add(ctx, &checkpoint.Completed{ID: 4}),
		"Delete":  s.Delete(ctx, 1),
		"Corrupt": s.Corrupt(all[0].Tasks[sink].Handle.Key),
	}
	_, writes["PutState"] = s.PutState(ctx, 4, sink, []byte("x"))
	for name, err := range writes {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only store: err = %v, want ErrReadOnly", name, err)
		}
	}
}

func TestOpenBadgerStoreReadOnly(t *testing.T) {
	dir := readOnlyFixture(t)
	before := listing(t, dir)
	s, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A second reader at the same time: the lock is shared.
	s2, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatalf("second read-only open: %v", err)
	}
	checkReadOnly(t, s)
	closeStore(t, s2)
	closeStore(t, s)
	if after := listing(t, dir); !slices.Equal(before, after) {
		t.Errorf("a read-only open changed the store:\nbefore %v\nafter  %v", before, after)
	}
}

// While a process has the store open to write, a reader is told which.
func TestOpenBadgerStoreReadOnlyWhileHeld(t *testing.T) {
	dir := readOnlyFixture(t)
	s := openBadger(t, dir, 3)
	_, err := OpenReadOnly(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("(pid %d, `", os.Getpid())) {
		t.Errorf("read-only open while held here: %v, want ErrLocked naming this process", err)
	}
	closeStore(t, s)

	h := startHelper(t, "hold", dir)
	_, err = OpenReadOnly(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("(pid %d, `", h.cmd.Process.Pid)) {
		t.Errorf("read-only open while another process holds it: %v, want ErrLocked naming it", err)
	}
	t.Log(err)
}

// killedStore leaves in a new directory a store whose process was killed
// while adding checkpoints, with its memtable log unflushed.
func killedStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	h := startHelper(t, "churn", dir)
	for range 3 {
		h.next(t)
	}
	h.kill(t)
	if mems, _ := filepath.Glob(filepath.Join(dir, "*.mem")); len(mems) == 0 {
		t.Fatal("no memtable log after killing the writer")
	}
	return dir
}

// After a kill, a read-only open cannot replay the memtable log: on a
// writable dir it recovers the store and still refuses writes.
func TestOpenBadgerStoreReadOnlyAfterKill(t *testing.T) {
	dir := killedStore(t)
	s, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatalf("read-only open after a kill: %v", err)
	}
	all, err := s.All(context.Background())
	if err != nil || len(all) == 0 {
		t.Errorf("All = %v, %v", ids(all), err)
	}
	if err := s.Add(context.Background(), &checkpoint.Completed{ID: s.MaxID() + 1}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Add after a recovering read-only open: %v, want ErrReadOnly", err)
	}
	closeStore(t, s)
	if mems, _ := filepath.Glob(filepath.Join(dir, "*.mem")); len(mems) != 0 {
		t.Errorf("memtable logs left after recovery: %v", mems)
	}
}

// readOnlyHelperEnv makes the test binary open a store read-only, print what
// it found and exit (TestBadgerStoreReadOnlyHelper), so that it can run on a
// read-only bind mount in a mount namespace of its own.
const readOnlyHelperEnv = "FAULTLINE_READONLY_HELPER_DIR"

// TestBadgerStoreReadOnlyHelper is the process of TestOpenBadgerStoreOnReadOnlyMedia
// that opens the store; it does nothing in a normal test run.
func TestBadgerStoreReadOnlyHelper(t *testing.T) {
	dir := os.Getenv(readOnlyHelperEnv)
	if dir == "" {
		t.Skip("helper process of TestOpenBadgerStoreOnReadOnlyMedia")
	}
	s, err := OpenReadOnly(dir)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(0)
	}
	all, err := s.All(context.Background())
	fmt.Println("ok:", ids(all), err)
	s.Close()
	os.Exit(0)
}

// TestOpenBadgerStoreOnReadOnlyMedia opens stores in a directory that cannot
// be written: a clean one opens, one left by a killed process says what to
// do (ErrNeedsRecovery), a missing one is ErrNoStore. The directory is made
// read-only with chmod; as root, chmod does not stop writes, so the stores
// are opened in a process of their own, in a mount namespace of its own
// (unshare -m), on a read-only bind mount. Where neither works, only the
// Badger read-only option is left (TestOpenBadgerStoreReadOnly checks that
// a clean open changes nothing) and the test skips.
func TestOpenBadgerStoreOnReadOnlyMedia(t *testing.T) {
	root := t.TempDir()
	clean, killed := filepath.Join(root, "clean"), filepath.Join(root, "killed")
	if err := os.Rename(readOnlyFixture(t), clean); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(killedStore(t), killed); err != nil {
		t.Fatal(err)
	}
	open := func(dir string) string { // what a reader of dir reports
		s, err := OpenReadOnly(dir)
		if err != nil {
			return fmt.Sprint("error: ", err)
		}
		defer s.Close()
		all, err := s.All(context.Background())
		return fmt.Sprint("ok: ", ids(all), " ", err)
	}
	if os.Geteuid() != 0 {
		for _, dir := range []string{root, clean, killed} {
			if err := os.Chmod(dir, 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o755) })
		}
	} else {
		probe := exec.Command("unshare", "-m", "sh", "-c", `mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && ! touch "$1/x" 2>/dev/null`, "sh", root)
		if out, err := probe.CombinedOutput(); err != nil {
			t.Skipf("running as root, and no read-only bind mount (%v %s): only the Badger read-only option is tested", err, out)
		}
		open = func(dir string) string {
			cmd := exec.Command("unshare", "-m", "sh", "-c", `mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && exec "$2" -test.run='^TestBadgerStoreReadOnlyHelper$' -test.count=1`,
				"sh", root, os.Args[0])
			cmd.Env = append(os.Environ(), readOnlyHelperEnv+"="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("helper: %v %s", err, out)
			}
			for line := range strings.Lines(string(out)) {
				if strings.HasPrefix(line, "ok:") || strings.HasPrefix(line, "error:") {
					return strings.TrimSpace(line)
				}
			}
			t.Fatalf("helper said %q", out)
			return ""
		}
	}
	before := listing(t, root)
	if got := open(clean); got != "ok: [1 2 3] <nil>" {
		t.Errorf("clean store on read-only media: %s", got)
	}
	got := open(killed)
	t.Log(got)
	if !strings.HasPrefix(got, "error: "+ErrNeedsRecovery.Error()) || !strings.Contains(got, "writable copy") {
		t.Errorf("killed store on read-only media: %s, want ErrNeedsRecovery and what to do", got)
	}
	if got := open(filepath.Join(clean, "typo")); !strings.HasPrefix(got, "error: "+ErrNoStore.Error()) {
		t.Errorf("missing store on read-only media: %s, want ErrNoStore", got)
	}
	if after := listing(t, root); !slices.Equal(before, after) {
		t.Errorf("the read-only media changed:\nbefore %v\nafter  %v", before, after)
	}
}

// A reader writes no OWNER: a writer turned away by one is not told about
// the dead process a kill left in the files.
func TestLockedByAReaderAfterAKill(t *testing.T) {
	dir := killedStore(t)
	closeStore(t, openBadger(t, dir, 3)) // recovered; OWNER and LOCK gone
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	pid := fmt.Sprint(dead.Process.Pid)
	for name, content := range map[string]string{"LOCK": pid + "\n", ownerFile: `{"pid":` + pid + `,"command":"faultline run"}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore(t, r)
	_, err = Open(dir, 3)
	if !errors.Is(err, ErrLocked) || strings.Contains(err.Error(), "pid "+pid) || !strings.Contains(err.Error(), "one reading it") {
		t.Errorf("open while a reader holds the store: %v, want ErrLocked naming a reader", err)
	}
	t.Log(err)
}
