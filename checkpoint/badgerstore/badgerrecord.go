package badgerstore

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"

	badger "github.com/dgraph-io/badger/v4"
)

// On-disk layout. Every key lives in one Badger DB in the store's directory:
//
//	meta/<id, 20 digits>   the metadata of a completed checkpoint or savepoint:
//	                       recordMagic, CRC32C of the JSON, the JSON (metaRecord)
//	state/<Handle.Key>     a state blob, raw; its CRC32C is in the Handle
//	                       (Handle.Key is "chk-<id>/<operator>/<index>");
//	                       for a blob over pieceSize, with user meta
//	                       piecesMeta, its piece index instead (encodePieces)
//	state/<Handle.Key>#<n> piece n (4 digits, from 0) of a blob in pieces,
//	                       raw; the pieces one after another are the blob
//	sys/max-id             the highest id ever added: 8 bytes big endian + CRC32C
//	sys/newest             the newest id the store must still hold (Newest),
//	                       in the same format
//
// Beside Badger's own files the directory holds OWNER (JSON: pid and command
// line of the process that has the store open), removed by Close, and HELD
// (the ids of the metadata records the store holds and its highest id, see
// held).
const (
	metaPrefix  = "meta/"
	statePrefix = "state/"
	maxIDKey    = "sys/max-id"
	newestKey   = "sys/newest"
	flushKey    = "sys/flush" // written and dropped to flush the memtables (see flushDeletions)
	ownerFile   = "OWNER"
	recordMagic = "FLC1" // faultline checkpoint metadata, version 1
	piecesMagic = "FLP1" // faultline piece index, version 1
	piecesMeta  = 1      // Badger user meta of a piece index
)

// metaKey is the Badger key of the metadata of checkpoint id; fixed-width so
// that keys sort by id.
func metaKey(id int64) []byte { return fmt.Appendf(nil, "%s%020d", metaPrefix, id) }

// blobKey is the Badger key of the state blob named key.
func blobKey(key string) []byte { return []byte(statePrefix + key) }

// pieceKey is the Badger key of piece n of the state blob named key.
func pieceKey(key string, n int) []byte { return fmt.Appendf(nil, "%s%s#%04d", statePrefix, key, n) }

// pieceOf is the name of the blob whose piece is named name (a state key
// without statePrefix), or name itself when it names no piece. A blob's name
// ends in its subtask index, never in '#' and digits.
func pieceOf(name string) string {
	i := strings.LastIndexByte(name, '#')
	if i < 0 || len(name)-i != 5 {
		return name
	}
	for _, c := range name[i+1:] {
		if c < '0' || c > '9' {
			return name
		}
	}
	return name[:i]
}

// encodePieces is the piece index of a blob of size bytes in n pieces:
// piecesMagic, n (4 bytes), size (8 bytes), and their CRC32C (4 bytes), big
// endian.
func encodePieces(n int, size int64) []byte {
	b := append([]byte(piecesMagic), 0, 0, 0, 0)
	binary.BigEndian.PutUint32(b[len(piecesMagic):], uint32(n))
	b = binary.BigEndian.AppendUint64(b, uint64(size))
	return binary.BigEndian.AppendUint32(b, checkpoint.Checksum(b))
}

// decodePieces reads a piece index made by encodePieces. Every error wraps
// ErrChecksum.
func decodePieces(v []byte) (n int, size int64, err error) {
	head := len(piecesMagic)
	if len(v) != head+16 || string(v[:head]) != piecesMagic || binary.BigEndian.Uint32(v[head+12:]) != checkpoint.Checksum(v[:head+12]) {
		return 0, 0, fmt.Errorf("piece index of %d bytes is damaged: %w", len(v), checkpoint.ErrChecksum)
	}
	n = int(binary.BigEndian.Uint32(v[head:]))
	size = int64(binary.BigEndian.Uint64(v[head+4:]))
	if n < 1 || size < 1 || size > MaxStateSize || int64(n) > size {
		return 0, 0, fmt.Errorf("piece index says %d bytes in %d pieces: %w", size, n, checkpoint.ErrChecksum)
	}
	return n, size, nil
}

// blobCheckpointID is the checkpoint id in a state key made by stateKey.
func blobCheckpointID(key string) (int64, bool) {
	rest, ok := strings.CutPrefix(key, "chk-")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(num, 10, 64)
	return id, err == nil
}

// encodeID is the value of sys/max-id and sys/newest: id, 8 bytes big
// endian, and their CRC32C.
func encodeID(id int64) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(id))
	return binary.BigEndian.AppendUint32(b, checkpoint.Checksum(b))
}

// decodeID reads a value made by encodeID; ok is false when it is damaged.
func decodeID(v []byte) (id int64, ok bool) {
	if len(v) != 12 || binary.BigEndian.Uint32(v[8:]) != checkpoint.Checksum(v[:8]) {
		return 0, false
	}
	id = int64(binary.BigEndian.Uint64(v[:8]))
	return id, id >= 0
}

// metaRecord is the JSON of a completed checkpoint's metadata.
type metaRecord struct {
	ID             int64        `json:"id"`
	Kind           string       `json:"kind"`
	Job            string       `json:"job"`
	Mode           string       `json:"mode"`
	TriggerTime    time.Time    `json:"trigger_time"`
	CompletionTime time.Time    `json:"completion_time"`
	EndToEnd       int64        `json:"end_to_end_ns,omitempty"`
	Frozen         int64        `json:"frozen_ns,omitempty"`
	Tasks          []taskRecord `json:"tasks"`
}

// taskRecord is one entry of Completed.Tasks.
type taskRecord struct {
	Operator string                `json:"operator"`
	Index    int                   `json:"index"`
	Ack      checkpoint.SubtaskAck `json:"ack"`
}

func compareTasks(a, b checkpoint.TaskID) int {
	return cmp.Or(cmp.Compare(a.Operator, b.Operator), cmp.Compare(a.Index, b.Index))
}

// encodeCompleted makes the metadata record of c: recordMagic, the CRC32C of
// the JSON (4 bytes, big endian), the JSON.
func encodeCompleted(c *checkpoint.Completed) ([]byte, error) {
	r := metaRecord{
		ID:             c.ID,
		Kind:           c.Kind.String(),
		Job:            c.Job,
		Mode:           c.Mode,
		TriggerTime:    c.TriggerTime,
		CompletionTime: c.CompletionTime,
		EndToEnd:       int64(c.EndToEnd),
		Frozen:         int64(c.Frozen),
		Tasks:          make([]taskRecord, 0, len(c.Tasks)),
	}
	for task, ack := range c.Tasks {
		r.Tasks = append(r.Tasks, taskRecord{Operator: task.Operator, Index: task.Index, Ack: ack})
	}
	slices.SortFunc(r.Tasks, func(a, b taskRecord) int {
		return compareTasks(checkpoint.TaskID{Operator: a.Operator, Index: a.Index}, checkpoint.TaskID{Operator: b.Operator, Index: b.Index})
	})
	payload, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	out := make([]byte, 0, len(recordMagic)+4+len(payload))
	out = append(out, recordMagic...)
	out = binary.BigEndian.AppendUint32(out, checkpoint.Checksum(payload))
	return append(out, payload...), nil
}

// decodeCompleted reads the metadata record v stored under id. Every error
// wraps ErrChecksum.
func decodeCompleted(id int64, v []byte) (*checkpoint.Completed, error) {
	bad := func(format string, args ...any) (*checkpoint.Completed, error) {
		return nil, fmt.Errorf("metadata %s: %w", fmt.Sprintf(format, args...), checkpoint.ErrChecksum)
	}
	head := len(recordMagic) + 4
	if len(v) == 0 {
		return bad("record is empty: the value log entry that held it is gone (its file was cut short or lost)")
	}
	if len(v) < head || string(v[:len(recordMagic)]) != recordMagic {
		return bad("record of %d bytes does not start with %q", len(v), recordMagic)
	}
	payload := v[head:]
	if got, want := checkpoint.Checksum(payload), binary.BigEndian.Uint32(v[len(recordMagic):head]); got != want {
		return bad("has checksum %08x, want %08x", got, want)
	}
	var r metaRecord
	if err := json.Unmarshal(payload, &r); err != nil {
		return bad("does not decode: %v", err)
	}
	if r.ID != id {
		return bad("says checkpoint %d", r.ID)
	}
	c := &checkpoint.Completed{
		ID:             r.ID,
		Job:            r.Job,
		Mode:           r.Mode,
		TriggerTime:    r.TriggerTime,
		CompletionTime: r.CompletionTime,
		EndToEnd:       time.Duration(r.EndToEnd),
		Frozen:         time.Duration(r.Frozen),
		Tasks:          make(map[checkpoint.TaskID]checkpoint.SubtaskAck, len(r.Tasks)),
	}
	switch r.Kind {
	case checkpoint.KindCheckpoint.String():
		c.Kind = checkpoint.KindCheckpoint
	case checkpoint.KindSavepoint.String():
		c.Kind = checkpoint.KindSavepoint
	default:
		return bad("has unknown kind %q", r.Kind)
	}
	for _, t := range r.Tasks {
		c.Tasks[checkpoint.TaskID{Operator: t.Operator, Index: t.Index}] = t.Ack
	}
	return c, nil
}

// metaEntry is one metadata record: its id and either the checkpoint or why
// it is damaged.
type metaEntry struct {
	id  int64
	c   *checkpoint.Completed
	err error
}

// list reads every metadata record, ascending by id.
func (s *Store) list() ([]metaEntry, error) {
	var out []metaEntry
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = []byte(metaPrefix)
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			out = append(out, readMeta(it.Item()))
		}
		return nil
	})
	return out, err
}

// readMeta decodes the metadata record item; a record that cannot be read is
// returned with its error.
func readMeta(item *badger.Item) metaEntry {
	key := string(item.Key())
	id, err := strconv.ParseInt(strings.TrimPrefix(key, metaPrefix), 10, 64)
	if err != nil {
		return metaEntry{id: -1, err: fmt.Errorf("metadata key %q: %w", key, checkpoint.ErrChecksum)}
	}
	e := metaEntry{id: id}
	if err := item.Value(func(v []byte) error {
		e.c, e.err = decodeCompleted(id, v)
		return nil
	}); err != nil {
		e.err = fmt.Errorf("metadata unreadable (%v): %w", err, checkpoint.ErrChecksum)
	}
	return e
}
