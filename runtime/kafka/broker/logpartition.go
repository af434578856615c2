package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// scanPartition reads a partition's folder and checks its segments: each on
// its own (scanSegment, scanEnd), one after another without a gap, and
// against the snapshot.json the broker wrote when it last stopped cleanly.
// gaps says that compaction may leave gaps between offsets.
func scanPartition(pdir string, gaps bool) (partitionLog, error) {
	pl := partitionLog{dir: pdir}
	files, err := os.ReadDir(pdir)
	if err != nil {
		return pl, fmt.Errorf("the embedded Kafka broker's log: %w", err)
	}
	dats, idxs := segmentNames(files)
	if err := checkOrphanIndexes(pdir, dats, idxs); err != nil {
		return pl, err
	}
	sizes := map[int64]int64{}
	var buf []byte
	var next int64
	some := false
	for i, base := range dats {
		s, err := readSegment(pdir, base, idxs[base], &buf)
		if err != nil {
			return pl, err
		}
		path := filepath.Join(pdir, s.name)
		if err := followOn(base, next, i > 0, gaps); err != nil {
			return pl, damaged(path, "%v", err)
		}
		sc, err := scanSegment(s, gaps)
		if err == nil {
			err = scanEnd(s, sc, i == len(dats)-1)
		}
		if errors.As(err, new(indexDamage)) {
			path = filepath.Join(pdir, strconv.FormatInt(base, 10)+".idx")
		}
		if err != nil {
			return pl, damaged(path, "%v", err)
		}
		if sc.batches > 0 {
			if !some {
				pl.start = base
			}
			pl.end, some = sc.next, true
		}
		next, sizes[base] = sc.next, int64(len(s.dat))
	}
	return pl, checkSnapshot(&pl, dats, sizes, gaps)
}

// followOn checks that a segment starting at base follows the one before,
// which ends before offset prev (when there is one before).
func followOn(base, prev int64, before, gaps bool) error {
	switch {
	case !before || base == prev || gaps && base > prev:
		return nil
	case base > prev:
		return fmt.Errorf("it starts at offset %d, and the segment before it ends before offset %d: the records from %d to %d are gone (a segment between them is missing)", base, prev, prev, base-1)
	}
	return fmt.Errorf("it starts at offset %d, inside the segment before it, which ends before offset %d", base, prev)
}

// segmentNames returns the base offsets of the .dat files, sorted, and
// those of the .idx files.
func segmentNames(files []os.DirEntry) (dats []int64, idxs map[int64]bool) {
	idxs = map[int64]bool{}
	for _, f := range files {
		name, ext, ok := strings.Cut(f.Name(), ".")
		base, err := strconv.ParseInt(name, 10, 64)
		if !ok || err != nil || f.IsDir() {
			continue
		}
		switch ext {
		case "dat":
			dats = append(dats, base)
		case "idx":
			idxs[base] = true
		}
	}
	slices.Sort(dats)
	return dats, idxs
}

// checkOrphanIndexes refuses an index file without its segment file, but
// before the first segment: the broker deletes a segment's .dat file
// before its .idx file, from the front of the log, and never the last
// segment (see Retention).
func checkOrphanIndexes(pdir string, dats []int64, idxs map[int64]bool) error {
	for base := range idxs {
		if !slices.Contains(dats, base) && (len(dats) == 0 || base > dats[0]) {
			return damaged(filepath.Join(pdir, strconv.FormatInt(base, 10)+".dat"), "it is missing, and its index %d.idx is there", base)
		}
	}
	return nil
}

// readSegment reads a segment's .dat file and its .idx file, if there is
// one, into buf (grown as needed, and reused for the next segment).
func readSegment(pdir string, base int64, hasIdx bool, buf *[]byte) (segmentFile, error) {
	s := segmentFile{name: strconv.FormatInt(base, 10) + ".dat", base: base, hasIdx: hasIdx}
	var err error
	if s.dat, err = readInto(filepath.Join(pdir, s.name), buf); err != nil {
		return s, fmt.Errorf("the embedded Kafka broker's log: %w", err)
	}
	if hasIdx {
		if s.idx, err = os.ReadFile(filepath.Join(pdir, strconv.FormatInt(base, 10)+".idx")); err != nil {
			return s, fmt.Errorf("the embedded Kafka broker's log: %w", err)
		}
	}
	return s, nil
}

// readInto reads the file at path into buf.
func readInto(path string, buf *[]byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := slices.Grow((*buf)[:0], int(fi.Size()))[:fi.Size()]
	*buf = b
	n, err := io.ReadFull(f, b)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil // shorter than it was a moment ago: read what there is
	}
	return b[:n], err
}

// partitionSnapshot is what the broker writes of a partition when it stops
// cleanly (kfake's persistPartSnapshot).
type partitionSnapshot struct {
	HighWatermark  int64 `json:"high_watermark"`
	LogStartOffset int64 `json:"log_start_offset"`
	Segments       []struct {
		Base int64 `json:"base_offset"`
		Size int64 `json:"size"`
	} `json:"segments"`
}

// checkSnapshot checks a partition's segments against its snapshot.json,
// written when the broker last stopped cleanly: the log only grew since,
// and lost segments at its front only, so each segment it lists from the
// first one left must still be there, at least as long, and the log must
// end no earlier. A snapshot that matches the segments exactly gives the
// log's start, as the broker reads it.
func checkSnapshot(pl *partitionLog, dats []int64, sizes map[int64]int64, gaps bool) error {
	path := filepath.Join(pl.dir, "snapshot.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || gaps {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the embedded Kafka broker's log: %w", err)
	}
	var snap partitionSnapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return damaged(path, "it cannot be read (%v)", err)
	}
	same := len(snap.Segments) == len(dats)
	for i, s := range snap.Segments {
		size, ok := sizes[s.Base]
		switch {
		case len(dats) > 0 && s.Base < dats[0]:
			same = false // deleted from the front
		case !ok:
			return damaged(filepath.Join(pl.dir, strconv.FormatInt(s.Base, 10)+".dat"), "it is missing, and snapshot.json, written when the broker last stopped, lists it")
		case size < s.Size:
			return damaged(filepath.Join(pl.dir, strconv.FormatInt(s.Base, 10)+".dat"), "it is %d bytes long, and snapshot.json, written when the broker last stopped, says %d: it was cut short", size, s.Size)
		default:
			same = same && dats[i] == s.Base && size == s.Size
		}
	}
	if snap.HighWatermark > pl.end {
		return damaged(pl.dir, "its log ends at offset %d, and snapshot.json, written when the broker last stopped, says it ended at %d: the records after %d are gone", pl.end, snap.HighWatermark, pl.end)
	}
	if same && pl.end > pl.start {
		pl.start = min(max(pl.start, snap.LogStartOffset), pl.end)
	}
	return nil
}
