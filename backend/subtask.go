package backend

import (
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
	size := len(subtaskMagic) + 2*binary.MaxVarintLen64 + len(s.Keyed)
	names := make([]string, 0, len(s.Operator))
	for n, v := range s.Operator {
		names = append(names, n)
		size += 2*binary.MaxVarintLen64 + len(n) + len(v)
	}
	b := append(make([]byte, 0, size), subtaskMagic...)
	b = binary.AppendUvarint(b, uint64(len(s.Keyed)))
	b = append(b, s.Keyed...)
	sort.Strings(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, n := range names {
		b = binary.AppendUvarint(b, uint64(len(n)))
		b = append(b, n...)
		b = binary.AppendUvarint(b, uint64(len(s.Operator[n])))
		b = append(b, s.Operator[n]...)
	}
	return b
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
