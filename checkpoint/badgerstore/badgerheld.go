package badgerstore

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/atomicfile"
)

// heldFile is the file beside Badger's in the store's directory that lists
// the metadata records the store holds (see held).
const heldFile = "HELD"

// heldMagic starts HELD: faultline held ids, version 1.
const heldMagic = "FLH1"

// held is what HELD records: the highest id ever added, and the ids of the
// metadata records the store holds: the retained checkpoints, every
// savepoint, and the damaged and lost records until Delete.
//
// Badger keeps its newest writes — the metadata, sys/max-id and sys/newest
// of the checkpoints completed since its memtable was last flushed into a
// table — only in its memtable log (a *.mem file, several hundred
// checkpoints' worth). A store whose memtable log is deleted or lost (a
// careless copy, a damaged disk) forgets them without a trace: Badger keeps
// no list of its memtable logs. HELD lives outside Badger, so such a store
// still knows what it lost: an id HELD lists whose metadata record is
// missing is lost (ErrLost), and ids go on after HELD's highest.
//
// No crash of the process, at any moment, makes HELD list an id whose
// record the store does not hold, so a loss is never reported falsely:
//
//   - an id enters HELD only after the Badger transaction that adds its
//     record has committed, on disk (synchronous writes). A crash before
//     the commit leaves neither (Badger replays its memtable log a whole
//     transaction at a time and drops one cut short); a crash between the
//     commit and the write of HELD leaves the record, not yet listed, and
//     the next read-write open lists it (see settle);
//   - an id leaves HELD before the Badger transaction that deletes its
//     record (Delete, retention in Add, Clear): a crash between the two
//     leaves the record unlisted, which is no loss, and the next open
//     lists it again; a Delete cut short is simply not done;
//   - HELD is written whole (atomicfile: a temporary file, synced, renamed
//     over it, the folder synced), so a crash while writing it leaves the
//     old list or the new one. A write that fails after a commit only
//     leaves HELD behind the store, which reports nothing falsely either.
//
// A missing or damaged HELD (a store written before it existed) says
// nothing: the store then knows only sys/newest, as before.
type held struct {
	maxID int64
	ids   []int64 // ascending, each at least 1
}

// encodeHeld is the content of HELD: heldMagic, the highest id (8 bytes),
// the number of ids (4 bytes), the ids (8 bytes each), and the CRC32C of
// all of it (4 bytes), big endian.
func encodeHeld(h held) []byte {
	b := append([]byte(heldMagic), make([]byte, 12, 12+8*len(h.ids)+4)...)
	binary.BigEndian.PutUint64(b[len(heldMagic):], uint64(h.maxID))
	binary.BigEndian.PutUint32(b[len(heldMagic)+8:], uint32(len(h.ids)))
	for _, id := range h.ids {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
	}
	return binary.BigEndian.AppendUint32(b, checkpoint.Checksum(b))
}

// decodeHeld reads what encodeHeld made; ok is false when b is damaged.
func decodeHeld(b []byte) (h held, ok bool) {
	head := len(heldMagic) + 12
	if len(b) < head+4 || string(b[:len(heldMagic)]) != heldMagic {
		return held{}, false
	}
	body := b[:len(b)-4]
	if binary.BigEndian.Uint32(b[len(body):]) != checkpoint.Checksum(body) {
		return held{}, false
	}
	n := binary.BigEndian.Uint32(b[len(heldMagic)+8:])
	if uint64(len(body)-head) != 8*uint64(n) {
		return held{}, false
	}
	h.maxID = int64(binary.BigEndian.Uint64(b[len(heldMagic):]))
	h.ids = make([]int64, 0, n)
	for off := head; off < len(body); off += 8 {
		id := int64(binary.BigEndian.Uint64(b[off:]))
		if id < 1 || (len(h.ids) > 0 && id <= h.ids[len(h.ids)-1]) {
			return held{}, false
		}
		h.ids = append(h.ids, id)
	}
	return h, h.maxID >= 0
}

// readHeld reads HELD in dir; ok is false when it is missing, not a
// regular file, or damaged.
func readHeld(dir string) (h held, ok bool, err error) {
	path := filepath.Join(dir, heldFile)
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return held{}, false, nil
	}
	if err != nil {
		return held{}, false, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > 1<<24 {
		return held{}, false, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return held{}, false, err
	}
	h, ok = decodeHeld(b)
	return h, ok, nil
}

// writeHeld replaces HELD in dir with h, whole.
func writeHeld(dir string, h held) error {
	// The store's folder must be there: one removed under a run must
	// stay removed for the run to see it.
	return atomicfile.Replace(filepath.Join(dir, heldFile), encodeHeld(h))
}

// storeIDs is what a store says of its ids when it opens: sys/max-id and
// sys/newest (with whether each was there and intact), HELD (with whether
// it was), and the ids of the metadata records it has, damaged or not.
type storeIDs struct {
	sysMax, sysNewest     int64
	sysMaxOK, sysNewestOK bool
	held                  held
	heldOK                bool
	present               []int64 // ascending
}

// settle decides, from what a store says of its ids, its highest id, the
// newest id it must hold, and the ids it must hold (ascending): HELD's, the
// newest, and every record present. An id it must hold whose record is not
// present is lost. HELD rules over a missing or damaged sys/newest; a store
// without either (written before both existed) must hold its highest id.
func settle(in storeIDs) (maxID, newest int64, must []int64) {
	maxID = max(in.sysMax, in.held.maxID)
	if len(in.present) > 0 {
		maxID = max(maxID, in.present[len(in.present)-1])
	}
	switch {
	case in.sysNewestOK:
		newest = in.sysNewest
		if !in.sysMaxOK {
			maxID = max(maxID, newest)
		}
	case !in.heldOK:
		newest = maxID
	}
	must = slices.Concat(in.held.ids, in.present)
	if newest > 0 {
		must = append(must, newest)
	}
	slices.Sort(must)
	must = slices.Compact(must)
	if len(must) > 0 {
		newest = max(newest, must[len(must)-1])
	}
	return maxID, newest, must
}

// lostIDs are the ids of must whose record is not present (both
// ascending).
func lostIDs(must, present []int64) []int64 {
	var out []int64
	for _, id := range must {
		if _, found := slices.BinarySearch(present, id); !found {
			out = append(out, id)
		}
	}
	return out
}

// presentIDs are the ids of entries, ascending (list sorts them by id);
// a key that names no id is left out.
func presentIDs(entries []metaEntry) []int64 {
	out := make([]int64, 0, len(entries))
	for _, e := range entries {
		if e.id >= 1 {
			out = append(out, e.id)
		}
	}
	return out
}

// without is ids with none of drop, in a new slice.
func without(ids []int64, drop ...int64) []int64 {
	return slices.DeleteFunc(slices.Clone(ids), func(id int64) bool { return slices.Contains(drop, id) })
}

// with is ids and add, ascending and without duplicates, in a new slice.
func with(ids []int64, add ...int64) []int64 {
	out := slices.Concat(ids, add)
	slices.Sort(out)
	return slices.Compact(out)
}
