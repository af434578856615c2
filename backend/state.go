package backend

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// KeyedBackend keeps the keyed state of one subtask: values scoped to the
// key of the record being processed (Flink: KeyedStateBackend). The typed
// states (Value, List, Map) sit on top of it. It is owned by the subtask's
// goroutine and not safe for concurrent use, except that a Snapshot, once
// taken, may be written out by another goroutine.
type KeyedBackend interface {
	// SetCurrentKey scopes every state access that follows to key.
	SetCurrentKey(key string)
	// CurrentKey is the key set last.
	CurrentKey() string
	// Get, Put and Delete address entry (state, current key, sub); sub is
	// empty for value and list state and the map key for map state.
	// The slice Get returns must not be changed and holds only until the
	// next Put, Delete or Restore; Put stores a copy of value.
	Get(state, sub string) ([]byte, bool)
	Put(state, sub string, value []byte)
	Delete(state, sub string)
	// Scan calls f for every sub key of state under the current key until f
	// returns false.
	Scan(state string, f func(sub string, value []byte) bool)
	// Len is the number of entries held.
	Len() int
	// Snapshot takes the synchronous part of a snapshot: a frozen view that
	// later writes do not change.
	Snapshot() Snapshot
	// Restore loads entries from earlier snapshots, keeping those whose key
	// group this subtask owns (so state can move to another parallelism).
	Restore(keyed [][]byte) error
	// KeyGroups is the range this subtask owns.
	KeyGroups() KeyGroupRange
}

// KeyScanner is a KeyedBackend that can visit a state's entries under every
// key it holds (Flink: KeyedStateBackend.getKeys), as the cleanup of state
// TTL does. f gets copies and may change the state through the backend (set
// another current key, delete); the current key is the one before ScanKeys
// again when it returns. Entries f creates are not visited.
type KeyScanner interface {
	ScanKeys(state string, f func(key, sub string, value []byte) bool)
}

// keyedEntry is an entry ScanKeys collected before calling back.
type keyedEntry struct {
	key, sub string
	value    []byte
}

// statePrefix is the start of the composite key of every entry of state.
func statePrefix(state string) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(state))), state...)
}

// Prefetcher is a KeyedBackend that can start loading a key's state before
// the key is set: the task calls Prefetch for the record a few places
// ahead of the one it processes, so that lookups of keys spread over more
// memory than the caches hold overlap instead of waiting one by one.
type Prefetcher interface {
	// Prefetch takes key's key group when the caller knows it (a hash
	// edge computed it to route the record), or a negative one.
	Prefetch(key string, keyGroup int)
}

// GroupedKeys is a KeyedBackend that takes the current key's key group
// from a caller that already computed it (KeyGroupFor at the backend's
// maximum parallelism), instead of hashing the key again.
type GroupedKeys interface {
	SetCurrentKeyInGroup(key string, keyGroup int)
}

// Snapshot is a frozen view of keyed state; Encode is the asynchronous part
// of a checkpoint and may run on another goroutine.
type Snapshot interface {
	Encode() ([]byte, error)
}

// DeltaSnapshot is a Snapshot that says whether it holds only the changes
// since the previous one (an incremental snapshot) or the whole state.
type DeltaSnapshot interface {
	Snapshot
	Incremental() bool
}

// Abandoner is a keyed backend whose snapshots being encoded can be told
// to stop early: the subtask is being torn down.
type Abandoner interface {
	Abandon()
}

// Codec turns a state value into bytes and back.
type Codec[T any] interface {
	Append(dst []byte, v T) []byte
	Decode(b []byte) (T, error)
}

// Value is a single value per key (Flink: ValueState).
type Value[T any] struct {
	kb    KeyedBackend
	name  string
	codec Codec[T]
	buf   *[]byte // values are encoded here, then copied by the backend
}

// NewValue declares value state name on kb.
func NewValue[T any](kb KeyedBackend, name string, c Codec[T]) Value[T] {
	return Value[T]{kb: kb, name: name, codec: c, buf: new([]byte)}
}

// Get returns the current key's value and whether there is one.
func (s Value[T]) Get() (T, bool, error) {
	var zero T
	b, ok := s.kb.Get(s.name, "")
	if !ok {
		return zero, false, nil
	}
	v, err := s.codec.Decode(b)
	if err != nil {
		return zero, false, fmt.Errorf("state %q of key %q: %w", s.name, s.kb.CurrentKey(), err)
	}
	return v, true, nil
}

// Update sets the current key's value.
func (s Value[T]) Update(v T) {
	*s.buf = s.codec.Append((*s.buf)[:0], v)
	s.kb.Put(s.name, "", *s.buf)
}

// Clear removes the current key's value.
func (s Value[T]) Clear() { s.kb.Delete(s.name, "") }

// List is a list of values per key (Flink: ListState).
type List[T any] struct {
	kb    KeyedBackend
	name  string
	codec Codec[T]
}

// NewList declares list state name on kb.
func NewList[T any](kb KeyedBackend, name string, c Codec[T]) List[T] {
	return List[T]{kb: kb, name: name, codec: c}
}

// Get returns the current key's list.
func (s List[T]) Get() ([]T, error) {
	b, ok := s.kb.Get(s.name, "")
	if !ok {
		return nil, nil
	}
	var out []T
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return nil, fmt.Errorf("state %q of key %q: %w", s.name, s.kb.CurrentKey(), ErrCorrupt)
		}
		v, err := s.codec.Decode(b[k : k+int(n)])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		b = b[k+int(n):]
	}
	return out, nil
}

// Add appends v to the current key's list.
func (s List[T]) Add(v T) {
	old, _ := s.kb.Get(s.name, "")
	enc := s.codec.Append(nil, v)
	b := make([]byte, 0, len(old)+len(enc)+binary.MaxVarintLen32)
	b = append(b, old...)
	b = binary.AppendUvarint(b, uint64(len(enc)))
	b = append(b, enc...)
	s.kb.Put(s.name, "", b)
}

// Clear empties the current key's list.
func (s List[T]) Clear() { s.kb.Delete(s.name, "") }

// Map is a map of values per key (Flink: MapState).
type Map[V any] struct {
	kb    KeyedBackend
	name  string
	codec Codec[V]
}

// NewMap declares map state name on kb.
func NewMap[V any](kb KeyedBackend, name string, c Codec[V]) Map[V] {
	return Map[V]{kb: kb, name: name, codec: c}
}

// Get returns the value at k under the current key.
func (s Map[V]) Get(k string) (V, bool, error) {
	var zero V
	b, ok := s.kb.Get(s.name, k)
	if !ok {
		return zero, false, nil
	}
	v, err := s.codec.Decode(b)
	return v, err == nil, err
}

// Put sets k to v under the current key.
func (s Map[V]) Put(k string, v V) { s.kb.Put(s.name, k, s.codec.Append(nil, v)) }

// Remove deletes k under the current key.
func (s Map[V]) Remove(k string) { s.kb.Delete(s.name, k) }

// Range calls f for each entry under the current key until f returns false.
func (s Map[V]) Range(f func(k string, v V) bool) error {
	var err error
	s.kb.Scan(s.name, func(sub string, b []byte) bool {
		v, derr := s.codec.Decode(b)
		if derr != nil {
			err = derr
			return false
		}
		return f(sub, v)
	})
	return err
}

// ErrCorrupt means encoded state could not be decoded.
var ErrCorrupt = errors.New("corrupt state encoding")

// AppendString appends s with its length before it (a uvarint), as codecs
// of values with strings keep them; ReadBytes reads it back.
func AppendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// ReadBytes reads what AppendString wrote off the front of b: the bytes
// (pointing into b) and the rest; ok is false when b is short of them.
func ReadBytes(b []byte) (v, rest []byte, ok bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) < l {
		return nil, b, false
	}
	end := n + int(l)
	return b[n:end:end], b[end:], true
}

// Int64Codec encodes int64 values as varints.
type Int64Codec struct{}

// Append implements Codec.
func (Int64Codec) Append(dst []byte, v int64) []byte { return binary.AppendVarint(dst, v) }

// Decode implements Codec.
func (Int64Codec) Decode(b []byte) (int64, error) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, ErrCorrupt
	}
	return v, nil
}

// BytesCodec stores byte slices as they are. The slice Decode returns is
// the backend's (see KeyedBackend.Get): copy it to keep it past a write.
type BytesCodec struct{}

// Append implements Codec.
func (BytesCodec) Append(dst []byte, v []byte) []byte { return append(dst, v...) }

// Decode implements Codec.
func (BytesCodec) Decode(b []byte) ([]byte, error) { return b, nil }
