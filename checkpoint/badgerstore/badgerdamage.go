package badgerstore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/smallfile"
)

// ErrDamaged means files of the checkpoint store are damaged so that it
// cannot be opened without losing checkpoints or crashing: a table (.sst)
// fails its checksums, the MANIFEST that lists the tables is unreadable or
// cut short, a table it lists is missing, or a folder (anything but a
// regular file) stands where one of these belongs. The error names the
// file. The
// store cannot be repaired: `faultline run --fresh` starts the job again from
// nothing (and deletes the store).
var ErrDamaged = errors.New("checkpoint store damaged")

// Badger's file names in a store directory.
const (
	manifestFile    = "MANIFEST"
	keyRegistryFile = "KEYREGISTRY"
	discardFile     = "DISCARD"
	lockFile        = "LOCK"
	tableExt        = ".sst"
	valueLogExt     = ".vlog"
	memLogExt       = ".mem"
)

// keyRegistrySize is the size of the KEYREGISTRY of an unencrypted store:
// an IV of 16 bytes and Badger's sanity text, unencrypted.
const keyRegistrySize = 16 + len(keyRegistrySanity)

// keyRegistrySanity is the text Badger writes into KEYREGISTRY to check the
// encryption key with (none here).
const keyRegistrySanity = "Hello Badger"

// inspection is what inspect found in a store directory that a read-only open
// cannot get past but a read-write open can.
type inspection struct {
	// empty is set when the directory holds no Badger file at all.
	empty bool
	// recover lists why Badger must recover the store, which only a
	// read-write open does: memtable logs left by a killed process (Badger
	// replays and truncates them), tables the MANIFEST does not list (it
	// deletes them), empty value log files (see removeEmptyValueLogs).
	recover []string
	// replace lists the files that hold only statistics or nothing and are
	// damaged, which a read-write open deletes for Badger to write anew:
	// DISCARD (value log GC statistics; damaged, it makes GC loop for ever)
	// and KEYREGISTRY (the store is not encrypted: it holds no key).
	replace []string
}

// damaged is an error wrapping ErrDamaged about file in dir.
func damaged(dir, file, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s; the store cannot be repaired",
		ErrDamaged, filepath.Join(dir, file), fmt.Sprintf(format, args...))
}

// dataFile names the kind of the store's file called name that holds
// checkpoints, or is "" for any other name.
func dataFile(name string) string {
	switch {
	case name == manifestFile:
		return "the MANIFEST (the list of its tables)"
	case strings.HasSuffix(name, tableExt):
		return "a table file"
	case strings.HasSuffix(name, valueLogExt):
		return "a value log file"
	case strings.HasSuffix(name, memLogExt):
		return "a memtable log file"
	}
	return ""
}

// inspect checks the Badger files in dir before Badger opens them, because
// Badger panics on a damaged table in goroutines of its own, where nothing
// can recover, and silently drops tables that fail their checksum or that a
// damaged MANIFEST no longer lists. The caller holds dir's lock. It returns
// an error wrapping ErrDamaged for damage that would lose checkpoints.
func inspect(dir string) (inspection, error) {
	var in inspection
	files, err := listStoreFiles(dir)
	if err != nil {
		return in, err
	}
	if !files.manifest {
		if len(files.tables)+len(files.vlogs)+len(files.mems) > 0 {
			return in, damaged(dir, manifestFile, "missing, though the store has data files")
		}
		in.empty = true
		return in, nil
	}
	if err := in.checkTables(dir, files.tables); err != nil {
		return in, err
	}
	for _, name := range files.vlogs {
		head, size, err := readHead(filepath.Join(dir, name), 8)
		switch {
		case err != nil:
			return in, err
		case size == 0:
			in.recover = append(in.recover, "empty value log "+name+" deleted")
		case len(head) == 8 && binary.BigEndian.Uint64(head) != 0:
			// Badger refuses to open the store, with an error that names
			// an encryption key.
			return in, damaged(dir, name, "its header is damaged")
		}
	}
	for _, name := range files.mems {
		in.recover = append(in.recover, "memtable log "+name+" replayed (the process that wrote it did not close the store)")
	}
	if err := checkKeyRegistry(filepath.Join(dir, keyRegistryFile)); err != nil {
		in.replace = append(in.replace, keyRegistryFile)
	}
	if err := checkDiscard(filepath.Join(dir, discardFile)); err != nil {
		in.replace = append(in.replace, discardFile)
	}
	return in, nil
}

// storeFiles are the Badger files of a store directory, by kind.
type storeFiles struct {
	manifest            bool
	tables, vlogs, mems []string
}

// listStoreFiles sorts the files of dir by kind; a data file's name on
// something that is not a regular file is damage.
func listStoreFiles(dir string) (storeFiles, error) {
	var f storeFiles
	entries, err := os.ReadDir(dir)
	if err != nil {
		return f, err
	}
	for _, e := range entries {
		name := e.Name()
		if what := dataFile(name); what != "" && !e.Type().IsRegular() {
			// Opening it would wait (a named pipe) or fail in two lines
			// of Badger's (a folder is no file to map).
			return f, damaged(dir, name, "%s where %s belongs", smallfile.Kind(e.Type()), what)
		}
		switch {
		case name == manifestFile:
			f.manifest = true
		case strings.HasSuffix(name, tableExt):
			f.tables = append(f.tables, name)
		case strings.HasSuffix(name, valueLogExt):
			f.vlogs = append(f.vlogs, name)
		case strings.HasSuffix(name, memLogExt):
			f.mems = append(f.mems, name)
		}
	}
	return f, nil
}

// checkTables holds the tables in dir to what the MANIFEST lists: a table
// it does not list is recovered (Badger deletes it) unless the MANIFEST
// was cut short; a listed one must be there, unencrypted and readable.
func (in *inspection) checkTables(dir string, tables []string) error {
	listed, torn, err := readManifest(dir)
	if err != nil {
		return err
	}
	for _, name := range tables {
		id, ok := table.ParseFileID(name)
		if _, listedHere := listed[id]; ok && listedHere {
			continue
		}
		if torn {
			return damaged(dir, manifestFile, "cut short: it no longer lists %s, which opening would delete", name)
		}
		// A table written just before its process died, which Badger
		// deletes: its data is still in the memtable log.
		in.recover = append(in.recover, "table "+name+", which the MANIFEST does not list, deleted")
	}
	for _, id := range slices.Sorted(mapKeys(listed)) {
		name := table.IDToFilename(id)
		tm := listed[id]
		if !slices.Contains(tables, name) {
			return damaged(dir, name, "missing, though the MANIFEST lists it")
		}
		if tm.KeyID != 0 {
			return damaged(dir, manifestFile, "says %s is encrypted, which this store never is", name)
		}
		if err := checkTable(filepath.Join(dir, name), tm.Compression); err != nil {
			return damaged(dir, name, "%v", err)
		}
	}
	return nil
}

// readHead reads the first n bytes of the file at path (fewer when it is
// shorter) and its size.
func readHead(path string, n int) ([]byte, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	b := make([]byte, min(int64(n), fi.Size()))
	_, err = io.ReadFull(f, b)
	return b, fi.Size(), err
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// readManifest replays dir's MANIFEST as Badger does and returns the tables
// it lists, and whether it ends in a partial change (torn: Badger truncates
// it there, which a process killed while writing it leaves too).
func readManifest(dir string) (map[uint64]badger.TableManifest, bool, error) {
	f, err := os.Open(filepath.Join(dir, manifestFile))
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	var m badger.Manifest
	var end int64
	err = recoverPanic(func() (err error) {
		opts := badgerOptions(dir)
		m, end, err = badger.ReplayManifestFile(f, opts.ExternalMagicVersion, opts)
		return err
	})
	if err != nil {
		return nil, false, damaged(dir, manifestFile, "%v", err)
	}
	return m.Tables, end < fi.Size(), nil
}

// checkTable opens the table file path read-only as Badger does, with every
// block's checksum verified, and recovers from the panics Badger's table
// code raises on damaged bytes.
func checkTable(path string, compression options.CompressionType) (err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Size() < 8 {
		return fmt.Errorf("%d bytes, too short for a table", fi.Size())
	}
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil && !errors.Is(err, z.NewFile) {
		return err
	}
	defer func() {
		// OpenTable closes the file itself when a checksum fails: close
		// it (unmap it) only when that has not happened.
		if _, serr := mf.Fd.Stat(); !errors.Is(serr, os.ErrClosed) {
			_ = mf.Close(-1)
		}
	}()
	opts := badgerOptions(filepath.Dir(path))
	err = recoverPanic(func() error {
		_, err := table.OpenTable(mf, table.Options{
			ReadOnly:           true,
			ChkMode:            options.OnTableAndBlockRead,
			BlockSize:          opts.BlockSize,
			BloomFalsePositive: opts.BloomFalsePositive,
			Compression:        compression,
		})
		return err
	})
	var p panicError
	switch {
	case errors.As(err, &p):
		return errors.New("its bytes do not read as a table")
	case err != nil && strings.Contains(err.Error(), "checksum mismatch"):
		return errors.New("it fails its checksums")
	}
	return err
}

// panicError is a panic recovered by recoverPanic.
type panicError struct{ msg string }

func (p panicError) Error() string { return "unreadable (Badger panicked: " + p.msg + ")" }

// recoverPanic runs f and turns a panic in it into a panicError.
func recoverPanic(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			msg := strings.TrimSpace(fmt.Sprint(r))
			if first, _, ok := strings.Cut(msg, "\n"); ok {
				msg = first
			}
			err = panicError{msg}
		}
	}()
	return f()
}

// checkKeyRegistry checks the KEYREGISTRY of an unencrypted store: an IV
// and the sanity text, and no data key. A missing one is fine: Badger writes
// it.
func checkKeyRegistry(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(b) != keyRegistrySize || string(b[16:]) != keyRegistrySanity {
		return fmt.Errorf("%d bytes, not an unencrypted key registry", len(b))
	}
	return nil
}

// maxDiscard bounds a believable discard statistic: a value log file is at
// most 4 GiB.
const maxDiscard = 1 << 32

// checkDiscard checks Badger's DISCARD file: slots of 16 bytes (value log
// file id, bytes of garbage in it, both big endian), in ascending file id
// order, up to the first slot with id 0. Badger trusts it: with ids out of
// order, repeated or above 32 bits its value log GC loops for ever, and a
// file shorter than one slot makes it panic. A missing one is fine.
func checkDiscard(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return checkDiscardData(b)
}

// checkDiscardData checks the content of a DISCARD file (see checkDiscard).
func checkDiscardData(b []byte) error {
	if len(b) < 32 || len(b)%16 != 0 {
		return fmt.Errorf("%d bytes, not slots of 16", len(b))
	}
	var last uint64
	for off := 0; off+16 <= len(b); off += 16 {
		fid, discard := binary.BigEndian.Uint64(b[off:]), binary.BigEndian.Uint64(b[off+8:])
		if fid == 0 {
			return nil // Badger reads no further
		}
		if fid <= last || fid > math.MaxUint32 || discard > maxDiscard {
			return fmt.Errorf("slot %d (file %d, %d bytes) out of order or out of range", off/16, fid, discard)
		}
		last = fid
	}
	return errors.New("no empty slot")
}

// checkValueLog reads the value log file at path, which Badger no longer
// writes to, entry by entry: the file header of an unencrypted log, then
// entries (meta and user meta bytes, key length, value length and expiry as
// uvarints, key, value, CRC32C of all of them) up to the exact end of the
// file. Value log GC rewrites a file by reading it the same way but stops at
// the first entry it cannot read and then deletes the whole file: on a
// damaged file, that would lose every value after the damage, which reads
// still find.
func checkValueLog(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return checkValueLogData(bufio.NewReaderSize(f, 1<<16), fi.Size())
}

// checkValueLogData checks the size bytes of a value log file that r reads
// (see checkValueLog).
func checkValueLogData(r *bufio.Reader, size int64) error {
	var head [20]byte // the key id (8 bytes, 0: unencrypted) and an IV
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return fmt.Errorf("%d bytes, too short for a value log", size)
	}
	if binary.BigEndian.Uint64(head[:8]) != 0 {
		return errors.New("its header says it is encrypted, which this store never is")
	}
	off := int64(len(head))
	for off < size {
		n, err := checkLogEntry(r, size-off)
		if err != nil {
			return fmt.Errorf("entry at offset %d: %w", off, err)
		}
		off += n
	}
	return nil
}

// checkLogEntry reads one value log entry of at most room bytes from r and
// checks its CRC; it returns its length.
func checkLogEntry(r *bufio.Reader, room int64) (int64, error) {
	crc := crc32.New(checkpoint.Castagnoli)
	hr := &hashingReader{r: r, h: crc}
	var meta [2]byte
	if _, err := io.ReadFull(hr, meta[:]); err != nil {
		return 0, err
	}
	klen, err := binary.ReadUvarint(hr)
	if err != nil {
		return 0, err
	}
	vlen, err := binary.ReadUvarint(hr)
	if err != nil {
		return 0, err
	}
	if _, err := binary.ReadUvarint(hr); err != nil { // expiry
		return 0, err
	}
	n := hr.n + int64(klen) + int64(vlen) + crc32.Size
	if klen > 1<<16 || vlen > uint64(room) || n > room {
		return 0, fmt.Errorf("says %d key and %d value bytes, past the end of the file", klen, vlen)
	}
	if _, err := io.CopyN(crc, r, int64(klen+vlen)); err != nil {
		return 0, err
	}
	var sum [crc32.Size]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil {
		return 0, err
	}
	if binary.BigEndian.Uint32(sum[:]) != crc.Sum32() {
		return 0, errors.New("fails its checksum")
	}
	return n, nil
}

// hashingReader reads from r, hashing what it read into h and counting it.
type hashingReader struct {
	r *bufio.Reader
	h hash.Hash32
	n int64
}

func (hr *hashingReader) Read(p []byte) (int, error) {
	n, err := hr.r.Read(p)
	hr.h.Write(p[:n])
	hr.n += int64(n)
	return n, err
}

func (hr *hashingReader) ReadByte() (byte, error) {
	b, err := hr.r.ReadByte()
	if err == nil {
		hr.h.Write([]byte{b})
		hr.n++
	}
	return b, err
}
