package backend

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
)

// SubtaskState is everything one subtask contributes to a checkpoint (Flink:
// OperatorSubtaskState): its keyed state in the canonical key-group format,
// and its operator state, named byte strings that on restore are handed to
// every new subtask of the operator (Flink: union list state), which picks
// what it owns, e.g. the source partitions assigned to it.
type SubtaskState struct {
	Keyed    []byte
	Operator map[string][]byte
}

const subtaskMagic = "FLS1"

// Encode serialises the state.
func (s *SubtaskState) Encode() []byte {
	// One allocation of the right size: states are tens of megabytes, and
	// growing the buffer would copy them several times.
	return bytes.Join(s.Parts(), nil)
}

// sharedPart is the size from which Parts shares a value instead of
// copying it.
const sharedPart = 4 << 10

// Parts is what Encode writes, in pieces: headers and small values copied
// together, the keyed snapshot and every large operator entry shared as
// they are (they are tens of megabytes, and a store that keeps pieces need
// not copy them). Nothing may change the state's values afterwards.
func (s *SubtaskState) Parts() [][]byte {
	var parts [][]byte
	small := []byte(subtaskMagic)
	put := func(v []byte) {
		if len(v) < sharedPart {
			small = append(small, v...)
			return
		}
		parts = append(parts, small, v)
		small = nil // parts holds the old one; the next appends start another
	}
	small = binary.AppendUvarint(small, uint64(len(s.Keyed)))
	put(s.Keyed)
	names := make([]string, 0, len(s.Operator))
	for n := range s.Operator {
		names = append(names, n)
	}
	sort.Strings(names)
	small = binary.AppendUvarint(small, uint64(len(names)))
	for _, n := range names {
		small = binary.AppendUvarint(small, uint64(len(n)))
		small = append(small, n...)
		small = binary.AppendUvarint(small, uint64(len(s.Operator[n])))
		put(s.Operator[n])
	}
	if len(small) > 0 {
		parts = append(parts, small)
	}
	return parts
}

// DecodeSubtaskState reads what Encode wrote.
func DecodeSubtaskState(b []byte) (*SubtaskState, error) {
	if len(b) < len(subtaskMagic) || string(b[:len(subtaskMagic)]) != subtaskMagic {
		return nil, fmt.Errorf("subtask state: %w (bad header)", ErrCorrupt)
	}
	b = b[len(subtaskMagic):]
	read := func() ([]byte, error) {
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return nil, fmt.Errorf("subtask state: %w (truncated)", ErrCorrupt)
		}
		out := b[n : n+int(l) : n+int(l)]
		b = b[n+int(l):]
		return out, nil
	}
	s := &SubtaskState{Operator: map[string][]byte{}}
	var err error
	if s.Keyed, err = read(); err != nil {
		return nil, err
	}
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, fmt.Errorf("subtask state: %w (truncated)", ErrCorrupt)
	}
	b = b[n:]
	for i := uint64(0); i < count; i++ {
		name, err := read()
		if err != nil {
			return nil, err
		}
		v, err := read()
		if err != nil {
			return nil, err
		}
		s.Operator[string(name)] = v
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("subtask state: %w (%d trailing bytes)", ErrCorrupt, len(b))
	}
	return s, nil
}
