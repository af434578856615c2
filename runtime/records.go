package runtime

import (
	"fmt"
)

// Fielder is a record value whose fields a hash edge can key by.
type Fielder interface {
	Field(name string) (string, bool)
}

// JSONAppender is a record value a sink can write.
type JSONAppender interface {
	AppendJSON(dst []byte) []byte
}

// ErrBadRecord means an input record cannot be parsed.
type ErrBadRecord struct {
	Schema string
	Input  []byte
	Reason string
	// OtherSchema is set when the record is a well-formed record of the
	// other schema (a payment where orders are expected): the operator
	// reads the wrong topic, and no record of it will ever parse.
	OtherSchema string
}

func (e *ErrBadRecord) Error() string {
	in := e.Input
	if len(in) > 80 {
		in = in[:80]
	}
	return fmt.Sprintf("bad %s record %q: %s", e.Schema, in, e.Reason)
}

// Slab hands out zero values of T from blocks, one allocation per block
// instead of one per value: the operators allocate a record value for each
// record they emit, and nothing keeps those long. A block stays in memory
// while any of its values is referenced. A Slab belongs to one goroutine.
type Slab[T any] struct{ free []T }

const slabBlock = 256

// New returns a zero value of T.
func (s *Slab[T]) New() *T {
	if len(s.free) == 0 {
		s.free = make([]T, slabBlock)
	}
	v := &s.free[0]
	s.free = s.free[1:]
	return v
}

// Take is New, from a block of at most left values when a new block is
// needed: a decoder that knows how many values are left wastes none.
func (s *Slab[T]) Take(left int) *T {
	if len(s.free) == 0 {
		s.free = make([]T, max(1, min(left, slabBlock)))
	}
	return s.New()
}

// EventTime is what a source hands along with each record it reads, in
// Record.Value, to the operator that decodes it: the record's event time
// (Flink: a StreamRecord's timestamp, which a KafkaSource takes from the
// Kafka record) and the source subtask's watermark when it emitted the
// record (Flink: the Watermark a source emits), both in Unix milliseconds.
// Flink sends watermarks as elements of their own; here they ride on the
// records, so that an element stays 64 bytes and the hot path sends nothing
// more.
type EventTime struct {
	// Time is the record's event time (0: not known).
	Time int64
	// Watermark is how far the source subtask's event time has come: the
	// least, over the partitions it reads, of the newest event time it
	// read of each (0: none yet, until every partition delivered). A record
	// it emits later is older only as far as one partition's timestamps
	// are out of order, which a join's TTL slack tolerates (the orders job's).
	Watermark int64
	// Origin is where the source read the record, for the dead-letter
	// topic's headers (Topic "": not read from Kafka).
	Origin Origin
}

// Origin is where a source read a record: its topic, partition and offset
// (as Kafka Connect's error headers name a failed record).
type Origin struct {
	Topic     string
	Partition int32
	Offset    int64
}

// EventTimes hands out *EventTime values from blocks, so that a source
// stamps its records without an allocation each; a value is never reused.
type EventTimes struct{ s Slab[EventTime] }

// New returns a new *EventTime holding event time ms, watermark wm and
// the record's origin.
func (e *EventTimes) New(ms, wm int64, from Origin) *EventTime {
	v := e.s.New()
	*v = EventTime{Time: ms, Watermark: wm, Origin: from}
	return v
}

// EventTimeOf is the event time and watermark a source handed along with
// rec (zero: none).
func EventTimeOf(rec *Record) EventTime {
	if t, ok := rec.Value.(*EventTime); ok {
		return *t
	}
	return EventTime{}
}
