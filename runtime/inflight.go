package runtime

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"reflect"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/backend"
)

// Channel state (Flink FLIP-76, unaligned checkpoints): the records that
// were in flight in an input channel when a subtask took its snapshot of an
// unaligned checkpoint, stored with the snapshot and replayed into the
// channel, before any new record, on recovery. They are stored in this
// format, private to the package:
//
//	inFlightFormat                  one byte, the format and its version
//	uvarint count                   the number of records
//	count records, each:
//	  tag                           one byte: the value's type (tag*), or'ed
//	                                with flagKey and flagBytes
//	  uvarint len, Key              when flagKey (a non-empty key)
//	  uvarint len, Bytes            when flagBytes (non-nil raw bytes)
//	  the value's fields            strings as uvarint len and bytes,
//	                                integers as (zigzag) varints, in the
//	                                order of appendInFlightValue
//
// Every field of the values is kept, those the JSON form leaves out
// (EventTime, Watermark) too: a replayed record is the record that was in
// flight.
const inFlightFormat byte = 0xC1

// The tags of a record's value. The engine's own values take 0, 1 and 7:
// nil and *EventTime on the records of a source (with Bytes). Every other
// value is a job's own (an InFlightValue), which takes any other tag below
// tagLimit (the orders job: 2 to 6).
const (
	tagNil byte = iota
	tagEventTime
	tagEventTimeFrom byte = 7 // *EventTime with its origin
	tagLimit         byte = 0x40

	flagKey   byte = 0x40
	flagBytes byte = 0x80
	tagMask        = ^(flagKey | flagBytes)
)

// InFlightValue is a record value of a job's own that channel state can
// store (Flink: a TypeSerializer): an unaligned checkpoint persists the
// records in flight with every field they have, and replays them as they
// were. The job's InFlightDecoder reads them back.
type InFlightValue interface {
	// InFlightTag names the value's type: any tag but 0, 1 and 7, below
	// 0x40, one per type of the job.
	InFlightTag() byte
	// AppendInFlight appends the value's fields (AppendInFlightString,
	// binary.AppendVarint).
	AppendInFlight(dst []byte) []byte
	// InFlightSize is what AppendInFlight appends, in bytes, computed
	// without encoding (InFlightStringSize, InFlightVarintSize): the hot
	// path adds up the in-flight data a subtask processes.
	InFlightSize() int
}

// InFlightDecoder reads back a job's InFlightValues. It may hand out
// values from blocks of at most left values (the records still to decode,
// this one included); a decoder belongs to one goroutine.
type InFlightDecoder interface {
	// Decode reads a value of tag off r; ok is false for a tag the job
	// has no type of. A field that is not there sets r's error.
	Decode(tag byte, r *InFlightReader, left int) (v any, ok bool)
}

// encodeInFlight appends recs to dst in the channel-state format. It fails
// on a value of a type it cannot store (the error names the Go type), and
// then returns dst as it was.
func encodeInFlight(dst []byte, recs []Record) ([]byte, error) {
	start := len(dst)
	size := 1 + uvarintSize(uint64(len(recs)))
	for i := range recs {
		size += inFlightSize(&recs[i])
	}
	if cap(dst)-len(dst) < size { // channel state may be megabytes: grown once
		dst = append(make([]byte, 0, len(dst)+size), dst...)
	}
	dst = append(dst, inFlightFormat)
	dst = binary.AppendUvarint(dst, uint64(len(recs)))
	for i := range recs {
		rec := &recs[i]
		tag, err := inFlightTag(rec.Value)
		if err != nil {
			return dst[:start], fmt.Errorf("in-flight record %d of %d: %w", i, len(recs), err)
		}
		if rec.Key != "" {
			tag |= flagKey
		}
		if rec.Bytes != nil {
			tag |= flagBytes
		}
		dst = append(dst, tag)
		if rec.Key != "" {
			dst = AppendInFlightString(dst, rec.Key)
		}
		if rec.Bytes != nil {
			dst = binary.AppendUvarint(dst, uint64(len(rec.Bytes)))
			dst = append(dst, rec.Bytes...)
		}
		dst = appendInFlightValue(dst, rec.Value)
	}
	return dst, nil
}

// inFlightTag is the tag of value v, or an error for a value that cannot be
// stored: one of another type, or a nil pointer (which would come back as
// another value).
func inFlightTag(v any) (byte, error) {
	switch v := v.(type) {
	case nil:
		return tagNil, nil
	case *EventTime:
		switch {
		case v == nil:
			return 0, fmt.Errorf("cannot store a nil %T as channel state", v)
		case v.Origin.Topic != "":
			return tagEventTimeFrom, nil
		}
		return tagEventTime, nil
	case InFlightValue:
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return 0, fmt.Errorf("cannot store a nil %T as channel state", v)
		}
		tag := v.InFlightTag()
		if tag == tagNil || tag == tagEventTime || tag == tagEventTimeFrom || tag >= tagLimit {
			return 0, fmt.Errorf("%T takes tag %d, which is the engine's or too large", v, tag)
		}
		return tag, nil
	}
	return 0, fmt.Errorf("cannot store a value of type %T as channel state", v)
}

// appendInFlightValue appends v's fields; v is nil or one of the types
// inFlightTag accepts, not a nil pointer.
func appendInFlightValue(dst []byte, v any) []byte {
	switch v := v.(type) {
	case *EventTime:
		dst = binary.AppendVarint(dst, v.Time)
		dst = binary.AppendVarint(dst, v.Watermark)
		if v.Origin.Topic != "" {
			dst = AppendInFlightString(dst, v.Origin.Topic)
			dst = binary.AppendVarint(dst, int64(v.Origin.Partition))
			dst = binary.AppendVarint(dst, v.Origin.Offset)
		}
	case InFlightValue:
		dst = v.AppendInFlight(dst)
	}
	return dst
}

// inFlightSize is the size encodeInFlight gives rec: what it adds to the
// encoding besides the format byte and the count. It encodes nothing and
// allocates nothing (the hot path adds up the in-flight data a subtask
// processes); a value encodeInFlight cannot store counts as none.
func inFlightSize(rec *Record) int {
	n := 1 // the tag
	if rec.Key != "" {
		n += InFlightStringSize(len(rec.Key))
	}
	if rec.Bytes != nil {
		n += InFlightStringSize(len(rec.Bytes))
	}
	switch v := rec.Value.(type) {
	case *EventTime:
		if v != nil {
			n += InFlightVarintSize(v.Time) + InFlightVarintSize(v.Watermark)
			if v.Origin.Topic != "" {
				n += InFlightStringSize(len(v.Origin.Topic)) + InFlightVarintSize(int64(v.Origin.Partition)) + InFlightVarintSize(v.Origin.Offset)
			}
		}
	case InFlightValue:
		if rv := reflect.ValueOf(v); rv.Kind() != reflect.Pointer || !rv.IsNil() {
			n += v.InFlightSize()
		}
	}
	return n
}

// AppendInFlightString appends s as channel state keeps a string: its
// length (a uvarint), then its bytes; InFlightReader.Field reads it.
func AppendInFlightString(dst []byte, s string) []byte { return backend.AppendString(dst, s) }

// InFlightStringSize is the size of n bytes with their uvarint length
// before them.
func InFlightStringSize(n int) int { return uvarintSize(uint64(n)) + n }

// InFlightVarintSize is the size of binary.AppendVarint's encoding of x.
func InFlightVarintSize(x int64) int { return uvarintSize(uint64(x<<1) ^ uint64(x>>63)) }

// uvarintSize is the size of binary.AppendUvarint's encoding of x.
func uvarintSize(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// decodeInFlight reads what encodeInFlight wrote, the job's values with
// job (nil: a job with none). Any malformed input is an error wrapping
// backend.ErrCorrupt. The records share no memory with b.
func decodeInFlight(b []byte, job InFlightDecoder) ([]Record, error) {
	if len(b) == 0 || b[0] != inFlightFormat {
		return nil, inFlightCorrupt(-1, "not channel state (bad format byte)")
	}
	// One copy of the input, which the records' raw bytes point into: the
	// state blob they come from may be large, and must not stay in memory
	// as long as a replayed record does.
	r := InFlightReader{b: bytes.Clone(b[1:])}
	count := r.Uvarint()
	if r.bad != "" {
		return nil, inFlightCorrupt(-1, "no record count")
	}
	if count > uint64(len(r.b)) { // a record takes a byte at least
		return nil, inFlightCorrupt(-1, fmt.Sprintf("%d records in %d bytes", count, len(r.b)))
	}
	recs := make([]Record, count)
	d := inFlightDecoder{job: job}
	for i := range recs {
		d.left = len(recs) - i
		if d.record(&r, &recs[i]); r.bad != "" {
			return nil, inFlightCorrupt(i, r.bad)
		}
	}
	if len(r.b) != 0 {
		return nil, inFlightCorrupt(-1, fmt.Sprintf("%d bytes after the last record", len(r.b)))
	}
	return recs, nil
}

func inFlightCorrupt(rec int, why string) error {
	if rec < 0 {
		return fmt.Errorf("channel state: %w (%s)", backend.ErrCorrupt, why)
	}
	return fmt.Errorf("channel state: %w (record %d: %s)", backend.ErrCorrupt, rec, why)
}

// InFlightReader reads fields off the front of channel state; the first
// that is not there makes it bad, and every later read returns zero.
type InFlightReader struct {
	b   []byte
	bad string
}

// NewInFlightReader reads the fields of b, as a job's tests of its
// InFlightDecoder do.
func NewInFlightReader(b []byte) *InFlightReader { return &InFlightReader{b: b} }

// Err says what the first field that was not there was (nil: none was
// missing), wrapping backend.ErrCorrupt.
func (r *InFlightReader) Err() error {
	if r.bad == "" {
		return nil
	}
	return fmt.Errorf("channel state: %w (%s)", backend.ErrCorrupt, r.bad)
}

// Len is how many bytes are left to read.
func (r *InFlightReader) Len() int { return len(r.b) }

// Uvarint reads an unsigned varint.
func (r *InFlightReader) Uvarint() uint64 {
	if r.bad != "" {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = "truncated or overlong length"
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Varint reads a varint (binary.AppendVarint).
func (r *InFlightReader) Varint() int64 {
	if r.bad != "" {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad = "truncated or overlong number"
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Field reads what AppendInFlightString wrote; the bytes point into the
// state, which is the decoder's own copy: keep them as they are, or copy
// them into strings.
func (r *InFlightReader) Field() []byte {
	l := r.Uvarint()
	if r.bad != "" {
		return nil
	}
	if l > uint64(len(r.b)) {
		r.bad = "truncated field"
		return nil
	}
	f := r.b[:l:l]
	r.b = r.b[l:]
	return f
}

// inFlightDecoder hands out the engine's values of the records it decodes
// from blocks, not one allocation each, of no more values than records
// are left; job decodes the job's own.
type inFlightDecoder struct {
	left  int    // records left to decode, this one included
	topic string // the last origin's topic
	times Slab[EventTime]
	job   InFlightDecoder
}

// record decodes one record from r into rec; r.bad says what is wrong
// with it.
func (d *inFlightDecoder) record(r *InFlightReader, rec *Record) {
	if len(r.b) == 0 {
		r.bad = "truncated"
		return
	}
	tag := r.b[0]
	r.b = r.b[1:]
	if tag&flagKey != 0 {
		if rec.Key = string(r.Field()); r.bad == "" && rec.Key == "" {
			r.bad = "an empty key marked present"
			return
		}
	}
	if tag&flagBytes != 0 {
		rec.Bytes = r.Field()
	}
	switch tag &= tagMask; tag {
	case tagNil:
	case tagEventTime, tagEventTimeFrom:
		v := d.times.Take(d.left)
		v.Time, v.Watermark = r.Varint(), r.Varint()
		if tag == tagEventTimeFrom {
			topic := r.Field()
			if string(topic) != d.topic { // the records of a channel share it
				d.topic = string(topic)
			}
			v.Origin = Origin{Topic: d.topic, Partition: int32(r.Varint()), Offset: r.Varint()}
		}
		rec.Value = v
	default:
		var ok bool
		if d.job != nil {
			rec.Value, ok = d.job.Decode(tag, r, d.left)
		}
		if !ok {
			r.bad = fmt.Sprintf("unknown tag %#x", tag)
		}
	}
}

// InFlightChannel reads one entry of a subtask's channel state
// (backend.SubtaskState Channels), for tools that show what a checkpoint
// holds: the input channel its key names, by the subtask's logical input
// and the upstream subtask, and the number of in-flight records stored for
// it; job decodes the job's own values. The formats stay the package's
// own. An error wraps backend.ErrCorrupt.
func InFlightChannel(key string, state []byte, job InFlightDecoder) (input int, from string, records int, err error) {
	input, from, ok := parseChannelKey(key)
	if !ok {
		return 0, "", 0, fmt.Errorf("channel state: %w (%q is not a channel)", backend.ErrCorrupt, key)
	}
	recs, err := decodeInFlight(state, job)
	return input, from, len(recs), err
}

// channelKey names an input channel in channel state (backend.SubtaskState
// Channels): the subtask's logical input (0 or 1: the operator's first or
// second input) and the upstream subtask, e.g. "0 parse-orders/1".
func channelKey(logical int, from string) string {
	return strconv.Itoa(logical) + " " + from
}

// parseChannelKey is channelKey's inverse; ok is false for a key
// channelKey does not make (a logical input that is not a non-negative
// number as strconv.Itoa writes it, or no upstream subtask).
func parseChannelKey(k string) (logical int, from string, ok bool) {
	n, from, found := strings.Cut(k, " ")
	if !found || from == "" {
		return 0, "", false
	}
	logical, err := strconv.Atoi(n)
	if err != nil || logical < 0 || strconv.Itoa(logical) != n {
		return 0, "", false
	}
	return logical, from, true
}
