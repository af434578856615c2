// Package runtime runs a job: the job graph, its tasks and channels,
// partitioners, the built-in operators, barrier handling, fault injection,
// and the observer that reports what happens (Flink: the TaskManager side of
// a job, plus the JobMaster that deploys and recovers it).
package runtime

// Kind is what a stream element carries.
type Kind uint8

const (
	// KindRecord is a data record.
	KindRecord Kind = iota
	// KindBarrier is checkpoint barrier ID (Flink: CheckpointBarrier).
	KindBarrier
	// KindCancel cancels checkpoint ID downstream (Flink:
	// CancelCheckpointMarker).
	KindCancel
	// KindEndOfInput says the channel will carry nothing more (Flink:
	// EndOfPartitionEvent).
	KindEndOfInput
)

// Record is one data record. Key is set by a hash edge to the key the
// receiving operator's keyed state is scoped to; Bytes carries raw input (as
// read from a topic) and Value a decoded value.
type Record struct {
	Key   string
	Bytes []byte
	Value any
}

// Element is what flows through a channel: a record, a barrier, a
// cancellation marker or the end of input.
type Element struct {
	Kind Kind
	// Savepoint marks the barrier of a savepoint, which every subtask
	// snapshots in full.
	Savepoint bool
	// StayAligned marks a barrier no subtask takes unaligned, not even
	// when the aligned-checkpoint timeout runs out: a savepoint's, and the
	// barriers a source injects once it has read all its input, so that
	// the job's last checkpoint holds nothing in flight that the job's
	// final commit writes after it (see sourceCheckpoint).
	StayAligned bool
	// AtLeastOnce marks the barrier of a checkpoint taken in at-least-once
	// mode (no alignment); the mode can change while the job runs.
	AtLeastOnce bool
	// group is Record.Key's key group plus one, set by the hash edge that
	// routed the record by it, so that the receiver's keyed state does not
	// hash the key again; 0 when not known.
	group int32
	// Record is the record; a barrier or cancellation marker keeps its
	// *marker in Record.Value, so that an element is 64 bytes, one cache
	// line, for the records that make up nearly all of them.
	Record Record
}

// marker is what a barrier or cancellation marker carries.
type marker struct {
	id           int64 // the checkpoint
	triggerNanos int64 // when the checkpoint was triggered (barriers)
}

// barrierElement is the barrier of checkpoint id.
func barrierElement(id, triggerNanos int64, savepoint, atLeastOnce bool) Element {
	return Element{Kind: KindBarrier, Savepoint: savepoint, StayAligned: savepoint, AtLeastOnce: atLeastOnce, Record: Record{Value: &marker{id, triggerNanos}}}
}

// cancelElement cancels checkpoint id downstream.
func cancelElement(id int64) Element {
	return Element{Kind: KindCancel, Record: Record{Value: &marker{id: id}}}
}

// ID is a barrier's or cancellation marker's checkpoint (0 for a record).
func (e *Element) ID() int64 {
	if m, ok := e.Record.Value.(*marker); ok && e.Kind != KindRecord {
		return m.id
	}
	return 0
}

// TriggerNanos is when a barrier's checkpoint was triggered.
func (e *Element) TriggerNanos() int64 {
	if m, ok := e.Record.Value.(*marker); ok && e.Kind != KindRecord {
		return m.triggerNanos
	}
	return 0
}

// keyGroup is the key group of the record's key, or -1 when no hash edge
// gave it.
func (e *Element) keyGroup() int { return int(e.group) - 1 }
