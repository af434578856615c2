package badgerstore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
)

// fuzzCheckpoint is a checkpoint like the default job's: sources with
// offsets, a sink with output offsets, an incremental chain and a finished
// subtask.
func fuzzCheckpoint(id int64) *checkpoint.Completed {
	c := &checkpoint.Completed{ID: id, Kind: checkpoint.KindCheckpoint, Job: "orders", Mode: "exactly-once",
		TriggerTime: t0, CompletionTime: t0.Add(40 * time.Millisecond), Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{}}
	for i := range 2 {
		c.Tasks[checkpoint.TaskID{Operator: "orders-source", Index: i}] = checkpoint.SubtaskAck{Handle: checkpoint.Handle{Key: checkpoint.StateKey(id, checkpoint.TaskID{Operator: "orders-source", Index: i}), Size: 30, Checksum: 7},
			Offsets: checkpoint.Offsets{"orders": {int32(2 * i): 12368, int32(2*i + 1): 12456}}, AckTime: t0}
	}
	c.Tasks[checkpoint.TaskID{Operator: "join", Index: 1}] = checkpoint.SubtaskAck{Handle: checkpoint.Handle{Key: checkpoint.StateKey(id, checkpoint.TaskID{Operator: "join", Index: 1}), Size: 100_000, Checksum: 9},
		Chain: []checkpoint.Handle{{Key: checkpoint.StateKey(id-1, checkpoint.TaskID{Operator: "join", Index: 1}), Size: 400_000, Checksum: 3}}, Bytes: 500_000, IncrementalBytes: 100_000}
	c.Tasks[checkpoint.TaskID{Operator: "parse-orders", Index: 0}] = checkpoint.SubtaskAck{Finished: true}
	c.Tasks[sink] = checkpoint.SubtaskAck{OutputFrom: checkpoint.Offsets{"revenue": {0: 4711}}, SyncDuration: time.Millisecond}
	return c
}

// withHeader puts payload behind a valid record header: recordMagic and its
// CRC32C.
func withHeader(payload []byte) []byte {
	b := binary.BigEndian.AppendUint32([]byte(recordMagic), checkpoint.Checksum(payload))
	return append(b, payload...)
}

// FuzzDecodeCheckpoint feeds what the store reads back from disk to its
// decoders: metadata records as raw bytes and behind a valid header (so that
// the JSON inside is reached), the max id and newest, piece indexes, piece
// key names, and the DISCARD and value log files it checks before Badger
// opens them. None may panic; a record that decodes must be usable.
func FuzzDecodeCheckpoint(f *testing.F) {
	for _, id := range []int64{1, 7, 1 << 40} {
		rec, err := encodeCompleted(fuzzCheckpoint(id))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(id, rec)
		f.Add(id, rec[len(recordMagic)+4:]) // the JSON alone
	}
	f.Add(int64(3), encodeID(3))
	f.Add(int64(0), encodePieces(6, 40<<20+12345))
	f.Add(int64(0), []byte("chk-3/sink/0#0005"))
	discard := make([]byte, 64)
	binary.BigEndian.PutUint64(discard, 1)
	binary.BigEndian.PutUint64(discard[8:], 4096)
	f.Add(int64(0), discard)
	f.Add(int64(0), fuzzValueLog())
	f.Fuzz(func(t *testing.T, id int64, data []byte) {
		for _, v := range [][]byte{data, withHeader(data)} {
			c, err := decodeCompleted(id, v)
			if err != nil {
				if c != nil || !errors.Is(err, checkpoint.ErrChecksum) {
					t.Fatalf("decodeCompleted = %v, %v; want nil and ErrChecksum", c, err)
				}
				continue
			}
			if c.ID != id {
				t.Fatalf("decoded checkpoint %d under id %d", c.ID, id)
			}
			// What the commands and a restore do with a record.
			_ = c.SourceOffsets()
			_ = c.OutputFloor()
			_, _ = c.Size()
			for _, task := range c.SortedTasks() {
				_ = c.Tasks[task].Blobs()
			}
			if _, err := encodeCompleted(c); err != nil {
				t.Fatalf("a decoded record does not encode: %v", err)
			}
		}
		if got, ok := decodeID(data); ok && !bytes.Equal(encodeID(got), data) {
			t.Fatalf("decodeID(%x) = %d, which encodes otherwise", data, got)
		}
		if n, size, err := decodePieces(data); err == nil {
			if n < 1 || size < int64(n) || size > MaxStateSize {
				t.Fatalf("decodePieces = %d pieces of %d bytes", n, size)
			}
		} else if !errors.Is(err, checkpoint.ErrChecksum) {
			t.Fatalf("decodePieces: %v, want ErrChecksum", err)
		}
		if base := pieceOf(string(data)); len(base) > len(data) {
			t.Fatalf("pieceOf(%q) = %q", data, base)
		}
		_, _ = blobCheckpointID(string(data))
		_ = checkDiscardData(data)
		_ = checkValueLogData(bufio.NewReader(bytes.NewReader(data)), int64(len(data)))
	})
}

// fuzzValueLog is a value log file of two entries, as Badger writes them.
func fuzzValueLog() []byte {
	b := make([]byte, 20)
	for _, kv := range [][2]string{{"meta/1", "value"}, {"state/chk-1/sink/0", "blob"}} {
		start := len(b)
		b = append(b, 0x40, 0)
		b = binary.AppendUvarint(b, uint64(len(kv[0])))
		b = binary.AppendUvarint(b, uint64(len(kv[1])))
		b = binary.AppendUvarint(b, 0)
		b = append(append(b, kv[0]...), kv[1]...)
		b = binary.BigEndian.AppendUint32(b, checkpoint.Checksum(b[start:]))
	}
	return b
}

// The value log seed is one checkValueLogData accepts, so that the fuzzer
// starts from a valid file.
func TestFuzzValueLogSeedIsValid(t *testing.T) {
	b := fuzzValueLog()
	if err := checkValueLogData(bufio.NewReader(bytes.NewReader(b)), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	if err := checkValueLogData(bufio.NewReader(bytes.NewReader(b[:len(b)-1])), int64(len(b)-1)); err == nil {
		t.Fatal("a value log cut short passed")
	}
}
