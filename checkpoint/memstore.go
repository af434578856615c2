package checkpoint

import (
	"cmp"
	"context"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"sync"
)

// Castagnoli is the CRC32 polynomial state blobs are checksummed with.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC32 (Castagnoli) checksum recorded in a Handle.
func Checksum(data []byte) uint32 { return crc32.Checksum(data, Castagnoli) }

// MemoryStore is a Store kept in memory (Flink: a CompletedCheckpointStore
// such as StandaloneCompletedCheckpointStore, together with
// JobManagerCheckpointStorage). It keeps the newest retained checkpoints
// (Flink: state.checkpoints.num-retained) and every savepoint. It is safe for
// concurrent use.
type MemoryStore struct {
	retained int

	mu     sync.Mutex
	blobs  map[string]blob
	done   map[int64]*Completed
	maxID  int64
	nextGC int64 // blobs below this id that no checkpoint refers to are gone
}

// blob is a state blob: its parts one after another.
type blob struct {
	id    int64
	parts [][]byte
}

func (b blob) size() (n int64) {
	for _, p := range b.parts {
		n += int64(len(p))
	}
	return n
}

func (b blob) Checksum() uint32 {
	var c uint32
	for _, p := range b.parts {
		c = crc32.Update(c, Castagnoli, p)
	}
	return c
}

// bytes is a copy of the blob in one slice.
func (b blob) bytes() []byte { return slices.Concat(b.parts...) }

// NewMemoryStore returns an empty MemoryStore that keeps the newest retained
// checkpoints (at least 1) plus every savepoint.
func NewMemoryStore(retained int) *MemoryStore {
	return &MemoryStore{
		retained: max(retained, 1),
		blobs:    map[string]blob{},
		done:     map[int64]*Completed{},
	}
}

// StateKey names the blob of task for checkpoint id.
func StateKey(id int64, task TaskID) string {
	return fmt.Sprintf("chk-%d/%s/%d", id, task.Operator, task.Index)
}

// PutState keeps data (not a copy: the caller does not change it) as the
// state of task for checkpoint id and returns its handle with a CRC32
// (Castagnoli) checksum.
func (s *MemoryStore) PutState(ctx context.Context, id int64, task TaskID, data []byte) (Handle, error) {
	return s.PutStateParts(ctx, id, task, [][]byte{data})
}

// PutStateParts implements PartsStorage: it keeps the parts themselves.
func (s *MemoryStore) PutStateParts(ctx context.Context, id int64, task TaskID, parts [][]byte) (Handle, error) {
	if err := ctx.Err(); err != nil {
		return Handle{}, fmt.Errorf("put state of %s for checkpoint %d: %w", task, id, err)
	}
	b := blob{id: id, parts: parts}
	h := Handle{Key: StateKey(id, task), Size: b.size(), Checksum: b.Checksum()}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blobs[h.Key] = b
	return h, nil
}

// GetState returns a copy of the blob h points at. It returns an error
// wrapping ErrNotFound for an unknown key and ErrChecksum when the blob does
// not match h.
func (s *MemoryStore) GetState(ctx context.Context, h Handle) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get state %s: %w", h.Key, err)
	}
	s.mu.Lock()
	b, ok := s.blobs[h.Key]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("get state %s: %w", h.Key, ErrNotFound)
	}
	if got := b.Checksum(); got != h.Checksum || b.size() != h.Size {
		return nil, fmt.Errorf("get state %s: %d bytes with checksum %08x, want %d bytes with checksum %08x: %w",
			h.Key, b.size(), got, h.Size, h.Checksum, ErrChecksum)
	}
	return b.bytes(), nil
}

// Corrupt flips a bit of the stored blob key, so that tests can see
// ErrChecksum. It returns an error wrapping ErrNotFound for an unknown key.
func (s *MemoryStore) Corrupt(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.blobs[key]
	if !ok {
		return fmt.Errorf("corrupt state %s: %w", key, ErrNotFound)
	}
	data := b.bytes()
	if len(data) == 0 {
		data = []byte{0}
	} else {
		data[0] ^= 0x01
	}
	b.parts = [][]byte{data}
	s.blobs[key] = b
	return nil
}

// Add records c and applies retention: only the newest retained checkpoints
// and every savepoint stay listed, and state blobs no listed checkpoint refers
// to are deleted, both those of dropped checkpoints and those left behind by
// checkpoints older than c that never completed.
func (s *MemoryStore) Add(ctx context.Context, c *Completed) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("add checkpoint %d: %w", c.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.done[c.ID]; ok {
		return fmt.Errorf("add checkpoint %d: already in the store", c.ID)
	}
	s.done[c.ID] = copyCompleted(c)
	s.maxID = max(s.maxID, c.ID)

	var checkpoints []int64
	for id, d := range s.done {
		if d.Kind == KindCheckpoint {
			checkpoints = append(checkpoints, id)
		}
	}
	slices.Sort(checkpoints)
	if n := len(checkpoints) - s.retained; n > 0 {
		for _, id := range checkpoints[:n] {
			delete(s.done, id)
		}
	}

	referenced := map[string]bool{}
	for _, d := range s.done {
		for _, a := range d.Tasks {
			for _, h := range a.Blobs() {
				referenced[h.Key] = true
			}
		}
	}
	s.nextGC = max(s.nextGC, c.ID)
	for key, b := range s.blobs {
		if b.id < s.nextGC && !referenced[key] {
			delete(s.blobs, key)
		}
	}
	return nil
}

// Latest returns the retained checkpoint or savepoint with the highest id, or
// nil when there is none.
func (s *MemoryStore) Latest(ctx context.Context) (*Completed, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("latest checkpoint: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var latest *Completed
	for _, d := range s.done {
		if latest == nil || d.ID > latest.ID {
			latest = d
		}
	}
	if latest == nil {
		return nil, nil
	}
	return copyCompleted(latest), nil
}

// All returns every retained checkpoint and savepoint, oldest first.
func (s *MemoryStore) All(ctx context.Context) ([]*Completed, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Completed, 0, len(s.done))
	for _, d := range s.done {
		out = append(out, copyCompleted(d))
	}
	slices.SortFunc(out, func(a, b *Completed) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// MaxID is the highest checkpoint id ever added, 0 when none.
func (s *MemoryStore) MaxID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxID
}

// copyCompleted copies c and its Tasks map, so that callers adding or
// removing subtasks do not change what the store holds.
func copyCompleted(c *Completed) *Completed {
	d := *c
	d.Tasks = maps.Clone(c.Tasks)
	return &d
}
