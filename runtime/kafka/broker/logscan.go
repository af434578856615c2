package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// The embedded broker's log on disk, as kfake writes it (third_party/kfake,
// persist.go): per partition a folder of segments, each a .dat file of
// Kafka record batches one after another and a .idx file beside it with a
// 15-byte entry per batch. With SyncWrites kfake writes a batch to the .dat
// file, then its entry to the .idx file, then syncs both; it rolls to a new
// segment (creating the .dat file, then the .idx file) when the last one
// holds a segment's size, and deletes segments from the front only (the
// .dat file, then the .idx file). So a process killed at any moment leaves
// at most: the last segment's last batch cut off, with no index entry for
// it; or that batch whole and its index entry missing or cut off; or a new
// last segment that is empty, perhaps without its .idx file; or an .idx
// file whose .dat file was deleted before the first one that is left.
// Everything else is damage.

// The layout of a record batch (Kafka's RecordBatch, magic 2).
const (
	batchHeaderBytes = 61 // up to and with the record count
	batchLengthAt    = 8  // int32: the bytes after this field
	batchEpochAt     = 12 // int32: the partition leader epoch
	batchMagicAt     = 16
	batchCRCAt       = 17 // uint32: CRC-32C of everything from batchAttrsAt
	batchAttrsAt     = 21 // int16
	batchDeltaAt     = 23 // int32: the last offset delta
	batchCountAt     = 57 // int32: the number of records
	maxBatchLength   = 1 << 30

	attrTransactional = 0x10
	attrControl       = 0x20
)

// The layout of a kfake index entry: version, a checksum byte (the low byte
// of the CRC-32C of the rest), epoch, max earlier timestamp, flags.
const (
	indexEntryBytes = 15
	indexVersion    = 1
	indexFlagInTx   = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segmentFile is one segment of a partition's log as the check reads it.
type segmentFile struct {
	name   string // the .dat file's name, for messages
	base   int64  // the offset its name says it starts at
	dat    []byte
	idx    []byte
	hasIdx bool
}

// segmentScan is what a segment holds: its whole batches, from the offset
// it is named after to next (equal when it holds none), and what follows
// them.
type segmentScan struct {
	next     int64
	batches  int
	cut      int // bytes of a batch cut off after the whole ones
	entries  int // whole index entries
	cutEntry int // bytes of an index entry cut off after the whole ones
}

// scanSegment reads a segment's batches and index entries and checks each:
// a whole batch must pass its CRC-32C (Kafka's, over everything from the
// attributes on), start at the offset after the batch before (the first at
// the offset the file is named after; later than the one before, when gaps,
// as compaction leaves them) and match its index entry. A cut-off batch at
// the end is returned as cut, for scanEnd to judge.
func scanSegment(s segmentFile, gaps bool) (segmentScan, error) {
	sc := segmentScan{next: s.base}
	sc.entries, sc.cutEntry = len(s.idx)/indexEntryBytes, len(s.idx)%indexEntryBytes
	pos := 0
	for pos < len(s.dat) {
		raw := s.dat[pos:]
		if len(raw) < batchHeaderBytes || 12+int64(int32(binary.BigEndian.Uint32(raw[batchLengthAt:]))) > int64(len(raw)) {
			if err := checkCutBatch(raw, sc.next, pos); err != nil {
				return sc, err
			}
			sc.cut = len(raw)
			break
		}
		size, err := checkBatch(raw, sc.next, gaps && sc.batches > 0)
		if err != nil {
			if sc.batches == 0 && int64(binary.BigEndian.Uint64(raw)) != s.base {
				return sc, fmt.Errorf("its name says it starts at offset %d, and its first record batch says offset %d", s.base, int64(binary.BigEndian.Uint64(raw)))
			}
			return sc, fmt.Errorf("the record batch at byte %d (offset %d) %w", pos, binary.BigEndian.Uint64(raw), err)
		}
		off := int64(binary.BigEndian.Uint64(raw))
		if sc.batches < sc.entries {
			var epoch epochChanged
			switch err := checkIndexEntry(s.idx[sc.batches*indexEntryBytes:], raw, gaps); {
			case errors.As(err, &epoch):
				return sc, fmt.Errorf("the record batch at byte %d (offset %d) says leader epoch %d, and its index entry, which its checksum holds, %d: the batch's epoch, which its CRC-32C does not cover, was changed",
					pos, off, epoch.batch, epoch.entry)
			case err != nil:
				return sc, indexDamage{fmt.Errorf("entry %d (of the record batch at offset %d) %w", sc.batches, off, err)}
			}
		}
		sc.next = off + int64(binary.BigEndian.Uint32(raw[batchDeltaAt:])) + 1
		sc.batches++
		pos += size
	}
	return sc, nil
}

// checkBatch checks the whole batch at the start of raw, which must be at
// offset want (or later, when gaps), and returns its size.
func checkBatch(raw []byte, want int64, gaps bool) (int, error) {
	length := int(int32(binary.BigEndian.Uint32(raw[batchLengthAt:])))
	if length < batchHeaderBytes-12 || length > maxBatchLength {
		return 0, fmt.Errorf("says it is %d bytes long, which no record batch is", length)
	}
	if raw[batchMagicAt] != 2 {
		return 0, fmt.Errorf("has magic %d, not 2", raw[batchMagicAt])
	}
	size := 12 + length
	if got, want := crc32.Checksum(raw[batchAttrsAt:size], castagnoli), binary.BigEndian.Uint32(raw[batchCRCAt:]); got != want {
		return 0, fmt.Errorf("fails its CRC-32C (it says %08x, its bytes give %08x)", want, got)
	}
	off := int64(binary.BigEndian.Uint64(raw))
	delta := int32(binary.BigEndian.Uint32(raw[batchDeltaAt:]))
	switch {
	case off != want && !(gaps && off > want):
		return 0, fmt.Errorf("is at offset %d, where offset %d should follow", off, want)
	case delta < 0:
		return 0, fmt.Errorf("has a last offset delta of %d", delta)
	case !gaps && int32(binary.BigEndian.Uint32(raw[batchCountAt:])) != delta+1:
		return 0, fmt.Errorf("holds %d records and a last offset delta of %d", int32(binary.BigEndian.Uint32(raw[batchCountAt:])), delta)
	}
	return size, nil
}

// checkCutBatch checks what there is of a batch cut off at the end of a
// segment, which must be the start of the batch at offset want: a write cut
// short writes a prefix of the batch.
func checkCutBatch(raw []byte, want int64, pos int) error {
	if len(raw) >= 8 {
		if off := int64(binary.BigEndian.Uint64(raw)); off != want {
			return fmt.Errorf("the %d bytes after the last whole record batch (at byte %d) are no batch at offset %d: they say offset %d", len(raw), pos, want, off)
		}
	}
	if len(raw) >= 12 {
		if length := int32(binary.BigEndian.Uint32(raw[batchLengthAt:])); length < batchHeaderBytes-12 || length > maxBatchLength {
			return fmt.Errorf("the %d bytes after the last whole record batch (at byte %d) say the batch is %d bytes long, which no record batch is", len(raw), pos, length)
		}
	}
	if len(raw) > batchMagicAt && raw[batchMagicAt] != 2 {
		return fmt.Errorf("the %d bytes after the last whole record batch (at byte %d) have magic %d, not 2", len(raw), pos, raw[batchMagicAt])
	}
	return nil
}

// checkIndexEntry checks a batch's index entry: its version and checksum,
// and that it says what the batch says (its leader epoch, and whether it
// is a transaction's data; compaction rewrites the latter).
func checkIndexEntry(e, batch []byte, gaps bool) error {
	e = e[:indexEntryBytes]
	switch {
	case e[0] != indexVersion:
		return fmt.Errorf("has version %d, not %d", e[0], indexVersion)
	case byte(crc32.Checksum(e[2:], castagnoli)) != e[1]:
		return fmt.Errorf("fails its checksum")
	case binary.LittleEndian.Uint32(e[2:]) != binary.BigEndian.Uint32(batch[batchEpochAt:]):
		return epochChanged{entry: int32(binary.LittleEndian.Uint32(e[2:])), batch: int32(binary.BigEndian.Uint32(batch[batchEpochAt:]))}
	}
	attrs := binary.BigEndian.Uint16(batch[batchAttrsAt:])
	if inTx := e[14]&indexFlagInTx != 0; !gaps && attrs&attrControl == 0 && inTx != (attrs&attrTransactional != 0) {
		return fmt.Errorf("says the batch is in a transaction: %t, and the batch says %t", inTx, !inTx)
	}
	return nil
}

// scanEnd judges how a scanned segment ends, last saying whether it is its
// partition's last: only the last can end as a killed process left it (see
// the top of this file).
func scanEnd(s segmentFile, sc segmentScan, last bool) error {
	switch {
	case !s.hasIdx && len(s.dat) > 0:
		return indexDamage{fmt.Errorf("it is missing, and its segment %s holds record batches", s.name)}
	case sc.batches == 0 && !last:
		return fmt.Errorf("it holds no whole record batch, and segments follow it")
	case sc.cut > 0 && !last:
		return fmt.Errorf("its last %d bytes are a record batch cut off, and segments follow it", sc.cut)
	case sc.cut > 0 && sc.entries > sc.batches:
		return fmt.Errorf("its last %d bytes are a record batch cut off, which its index lists: it was cut short", sc.cut)
	case sc.entries > sc.batches:
		return fmt.Errorf("its index lists %d record batches, and it holds %d whole ones: it was cut short", sc.entries, sc.batches)
	case sc.entries == sc.batches && sc.cutEntry == 0:
		return nil // whole, or killed while writing its last batch
	case sc.cut == 0 && last && sc.entries == sc.batches-1:
		return nil // killed between its last batch and that batch's entry
	}
	return indexDamage{fmt.Errorf("it lists %d record batches (and %d bytes more), and its segment %s holds %d", sc.entries, sc.cutEntry, s.name, sc.batches)}
}

// epochChanged: a batch's leader epoch is not its index entry's. The
// entry passed its checksum; the batch's CRC-32C does not cover its epoch:
// the damage is in the segment.
type epochChanged struct{ entry, batch int32 }

func (e epochChanged) Error() string {
	return fmt.Sprintf("says leader epoch %d, and the batch %d", e.entry, e.batch)
}

// indexDamage is damage found in a segment's index file rather than in the
// segment itself.
type indexDamage struct{ error }

func (e indexDamage) Unwrap() error { return e.error }
