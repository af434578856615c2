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
//
// Channels is the channel state of an unaligned checkpoint (Flink:
// InputChannelStateHandle): per input channel of the subtask, named by the
// runtime, the records that were in flight in it when the subtask took the
// snapshot, in the runtime's own format; they are replayed into the channel
// on recovery. It is nil when the snapshot holds none.
type SubtaskState struct {
	Keyed    []byte
	Operator map[string][]byte
	Channels map[string][]byte
}

// The encoding: subtaskMagic, the keyed state, the operator entries, and,
// when there is channel state, channelSection and the channels. Without
// channel state it is what it was before channel state was added, and a
// blob written then decodes with Channels nil.
const (
	subtaskMagic   = "FLS1"
	channelSection = 'C'
)

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
// together, the keyed snapshot and every large operator entry or channel
// shared as they are (they are tens of megabytes, and a store that keeps pieces need
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
	entries := func(m map[string][]byte) {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		small = binary.AppendUvarint(small, uint64(len(names)))
		for _, n := range names {
			small = binary.AppendUvarint(small, uint64(len(n)))
			small = append(small, n...)
			small = binary.AppendUvarint(small, uint64(len(m[n])))
			put(m[n])
		}
	}
	small = binary.AppendUvarint(small, uint64(len(s.Keyed)))
	put(s.Keyed)
	entries(s.Operator)
	if len(s.Channels) > 0 {
		small = append(small, channelSection)
		entries(s.Channels)
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
	// entries reads the entries of a section into m; strict says they
	// must be named in ascending order, as Parts writes them, each once.
	entries := func(m map[string][]byte, strict bool) error {
		count, n := binary.Uvarint(b)
		if n <= 0 {
			return fmt.Errorf("subtask state: %w (truncated)", ErrCorrupt)
		}
		b = b[n:]
		prev := ""
		for i := uint64(0); i < count; i++ {
			name, err := read()
			if err != nil {
				return err
			}
			v, err := read()
			if err != nil {
				return err
			}
			if strict && i > 0 && string(name) <= prev {
				return fmt.Errorf("subtask state: %w (channel %q out of order)", ErrCorrupt, name)
			}
			prev = string(name)
			m[prev] = v
		}
		return nil
	}
	s := &SubtaskState{Operator: map[string][]byte{}}
	var err error
	if s.Keyed, err = read(); err != nil {
		return nil, err
	}
	if err := entries(s.Operator, false); err != nil {
		return nil, err
	}
	if len(b) > 0 && b[0] == channelSection {
		b = b[1:]
		s.Channels = map[string][]byte{}
		if err := entries(s.Channels, true); err != nil {
			return nil, err
		}
		if len(s.Channels) == 0 {
			return nil, fmt.Errorf("subtask state: %w (empty channel state section)", ErrCorrupt)
		}
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("subtask state: %w (%d trailing bytes)", ErrCorrupt, len(b))
	}
	return s, nil
}
