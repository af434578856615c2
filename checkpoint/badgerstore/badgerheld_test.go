package badgerstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
)

// crashCopy copies the files of the open store s into a new directory, as a
// copy taken while a process holds the store (or the store a crash leaves):
// its newest writes are in memtable logs (*.mem) that no Close has flushed.
// Badger maps its files shared, so a read sees what it wrote.
func crashCopy(t *testing.T, s *Store) string {
	t.Helper()
	to := t.TempDir()
	entries, err := os.ReadDir(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == lockFile || e.Name() == ownerFile {
			continue // who held it; no data
		}
		b, err := os.ReadFile(filepath.Join(s.Dir(), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// removeMemtableLogs deletes every memtable log (*.mem) in dir and returns
// how many there were.
func removeMemtableLogs(t *testing.T, dir string) int {
	t.Helper()
	mems, err := filepath.Glob(filepath.Join(dir, "*"+memLogExt))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mems {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	return len(mems)
}

// A memtable log deleted from a store takes with it, key and all, what was
// written since the memtable was last flushed into a table: the newest
// metadata records, sys/newest and sys/max-id. The store still reports
// those checkpoints as lost, opened read-only and read-write, and keeps
// numbering after them.
func TestBadgerStoreMemtableLogDeleted(t *testing.T) {
	ctx := context.Background()
	// flush is an id after whose Add the memtables are flushed into a table
	// (0: never); lost are the ids whose records the memtable log held.
	cases := []struct {
		name     string
		retained int
		add      []checkpoint.Kind // checkpoint ids 1, 2, …
		flush    int64
		intact   []int64
		lost     []int64
	}{
		{"everything in the memtable", 3, []checkpoint.Kind{checkpoint.KindCheckpoint, checkpoint.KindCheckpoint, checkpoint.KindCheckpoint}, 0, nil, []int64{1, 2, 3}},
		{"the newest in the memtable", 3, []checkpoint.Kind{checkpoint.KindCheckpoint, checkpoint.KindCheckpoint, checkpoint.KindCheckpoint}, 2, []int64{1, 2}, []int64{3}},
		{"a savepoint before the newest", 3, []checkpoint.Kind{checkpoint.KindCheckpoint, checkpoint.KindSavepoint, checkpoint.KindCheckpoint}, 1, []int64{1}, []int64{2, 3}},
		// Retention's deletion of 3 went with the memtable log: its record
		// (and its blob) are back.
		{"retention's deletions too", 2, []checkpoint.Kind{checkpoint.KindCheckpoint, checkpoint.KindCheckpoint, checkpoint.KindCheckpoint, checkpoint.KindCheckpoint, checkpoint.KindCheckpoint}, 4, []int64{3, 4}, []int64{5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openBadger(t, t.TempDir(), tc.retained)
			for i, kind := range tc.add {
				id := int64(i + 1)
				putAndAdd(t, s, id, kind, 2000, src0, sink)
				if id == tc.flush {
					s.flushDeletions()
				}
			}
			dir := crashCopy(t, s)
			if n := removeMemtableLogs(t, dir); n == 0 {
				t.Fatal("no memtable log in the copy")
			}
			max := int64(len(tc.add))

			r, err := OpenReadOnly(dir)
			if err != nil {
				t.Fatalf("read-only open: %v", err)
			}
			checkLost(t, "read-only", r, tc.intact, tc.lost, max)
			closeStore(t, r)

			w := openBadger(t, dir, tc.retained)
			checkLost(t, "read-write", w, tc.intact, tc.lost, max)
			putAndAdd(t, w, w.MaxID()+1, checkpoint.KindCheckpoint, 100, sink)
			if got := w.MaxID(); got != max+1 {
				t.Errorf("after an Add: MaxID = %d, want %d", got, max+1)
			}
			// The loss stays until Delete acknowledges it.
			if d, err := w.Damaged(ctx); err != nil || !slices.Equal(d, tc.lost) {
				t.Errorf("after an Add: Damaged = %v, %v; want %v", d, err, tc.lost)
			}
			for _, id := range tc.lost {
				if err := w.Delete(ctx, id); err != nil {
					t.Errorf("Delete(%d) of a lost checkpoint: %v", id, err)
				}
			}
			if d, err := w.Damaged(ctx); err != nil || len(d) != 0 {
				t.Errorf("after Delete: Damaged = %v, %v; want none", d, err)
			}
			closeStore(t, w)
			w = openBadger(t, dir, tc.retained)
			if d, err := w.Damaged(ctx); err != nil || len(d) != 0 {
				t.Errorf("reopened after Delete: Damaged = %v, %v; want none", d, err)
			}
		})
	}
}

// checkLost checks that s lists intact, reports lost as lost and numbers
// after max.
func checkLost(t *testing.T, how string, s *Store, intact, lost []int64, max int64) {
	t.Helper()
	ctx := context.Background()
	all, err := s.All(ctx)
	if err != nil || !slices.Equal(ids(all), intact) {
		t.Errorf("%s: All = %v, %v; want %v", how, ids(all), err, intact)
	}
	d, err := s.Damaged(ctx)
	if err != nil || !slices.Equal(d, lost) {
		t.Errorf("%s: Damaged = %v, %v; want %v", how, d, err, lost)
	}
	for _, id := range lost {
		err := s.Verify(ctx, id)
		if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "metadata record is gone") {
			t.Errorf("%s: Verify(%d) = %v, want ErrLost", how, id, err)
		}
	}
	if got := s.MaxID(); got != max {
		t.Errorf("%s: MaxID = %d, want %d", how, got, max)
	}
}

func TestHeldEncoding(t *testing.T) {
	for _, h := range []held{{}, {maxID: 7}, {maxID: 9, ids: []int64{2, 5, 9}}} {
		got, ok := decodeHeld(encodeHeld(h))
		if !ok || got.maxID != h.maxID || !slices.Equal(got.ids, h.ids) {
			t.Errorf("decodeHeld(encodeHeld(%v)) = %v, %v", h, got, ok)
		}
	}
	good := encodeHeld(held{maxID: 9, ids: []int64{2, 5, 9}})
	flip := func(i int) []byte {
		b := slices.Clone(good)
		b[i] ^= 1
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"cut short", good[:len(good)-3]},
		{"a byte flipped", flip(20)},
		{"another magic", append([]byte("FLX1"), good[4:]...)},
		{"an id too many", encodeHeldRaw(9, 3, 2, 5, 9, 10)},
		{"ids out of order", encodeHeldRaw(9, 3, 5, 2, 9)},
		{"an id 0", encodeHeldRaw(9, 2, 0, 9)},
	} {
		if h, ok := decodeHeld(tc.b); ok {
			t.Errorf("%s: decodeHeld = %v, want damaged", tc.name, h)
		}
	}
}

// encodeHeldRaw is encodeHeld's layout with a count and ids as given, right
// or wrong, and a right checksum.
func encodeHeldRaw(maxID int64, n uint32, ids ...int64) []byte {
	b := binary.BigEndian.AppendUint64([]byte(heldMagic), uint64(maxID))
	b = binary.BigEndian.AppendUint32(b, n)
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
	}
	return binary.BigEndian.AppendUint32(b, checkpoint.Checksum(b))
}

func TestSettle(t *testing.T) {
	ids := func(v ...int64) []int64 { return v }
	cases := []struct {
		name       string
		in         storeIDs
		max, newer int64
		must       []int64
	}{
		{"a new store", storeIDs{}, 0, 0, nil},
		{"all agree", storeIDs{sysMax: 5, sysMaxOK: true, sysNewest: 5, sysNewestOK: true,
			held: held{maxID: 5, ids: ids(3, 4, 5)}, heldOK: true, present: ids(3, 4, 5)}, 5, 5, ids(3, 4, 5)},
		// A crash between Badger's commit and HELD's write.
		{"HELD behind", storeIDs{sysMax: 6, sysMaxOK: true, sysNewest: 6, sysNewestOK: true,
			held: held{maxID: 5, ids: ids(4, 5)}, heldOK: true, present: ids(4, 5, 6)}, 6, 6, ids(4, 5, 6)},
		// A crash between HELD's write and Badger's deletion.
		{"a deletion not done", storeIDs{sysMax: 6, sysMaxOK: true, sysNewest: 6, sysNewestOK: true,
			held: held{maxID: 6, ids: ids(5)}, heldOK: true, present: ids(5, 6)}, 6, 6, ids(5, 6)},
		// A memtable log deleted: records, sys/max-id and sys/newest gone.
		{"the newest gone", storeIDs{sysMax: 4, sysMaxOK: true, sysNewest: 4, sysNewestOK: true,
			held: held{maxID: 6, ids: ids(4, 5, 6)}, heldOK: true, present: ids(4)}, 6, 6, ids(4, 5, 6)},
		{"everything gone", storeIDs{held: held{maxID: 6, ids: ids(2, 6)}, heldOK: true}, 6, 6, ids(2, 6)},
		// HELD rules over a missing sys/newest: the newest was deleted.
		{"newest deleted, sys/newest gone", storeIDs{sysMax: 6, sysMaxOK: true,
			held: held{maxID: 6, ids: ids(4)}, heldOK: true, present: ids(4)}, 6, 4, ids(4)},
		// Stores written before HELD, or before sys/newest too.
		{"no HELD", storeIDs{sysMax: 6, sysMaxOK: true, sysNewest: 6, sysNewestOK: true, present: ids(5)}, 6, 6, ids(5, 6)},
		{"neither", storeIDs{sysMax: 6, sysMaxOK: true, present: ids(5)}, 6, 6, ids(5, 6)},
		{"no max id", storeIDs{sysNewest: 7, sysNewestOK: true, present: ids(5)}, 7, 7, ids(5, 7)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			max, newest, must := settle(tc.in)
			if max != tc.max || newest != tc.newer || !slices.Equal(must, tc.must) {
				t.Errorf("settle = %d, %d, %v; want %d, %d, %v", max, newest, must, tc.max, tc.newer, tc.must)
			}
		})
	}
}

func TestLostIDs(t *testing.T) {
	for _, tc := range []struct{ must, present, lost []int64 }{
		{nil, nil, nil},
		{[]int64{1, 2}, []int64{1, 2}, nil},
		{[]int64{1, 2, 3}, []int64{2}, []int64{1, 3}},
		{[]int64{4}, []int64{1, 2, 3}, []int64{4}},
	} {
		if got := lostIDs(tc.must, tc.present); !slices.Equal(got, tc.lost) {
			t.Errorf("lostIDs(%v, %v) = %v, want %v", tc.must, tc.present, got, tc.lost)
		}
	}
}

// HELD behind the store, as a crash leaves it between Badger's commit and
// HELD's write (an Add), or between HELD's write and Badger's (a Delete), or
// missing or damaged, reports no loss; a read-write open brings it up to
// what the store holds, a read-only one leaves it.
func TestBadgerStoreHeldBehindTheStore(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		held []byte // nil: no HELD
	}{
		{"an Add cut short", encodeHeld(held{maxID: 2, ids: []int64{1, 2}})},
		{"a Delete cut short", encodeHeld(held{maxID: 3, ids: []int64{1, 2}})},
		{"a Clear cut short", encodeHeld(held{})},
		{"missing", nil},
		{"damaged", []byte("FLH1 and then nothing that reads")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openBadger(t, dir, 3)
			for id := int64(1); id <= 3; id++ {
				putAndAdd(t, s, id, checkpoint.KindCheckpoint, 2000, src0, sink)
			}
			closeStore(t, s)
			path := filepath.Join(dir, heldFile)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if tc.held != nil {
				if err := os.WriteFile(path, tc.held, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r, err := OpenReadOnly(dir)
			if err != nil {
				t.Fatal(err)
			}
			checkLost(t, "read-only", r, []int64{1, 2, 3}, nil, 3)
			closeStore(t, r)
			if b, _ := os.ReadFile(path); !slices.Equal(b, tc.held) {
				t.Errorf("a read-only open changed HELD to %x", b)
			}
			w := openBadger(t, dir, 3)
			checkLost(t, "read-write", w, []int64{1, 2, 3}, nil, 3)
			if h, ok, err := readHeld(dir); !ok || err != nil || h.maxID != 3 || !slices.Equal(h.ids, []int64{1, 2, 3}) {
				t.Errorf("HELD after a read-write open = %v, %v, %v; want 3 and [1 2 3]", h, ok, err)
			}
			if d, err := w.Damaged(ctx); err != nil || len(d) != 0 {
				t.Errorf("Damaged = %v, %v", d, err)
			}
		})
	}
}

// HELD follows Add, retention, Delete and Clear.
func TestBadgerStoreHeldFollowsTheStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBadger(t, dir, 2)
	want := func(step string, max int64, ids ...int64) {
		t.Helper()
		h, ok, err := readHeld(dir)
		if !ok || err != nil || h.maxID != max || !slices.Equal(h.ids, ids) {
			t.Errorf("%s: HELD = %v, %v, %v; want %d and %v", step, h, ok, err, max, ids)
		}
	}
	want("new store", 0)
	putAndAdd(t, s, 1, checkpoint.KindCheckpoint, 100, sink)
	putAndAdd(t, s, 2, checkpoint.KindSavepoint, 100, sink)
	putAndAdd(t, s, 3, checkpoint.KindCheckpoint, 100, sink)
	want("three added", 3, 1, 2, 3)
	putAndAdd(t, s, 4, checkpoint.KindCheckpoint, 100, sink)
	want("retention", 4, 2, 3, 4)
	if err := s.Delete(ctx, 4); err != nil {
		t.Fatal(err)
	}
	want("the newest deleted", 4, 2, 3)
	if err := s.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	want("cleared", 0)
}

// Something other than a file where HELD belongs: a read-only open reads
// the store without it; a read-write open says what to remove.
func TestBadgerStoreHeldReplacedByAFolder(t *testing.T) {
	dir := t.TempDir()
	s := openBadger(t, dir, 3)
	putAndAdd(t, s, 1, checkpoint.KindCheckpoint, 100, sink)
	closeStore(t, s)
	path := filepath.Join(dir, heldFile)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkLost(t, "read-only", r, []int64{1}, nil, 1)
	closeStore(t, r)
	_, err = Open(dir, 3)
	t.Log(err)
	if !errors.Is(err, ErrHeldFileInTheWay) || !strings.Contains(err.Error(), path+" is a folder") || !strings.Contains(err.Error(), "remove that folder") {
		t.Errorf("open with a folder as HELD: %v, want ErrHeldFileInTheWay naming it", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	closeStore(t, openBadger(t, dir, 3))
}

// A process that adds checkpoints as fast as it can, killed at a random
// moment anywhere in an Add and the writes before it (10–20 ms), many
// times, never leaves a store that reports a checkpoint lost or damaged:
// HELD never lists a record the store lacks (see held). With HELD written
// before Badger's commit instead of after, it reports a loss in most runs.
func TestBadgerStoreKilledNeverReportsALoss(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var lastAdded int64
	for round := range 25 {
		h := startHelper(t, "churn", dir)
		var printed []string
		for range 1 + rand.IntN(5) {
			printed = append(printed, h.next(t))
		}
		time.Sleep(time.Duration(rand.IntN(20_000)) * time.Microsecond)
		for _, line := range append(printed, h.kill(t)...) {
			if _, err := fmt.Sscanf(line, "added %d", &lastAdded); err != nil {
				t.Fatalf("helper says %q, stderr %q", line, h.stderr.String())
			}
		}
		s := openBadger(t, dir, 2)
		d, err := s.Damaged(ctx)
		if err != nil || len(d) != 0 {
			t.Errorf("round %d: Damaged = %v, %v; want none", round, d, err)
		}
		// The Add in flight when the helper died may have committed.
		latest, err := s.Latest(ctx)
		if err != nil || latest == nil {
			t.Fatalf("round %d: Latest = %v, %v", round, latest, err)
		}
		if latest.ID < lastAdded || latest.ID > lastAdded+1 || s.MaxID() != latest.ID {
			t.Errorf("round %d: Latest %d, MaxID %d; last added %d", round, latest.ID, s.MaxID(), lastAdded)
		}
		lastAdded = latest.ID
		closeStore(t, s)
	}
}
