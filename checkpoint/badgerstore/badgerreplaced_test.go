package badgerstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/dbclose"
)

// A store whose directory was removed and made again by a new run (a user
// who deleted the state dir of a faultline that is still closing, and
// started another) closes without touching the new store: Badger's own
// Close would write its memtable there and delete the new store's memtable
// log, which has the same name, and the new run's checkpoints would be
// lost to its next start.
func TestCloseLeavesAStoreMadeAgainInItsDirAlone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkpoints")
	old, err := Open(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	putAndAdd(t, old, 1, checkpoint.KindCheckpoint, 64, checkpoint.TaskID{Operator: "sink", Index: 0})
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	putAndAdd(t, s, 7, checkpoint.KindCheckpoint, 64, checkpoint.TaskID{Operator: "sink", Index: 0})
	if err := old.Close(); !errors.Is(err, dbclose.ErrDirGone) {
		t.Fatalf("Close of the old store = %v, want ErrDirGone", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ownerFile)); err != nil {
		t.Fatalf("the new store's %s: %v", ownerFile, err)
	}
	closeStore(t, s)
	s = openBadger(t, dir, 3)
	c, err := s.Latest(context.Background())
	if err != nil || c == nil || c.ID != 7 {
		t.Fatalf("the new store's latest = %+v, %v; want checkpoint 7", c, err)
	}
}
