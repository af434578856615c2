package runtime

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"faultline/backend"
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

// The value types a record may carry, as the built-in operators emit them:
// nil and *EventTime on the records of a source (with Bytes), *Order and
// *Payment from parse, *Enriched from enrich, *PaidOrder from the join,
// *Revenue from the aggregation.
const (
	tagNil byte = iota
	tagEventTime
	tagOrder
	tagPayment
	tagPaidOrder
	tagRevenue
	tagEnriched
	tagEventTimeFrom // *EventTime with its origin
	tagCount         // the number of tags

	flagKey   byte = 0x40
	flagBytes byte = 0x80
	tagMask        = ^(flagKey | flagBytes)
)

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
			dst = appendString(dst, rec.Key)
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
// stored: one of another type, or a nil pointer of one of the types (which
// would come back as another value).
func inFlightTag(v any) (byte, error) {
	nilPtr := false
	var tag byte
	switch v := v.(type) {
	case nil:
		return tagNil, nil
	case *EventTime:
		tag, nilPtr = tagEventTime, v == nil
		if !nilPtr && v.Origin.Topic != "" {
			tag = tagEventTimeFrom
		}
	case *Order:
		tag, nilPtr = tagOrder, v == nil
	case *Payment:
		tag, nilPtr = tagPayment, v == nil
	case *PaidOrder:
		tag, nilPtr = tagPaidOrder, v == nil
	case *Revenue:
		tag, nilPtr = tagRevenue, v == nil
	case *Enriched:
		tag, nilPtr = tagEnriched, v == nil
	default:
		return 0, fmt.Errorf("cannot store a value of type %T as channel state", v)
	}
	if nilPtr {
		return 0, fmt.Errorf("cannot store a nil %T as channel state", v)
	}
	return tag, nil
}

// appendInFlightValue appends v's fields; v is nil or one of the types
// inFlightTag accepts, not a nil pointer.
func appendInFlightValue(dst []byte, v any) []byte {
	switch v := v.(type) {
	case *EventTime:
		dst = binary.AppendVarint(dst, v.Time)
		dst = binary.AppendVarint(dst, v.Watermark)
		if v.Origin.Topic != "" {
			dst = appendString(dst, v.Origin.Topic)
			dst = binary.AppendVarint(dst, int64(v.Origin.Partition))
			dst = binary.AppendVarint(dst, v.Origin.Offset)
		}
	case *Order:
		dst = appendInFlightOrder(dst, v)
	case *Payment:
		dst = appendString(dst, v.OrderID)
		dst = appendString(dst, v.PaymentID)
		dst = binary.AppendVarint(dst, v.AmountCents)
		dst = binary.AppendVarint(dst, v.EventTime)
		dst = binary.AppendVarint(dst, v.Watermark)
	case *PaidOrder:
		dst = appendInFlightPaid(dst, v)
	case *Revenue:
		dst = appendInFlightPaid(dst, &v.PaidOrder)
		dst = binary.AppendVarint(dst, v.CustomerTotalCents)
	case *Enriched:
		dst = appendInFlightOrder(dst, &v.Order)
		dst = appendString(dst, v.Tier)
	}
	return dst
}

func appendInFlightOrder(dst []byte, o *Order) []byte {
	dst = appendString(dst, o.OrderID)
	dst = appendString(dst, o.Customer)
	dst = binary.AppendVarint(dst, o.AmountCents)
	dst = binary.AppendVarint(dst, o.EventTime)
	return binary.AppendVarint(dst, o.Watermark)
}

func appendInFlightPaid(dst []byte, p *PaidOrder) []byte {
	dst = appendString(dst, p.OrderID)
	dst = appendString(dst, p.Customer)
	return binary.AppendVarint(dst, p.AmountCents)
}

// inFlightSize is the size encodeInFlight gives rec: what it adds to the
// encoding besides the format byte and the count. It encodes nothing and
// allocates nothing (the hot path adds up the in-flight data a subtask
// processes); a value encodeInFlight cannot store counts as none.
func inFlightSize(rec *Record) int {
	n := 1 // the tag
	if rec.Key != "" {
		n += lenSize(len(rec.Key))
	}
	if rec.Bytes != nil {
		n += lenSize(len(rec.Bytes))
	}
	switch v := rec.Value.(type) {
	case *EventTime:
		if v != nil {
			n += varintSize(v.Time) + varintSize(v.Watermark)
			if v.Origin.Topic != "" {
				n += lenSize(len(v.Origin.Topic)) + varintSize(int64(v.Origin.Partition)) + varintSize(v.Origin.Offset)
			}
		}
	case *Order:
		if v != nil {
			n += inFlightOrderSize(v)
		}
	case *Payment:
		if v != nil {
			n += lenSize(len(v.OrderID)) + lenSize(len(v.PaymentID)) +
				varintSize(v.AmountCents) + varintSize(v.EventTime) + varintSize(v.Watermark)
		}
	case *PaidOrder:
		if v != nil {
			n += inFlightPaidSize(v)
		}
	case *Revenue:
		if v != nil {
			n += inFlightPaidSize(&v.PaidOrder) + varintSize(v.CustomerTotalCents)
		}
	case *Enriched:
		if v != nil {
			n += inFlightOrderSize(&v.Order) + lenSize(len(v.Tier))
		}
	}
	return n
}

func inFlightOrderSize(o *Order) int {
	return lenSize(len(o.OrderID)) + lenSize(len(o.Customer)) +
		varintSize(o.AmountCents) + varintSize(o.EventTime) + varintSize(o.Watermark)
}

func inFlightPaidSize(p *PaidOrder) int {
	return lenSize(len(p.OrderID)) + lenSize(len(p.Customer)) + varintSize(p.AmountCents)
}

// lenSize is the size of n bytes with their uvarint length before them.
func lenSize(n int) int { return uvarintSize(uint64(n)) + n }

// uvarintSize is the size of binary.AppendUvarint's encoding of x.
func uvarintSize(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// varintSize is the size of binary.AppendVarint's encoding of x.
func varintSize(x int64) int { return uvarintSize(uint64(x<<1) ^ uint64(x>>63)) }

// decodeInFlight reads what encodeInFlight wrote. Any malformed input is an
// error wrapping backend.ErrCorrupt. The records share no memory with b.
func decodeInFlight(b []byte) ([]Record, error) {
	if len(b) == 0 || b[0] != inFlightFormat {
		return nil, inFlightCorrupt(-1, "not channel state (bad format byte)")
	}
	// One copy of the input, which the records' raw bytes point into: the
	// state blob they come from may be large, and must not stay in memory
	// as long as a replayed record does.
	r := inFlightReader{b: bytes.Clone(b[1:])}
	count := r.uvarint()
	if r.bad != "" {
		return nil, inFlightCorrupt(-1, "no record count")
	}
	if count > uint64(len(r.b)) { // a record takes a byte at least
		return nil, inFlightCorrupt(-1, fmt.Sprintf("%d records in %d bytes", count, len(r.b)))
	}
	recs := make([]Record, count)
	var d inFlightDecoder
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

// inFlightReader reads fields off the front of b; the first that is not
// there sets bad, and every later read returns zero.
type inFlightReader struct {
	b   []byte
	bad string
}

func (r *inFlightReader) uvarint() uint64 {
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

func (r *inFlightReader) varint() int64 {
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

// field reads uvarint-length-prefixed bytes; they point into r.b.
func (r *inFlightReader) field() []byte {
	l := r.uvarint()
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

// inFlightDecoder hands out the values of the records it decodes from
// blocks, not one allocation each, of no more values than records are
// left.
type inFlightDecoder struct {
	left     int // records left to decode, this one included
	text     text
	topic    string // the last origin's topic
	times    slab[EventTime]
	orders   slab[Order]
	payments slab[Payment]
	paid     slab[PaidOrder]
	revenues slab[Revenue]
	enriched slab[Enriched]
}

// record decodes one record from r into rec; r.bad says what is wrong
// with it.
func (d *inFlightDecoder) record(r *inFlightReader, rec *Record) {
	if len(r.b) == 0 {
		r.bad = "truncated"
		return
	}
	tag := r.b[0]
	r.b = r.b[1:]
	if tag&tagMask >= tagCount {
		r.bad = fmt.Sprintf("unknown tag %#x", tag)
		return
	}
	if tag&flagKey != 0 {
		if rec.Key = string(r.field()); r.bad == "" && rec.Key == "" {
			r.bad = "an empty key marked present"
			return
		}
	}
	if tag&flagBytes != 0 {
		rec.Bytes = r.field()
	}
	switch tag & tagMask {
	case tagEventTime, tagEventTimeFrom:
		v := take(&d.times, d.left)
		v.Time, v.Watermark = r.varint(), r.varint()
		if tag&tagMask == tagEventTimeFrom {
			topic := r.field()
			if string(topic) != d.topic { // the records of a channel share it
				d.topic = string(topic)
			}
			v.Origin = Origin{Topic: d.topic, Partition: int32(r.varint()), Offset: r.varint()}
		}
		rec.Value = v
	case tagOrder:
		v := take(&d.orders, d.left)
		d.order(r, v)
		rec.Value = v
	case tagPayment:
		v := take(&d.payments, d.left)
		v.OrderID, v.PaymentID = d.text.two(r.field(), r.field())
		v.AmountCents, v.EventTime, v.Watermark = r.varint(), r.varint(), r.varint()
		rec.Value = v
	case tagPaidOrder:
		v := take(&d.paid, d.left)
		d.paidOrder(r, v)
		rec.Value = v
	case tagRevenue:
		v := take(&d.revenues, d.left)
		d.paidOrder(r, &v.PaidOrder)
		v.CustomerTotalCents = r.varint()
		rec.Value = v
	case tagEnriched:
		v := take(&d.enriched, d.left)
		d.order(r, &v.Order)
		v.Tier = string(r.field())
		rec.Value = v
	}
}

// take is s.new, from a block of at most left values.
func take[T any](s *slab[T], left int) *T {
	if len(s.free) == 0 {
		s.free = make([]T, min(left, slabBlock))
	}
	return s.new()
}

func (d *inFlightDecoder) order(r *inFlightReader, o *Order) {
	o.OrderID, o.Customer = d.text.two(r.field(), r.field())
	o.AmountCents, o.EventTime, o.Watermark = r.varint(), r.varint(), r.varint()
}

func (d *inFlightDecoder) paidOrder(r *inFlightReader, p *PaidOrder) {
	p.OrderID, p.Customer = d.text.two(r.field(), r.field())
	p.AmountCents = r.varint()
}

// InFlightChannel reads one entry of a subtask's channel state
// (backend.SubtaskState Channels), for tools that show what a checkpoint
// holds: the input channel its key names, by the subtask's logical input
// and the upstream subtask, and the number of in-flight records stored for
// it. The formats stay the package's own. An error wraps
// backend.ErrCorrupt.
func InFlightChannel(key string, state []byte) (input int, from string, records int, err error) {
	input, from, ok := parseChannelKey(key)
	if !ok {
		return 0, "", 0, fmt.Errorf("channel state: %w (%q is not a channel)", backend.ErrCorrupt, key)
	}
	recs, err := decodeInFlight(state)
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
