// Package checkpoint holds the checkpoint coordinator (Flink:
// CheckpointCoordinator), pending and completed checkpoints, and the store
// that keeps completed checkpoints and their state (Flink:
// CompletedCheckpointStore + CheckpointStorage).
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// TaskID names one subtask: an operator and the index of its parallel
// instance. It prints as "operator/index", e.g. "join/1".
type TaskID struct {
	Operator string
	Index    int
}

func (t TaskID) String() string { return fmt.Sprintf("%s/%d", t.Operator, t.Index) }

// Kind tells a checkpoint from a savepoint.
type Kind int

const (
	// KindCheckpoint is a periodic or manually triggered checkpoint.
	KindCheckpoint Kind = iota
	// KindSavepoint is a user-triggered savepoint, never removed by retention.
	KindSavepoint
)

func (k Kind) String() string {
	if k == KindSavepoint {
		return "savepoint"
	}
	return "checkpoint"
}

// Handle points at the state blob one subtask wrote for one checkpoint
// (Flink: StreamStateHandle).
type Handle struct {
	Key      string `json:"key"`
	Size     int64  `json:"size"`
	Checksum uint32 `json:"checksum"`
}

// Offsets are source positions: topic → partition → next offset to read.
type Offsets map[string]map[int32]int64

// SubtaskAck is what one subtask reports when its part of a checkpoint is
// done (Flink: AcknowledgeCheckpoint + SubtaskStateStats).
type SubtaskAck struct {
	Handle Handle `json:"handle"`
	// Chain lists, oldest first, the earlier blobs an incremental snapshot
	// builds on (a full snapshot, then deltas); empty for a full snapshot.
	// The subtask's state is Chain followed by Handle.
	Chain []Handle `json:"chain,omitempty"`
	// Figures, as Flink's checkpoint monitoring shows them.
	SyncDuration  time.Duration `json:"sync_duration"`
	AsyncDuration time.Duration `json:"async_duration"`
	Alignment     time.Duration `json:"alignment"`
	StartDelay    time.Duration `json:"start_delay"`
	// Bytes is the full size of the subtask's state; IncrementalBytes what
	// this checkpoint wrote for it (equal to Bytes for a full snapshot).
	Bytes            int64 `json:"bytes"`
	IncrementalBytes int64 `json:"incremental_bytes"`
	// AfterBarrier counts, in an at-least-once checkpoint, the records the
	// subtask processed from channels that had delivered the checkpoint's
	// barrier while it waited for the others: they are in the snapshot's
	// state and are read again after a restore from it (the duplicates of
	// at-least-once).
	AfterBarrier int64 `json:"after_barrier,omitempty"`
	// Unaligned is set when the subtask took its snapshot of an unaligned
	// checkpoint (before every input channel delivered the barrier);
	// TimedOut when it switched an aligned checkpoint to unaligned because
	// its alignment outlived the aligned-checkpoint timeout.
	Unaligned bool `json:"unaligned,omitempty"`
	TimedOut  bool `json:"timed_out,omitempty"`
	// PersistedInFlight is the size of the in-flight records the subtask
	// stored as channel state with its snapshot (Flink: persisted in-flight
	// data), PersistedRecords their number; ProcessedInFlight the size of
	// the records it processed during the alignment, between the first
	// barrier and the last (Flink: processed in-flight data).
	PersistedInFlight int64 `json:"persisted_in_flight_bytes,omitempty"`
	PersistedRecords  int64 `json:"persisted_in_flight_records,omitempty"`
	ProcessedInFlight int64 `json:"processed_in_flight_bytes,omitempty"`
	// InFlightIDs are the order ids of those persisted records, each once:
	// what the checkpoint's committed output cannot hold yet, since they
	// are processed after a restore from it (the oracle's exception).
	InFlightIDs []string `json:"in_flight_ids,omitempty"`
	// Offsets are set by source subtasks.
	Offsets Offsets `json:"offsets,omitempty"`
	// OutputFrom is set by sink subtasks: per output topic and partition,
	// the lowest offset at which the transactions this checkpoint
	// pre-committed may have written. A recovery from the checkpoint may
	// read the output from there (to find what a lost transaction left
	// unwritten), so the output must be kept from there.
	OutputFrom Offsets `json:"output_from,omitempty"`
	// Finished is set when the subtask had finished before this checkpoint
	// and its last state was carried over from an earlier one (Flink:
	// FullyFinishedOperatorState).
	Finished bool `json:"finished,omitempty"`
	// AckTime is when the coordinator received the acknowledgement (wall
	// clock); EndToEnd the time from the checkpoint's trigger to then on
	// the job's clock (Flink: the subtask's end-to-end duration).
	AckTime  time.Time     `json:"ack_time"`
	EndToEnd time.Duration `json:"end_to_end,omitempty"`
}

// InFlightIDs are the order ids of the records c holds in flight (see
// SubtaskAck.InFlightIDs), over every subtask, each once.
func (c *Completed) InFlightIDs() []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range c.Tasks {
		for _, id := range a.InFlightIDs {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// Blobs are every blob the subtask's state needs: Chain, then Handle.
func (a SubtaskAck) Blobs() []Handle {
	out := make([]Handle, 0, len(a.Chain)+1)
	return append(append(out, a.Chain...), a.Handle)
}

// Completed is a checkpoint that every subtask acknowledged and whose
// metadata was written to the store (Flink: CompletedCheckpoint).
type Completed struct {
	ID             int64     `json:"id"`
	Kind           Kind      `json:"kind"`
	Job            string    `json:"job"`
	Mode           string    `json:"mode"`
	TriggerTime    time.Time `json:"trigger_time"`
	CompletionTime time.Time `json:"completion_time"`
	// EndToEnd is the time from trigger to completion on the job's clock,
	// which stops while the world is frozen; Frozen is how long it stood
	// still meanwhile. Zero in checkpoints written before they were kept.
	EndToEnd time.Duration         `json:"end_to_end,omitempty"`
	Frozen   time.Duration         `json:"frozen,omitempty"`
	Tasks    map[TaskID]SubtaskAck `json:"-"`
}

// CarriedOver reports whether subtask id finished before c was triggered:
// c holds its last acknowledgement, of an earlier checkpoint, so that a
// restore finds its state; its figures are that checkpoint's, not c's.
func (c *Completed) CarriedOver(id TaskID) bool {
	a, ok := c.Tasks[id]
	return ok && a.Finished && !a.AckTime.IsZero() && a.AckTime.Before(c.TriggerTime)
}

// SortedTasks returns the subtasks of c by operator name, then index.
func (c *Completed) SortedTasks() []TaskID {
	ids := make([]TaskID, 0, len(c.Tasks))
	for id := range c.Tasks {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool {
		if ids[a].Operator != ids[b].Operator {
			return ids[a].Operator < ids[b].Operator
		}
		return ids[a].Index < ids[b].Index
	})
	return ids
}

// Duration is the end-to-end duration, trigger to completion, on the job's
// clock (frozen time left out); the wall clock's for a checkpoint written
// before that was kept.
func (c *Completed) Duration() time.Duration {
	if c.EndToEnd > 0 {
		return c.EndToEnd
	}
	return c.CompletionTime.Sub(c.TriggerTime)
}

// Size is the sum of the full state sizes of all subtasks.
func (c *Completed) Size() (full, incremental int64) {
	for _, a := range c.Tasks {
		full += a.Bytes
		incremental += a.IncrementalBytes
	}
	return full, incremental
}

// SourceOffsets merges the offsets every source subtask reported.
func (c *Completed) SourceOffsets() Offsets {
	out := Offsets{}
	for _, a := range c.Tasks {
		for topic, parts := range a.Offsets {
			if out[topic] == nil {
				out[topic] = map[int32]int64{}
			}
			for p, o := range parts {
				out[topic][p] = o
			}
		}
	}
	return out
}

// OutputFloor is, per output topic and partition, the lowest OutputFrom of
// the checkpoint's subtasks: where a recovery from it may read the output.
func (c *Completed) OutputFloor() Offsets {
	out := Offsets{}
	for _, a := range c.Tasks {
		for topic, parts := range a.OutputFrom {
			out.Lower(topic, parts)
		}
	}
	return out
}

// Lower lowers o's offsets of topic to those of parts where parts has a
// lower one or o has none.
func (o Offsets) Lower(topic string, parts map[int32]int64) {
	if o[topic] == nil {
		o[topic] = map[int32]int64{}
	}
	for p, off := range parts {
		if cur, ok := o[topic][p]; !ok || off < cur {
			o[topic][p] = off
		}
	}
}

// StateStorage keeps the state blobs subtasks write during the asynchronous
// part of a snapshot (Flink: CheckpointStorage / CheckpointStreamFactory).
type StateStorage interface {
	// PutState stores data as the state of task for checkpoint id. The
	// store may keep data itself: the caller must not change it afterwards.
	PutState(ctx context.Context, id int64, task TaskID, data []byte) (Handle, error)
	// GetState reads a blob back and checks its checksum.
	GetState(ctx context.Context, h Handle) ([]byte, error)
}

// PartsStorage is a StateStorage that takes a blob in pieces, as a
// subtask's state comes (its keyed snapshot and operator entries, tens of
// megabytes), so that they need not be copied into one slice first. The
// blob is the pieces one after another; the store may keep them, and the
// caller must not change them afterwards.
type PartsStorage interface {
	PutStateParts(ctx context.Context, id int64, task TaskID, parts [][]byte) (Handle, error)
}

// Located is a Store kept in a folder, which it can name (the Badger
// store): a savepoint's path.
type Located interface {
	Dir() string
}

// Store keeps completed checkpoints (Flink: CompletedCheckpointStore). A
// checkpoint is listed only once Add has returned without error.
type Store interface {
	StateStorage
	// Add records a completed checkpoint durably and applies retention.
	Add(ctx context.Context, c *Completed) error
	// Latest returns the newest completed checkpoint or savepoint to restore
	// from, or nil when there is none.
	Latest(ctx context.Context) (*Completed, error)
	// All returns every retained checkpoint and savepoint, oldest first.
	All(ctx context.Context) ([]*Completed, error)
	// MaxID is the highest checkpoint id ever added (0 when none), so that
	// ids keep increasing across restarts of the process.
	MaxID() int64
}

// ErrChecksum means a state blob does not match the checksum recorded when it
// was written: the checkpoint is damaged.
var ErrChecksum = errors.New("state checksum mismatch")

// ErrNotFound means a state blob or checkpoint is not in the store.
var ErrNotFound = errors.New("not found in checkpoint store")
