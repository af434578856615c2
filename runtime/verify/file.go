package verify

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/faultline-dev/faultline/internal/atomicfile"
	"github.com/faultline-dev/faultline/runtime/flatjson"
)

// ledgerMagic starts a saved ledger (faultline verification ledger,
// version 1).
const ledgerMagic = "FLV1"

// ErrCorrupt means a saved ledger does not read back: it is damaged.
var ErrCorrupt = errors.New("verification ledger damaged")

// header is the part of a saved ledger that is not the dense table.
type header struct {
	Kind      string                     `json:"kind"`
	TTLMs     int64                      `json:"ttl_ms"`
	ID        string                     `json:"id,omitempty"`
	Inputs    []string                   `json:"inputs,omitempty"`
	Joined    bool                       `json:"joined,omitempty"`
	Committed int                        `json:"committed"`
	BadInput  int                        `json:"bad_input"`
	BadOutput int                        `json:"bad_output"`
	Positions map[string]map[int32]int64 `json:"positions"`
	First     map[string]int64           `json:"first,omitempty"`
	Other     map[string]byte            `json:"other,omitempty"`
	Chunks    int                        `json:"chunks"`
}

// MarshalBinary encodes the ledger: magic, the header as JSON, the dense
// table compressed (a presence byte and the ids' bytes per chunk), and a
// CRC-32C of everything before it.
func (l *Ledger) MarshalBinary() ([]byte, error) {
	first := l.first
	if l.firstDense.Len() > 0 {
		first = maps.Clone(l.first)
		l.firstDense.Each(func(n uint32, t int64) { first[fmt.Sprintf("o-%06d", n)] = t })
	}
	h := header{Kind: l.kind, TTLMs: l.ttl, ID: l.id.Name(), Inputs: l.inputs, Joined: l.joined, Committed: l.committed, BadInput: l.badInput, BadOutput: l.badOutput,
		Positions: l.Positions, First: first, Other: l.other, Chunks: l.dense.Chunks()}
	hj, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString(ledgerMagic)
	buf.Write(binary.AppendUvarint(nil, uint64(len(hj))))
	buf.Write(hj)
	zw, err := flate.NewWriter(&buf, flate.BestSpeed)
	if err != nil {
		return nil, err
	}
	c := make([]byte, DenseChunk)
	for i := range l.dense.Chunks() {
		if !l.dense.Chunk(i, c) {
			zw.Write([]byte{0})
			continue
		}
		zw.Write([]byte{1})
		zw.Write(c)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint32(buf.Bytes(), crc32.Checksum(buf.Bytes(), crcTable)), nil
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// UnmarshalBinary decodes what MarshalBinary wrote; damage is ErrCorrupt.
func (l *Ledger) UnmarshalBinary(b []byte) error {
	if len(b) < len(ledgerMagic)+4 || string(b[:len(ledgerMagic)]) != ledgerMagic {
		return fmt.Errorf("%w: not a ledger", ErrCorrupt)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	rest := body[len(ledgerMagic):]
	n, k := binary.Uvarint(rest)
	if k <= 0 || uint64(len(rest)-k) < n {
		return fmt.Errorf("%w: header", ErrCorrupt)
	}
	var h header
	if err := json.Unmarshal(rest[k:k+int(n)], &h); err != nil {
		return fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	zr := flate.NewReader(bytes.NewReader(rest[k+int(n):]))
	defer zr.Close()
	var dense Dense[byte]
	for i := range h.Chunks {
		var present [1]byte
		if _, err := io.ReadFull(zr, present[:]); err != nil {
			return fmt.Errorf("%w: table: %v", ErrCorrupt, err)
		}
		if present[0] == 0 {
			continue
		}
		c := make([]byte, DenseChunk)
		if _, err := io.ReadFull(zr, c); err != nil {
			return fmt.Errorf("%w: table: %v", ErrCorrupt, err)
		}
		dense.SetChunk(i, c)
	}
	var id flatjson.Field
	if h.ID != "" {
		var err error
		if id, err = flatjson.NewField(h.ID); err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	*l = Ledger{kind: h.Kind, inputs: h.Inputs, joined: h.Joined, ttl: h.TTLMs, id: id, dense: dense, other: orEmpty(h.Other), first: map[string]int64{},
		committed: h.Committed, badInput: h.BadInput, badOutput: h.BadOutput,
		Positions: orEmpty(h.Positions)}
	for id, t := range h.First {
		if n, ok := DenseID([]byte(id)); ok {
			l.firstDense.Put(n, t)
		} else {
			l.first[id] = t
		}
	}
	return nil
}

// Adopt gives a ledger saved before ledgers named the field they count
// records by, and the input topics of their relation, those of e: such a
// ledger counted by the id and read the topics of the jobs of its day. A
// ledger that names them keeps its own.
func (l *Ledger) Adopt(e Expect) error {
	if len(l.inputs) == 0 && len(e.Inputs) > 0 {
		l.inputs, l.joined = slices.Clone(e.Inputs), e.Joined
	}
	if l.id.Name() != "" {
		return nil
	}
	f, err := flatjson.NewField(e.ID)
	if err != nil {
		return fmt.Errorf("verify by id: %w", err)
	}
	l.id = f
	return nil
}

func orEmpty[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

// Save writes the ledger to path, whole or not at all: a temporary file,
// synced, renamed over path, and the folder synced.
func (l *Ledger) Save(path string) error {
	b, err := l.MarshalBinary()
	if err != nil {
		return fmt.Errorf("save verification ledger: %w", err)
	}
	if err := atomicfile.Write(path, b); err != nil {
		return fmt.Errorf("save verification ledger %s: %w", path, err)
	}
	return nil
}

// Load reads a ledger saved at path. A missing file is an error wrapping
// os.ErrNotExist; a damaged one wraps ErrCorrupt.
func Load(path string) (*Ledger, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load verification ledger: %w", err)
	}
	l := &Ledger{}
	if err := l.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("load verification ledger %s: %w", path, err)
	}
	return l, nil
}
