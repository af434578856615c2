package runtime

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/backend"
)

// testValue and testPair stand for a job's record values (the orders
// job's are tested in runtime/jobs/orders); testDecoder reads them back.
type testValue struct {
	ID, Name string
	N, T, W  int64
}

type testPair struct {
	testValue
	Extra string
	M     int64
}

const (
	tagTestValue byte = 2
	tagTestPair  byte = 3
)

func (v *testValue) InFlightTag() byte { return tagTestValue }
func (v *testValue) AppendInFlight(dst []byte) []byte {
	dst = AppendInFlightString(AppendInFlightString(dst, v.ID), v.Name)
	return binary.AppendVarint(binary.AppendVarint(binary.AppendVarint(dst, v.N), v.T), v.W)
}
func (v *testValue) InFlightSize() int {
	return InFlightStringSize(len(v.ID)) + InFlightStringSize(len(v.Name)) + InFlightVarintSize(v.N) + InFlightVarintSize(v.T) + InFlightVarintSize(v.W)
}
func (p *testPair) InFlightTag() byte { return tagTestPair }
func (p *testPair) AppendInFlight(dst []byte) []byte {
	return binary.AppendVarint(AppendInFlightString(p.testValue.AppendInFlight(dst), p.Extra), p.M)
}
func (p *testPair) InFlightSize() int {
	return p.testValue.InFlightSize() + InFlightStringSize(len(p.Extra)) + InFlightVarintSize(p.M)
}

type testDecoder struct{}

func (testDecoder) Decode(tag byte, r *InFlightReader, _ int) (any, bool) {
	value := func(v *testValue) {
		v.ID, v.Name = string(r.Field()), string(r.Field())
		v.N, v.T, v.W = r.Varint(), r.Varint(), r.Varint()
	}
	switch tag {
	case tagTestValue:
		v := &testValue{}
		value(v)
		return v, true
	case tagTestPair:
		p := &testPair{}
		value(&p.testValue)
		p.Extra, p.M = string(r.Field()), r.Varint()
		return p, true
	}
	return nil, false
}

// inFlightSamples are records of every kind subtasks send each other, with
// and without keys and raw bytes: the engine's own values and a job's.
func inFlightSamples() []Record {
	return []Record{
		{},
		{Bytes: []byte(`{"order_id":"o-1","customer":"c-7","amount_cents":1250}`), Value: &EventTime{Time: 1764660000123, Watermark: 1764659999000}},
		{Bytes: []byte(`{"order_id":"o-2"}`)},  // a generated record: no event time
		{Bytes: []byte{}, Value: &EventTime{}}, // empty, not nil
		{Bytes: []byte(`{"order_id":"o-2"}`), Value: &EventTime{Time: 1, Watermark: 0, Origin: Origin{Topic: "shop.orders", Partition: 3, Offset: 1 << 40}}},
		{Bytes: []byte(`x`), Value: &EventTime{Time: 2, Origin: Origin{Topic: "payments", Partition: 0, Offset: 0}}},
		{Key: "o-1", Value: &testValue{ID: "o-1", Name: "c-7", N: 1250, T: 1764660000123, W: 1764659999000}},
		{Key: "o-1", Value: &testValue{ID: "o-1", Name: "p-1", N: 1250, T: 1764660000200, W: -1}},
		{Value: &testPair{testValue: testValue{ID: "o-1", Name: "c-7", N: math.MaxInt64}, Extra: "large", M: math.MinInt64}},
		{Key: "ö-ü/\x00 ", Value: &testPair{testValue: testValue{ID: "o-9", Name: "Zoë", N: math.MinInt64, T: 1, W: 2}, Extra: "large"}},
		{Value: &testValue{}},
		{Key: strings.Repeat("k", 300), Bytes: bytes.Repeat([]byte{0xff}, 70000), Value: &testPair{}},
	}
}

func TestInFlightRoundTrip(t *testing.T) {
	recs := inFlightSamples()
	prefix := []byte("before")
	b, err := encodeInFlight(prefix, recs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, prefix) {
		t.Fatalf("encodeInFlight did not append to dst")
	}
	got, err := decodeInFlight(b[len(prefix):], testDecoder{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", got, recs)
	}
	// The records share nothing with the input.
	b[len(b)-1] ^= 0xff
	if !reflect.DeepEqual(got, recs) {
		t.Fatal("the decoded records point into the input")
	}
	empty, err := encodeInFlight(nil, nil)
	if err != nil || len(empty) != 2 {
		t.Fatalf("no records: %x, %v", empty, err)
	}
	if got, err := decodeInFlight(empty, testDecoder{}); err != nil || len(got) != 0 {
		t.Fatalf("no records decode to %v, %v", got, err)
	}
}

// fillFields sets every field of the struct v points at, those of embedded
// structs too, to a value that is not zero and differs from the others.
func fillFields(t *testing.T, v reflect.Value, n *int) {
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		*n++
		switch f.Kind() {
		case reflect.String:
			f.SetString(strings.Repeat("x", *n))
		case reflect.Int64:
			f.SetInt(int64(*n) * -1e12)
		case reflect.Int32:
			f.SetInt(int64(*n) * -1e6)
		case reflect.Struct:
			fillFields(t, f, n)
		default:
			t.Fatalf("%s.%s is a %s: teach the channel-state codec and this test about it", v.Type(), v.Type().Field(i).Name, f.Kind())
		}
	}
}

// Every field of every value type survives, those a later change adds
// too: the test fills them by reflection.
func TestInFlightKeepsEveryField(t *testing.T) {
	for _, v := range []any{&EventTime{}, &testValue{}, &testPair{}} {
		n := 0
		fillFields(t, reflect.ValueOf(v).Elem(), &n)
		recs := []Record{{Key: "k", Bytes: []byte("b"), Value: v}}
		b, err := encodeInFlight(nil, recs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeInFlight(b, testDecoder{})
		if err != nil || !reflect.DeepEqual(got, recs) {
			t.Errorf("%T: got %+v, %v; want %+v", v, got, err, recs)
		}
	}
}

func TestInFlightSize(t *testing.T) {
	header, _ := encodeInFlight(nil, nil)
	total := 0
	for _, rec := range inFlightSamples() {
		b, err := encodeInFlight(nil, []Record{rec})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := inFlightSize(&rec), len(b)-len(header); got != want {
			t.Errorf("inFlightSize(%+v) = %d, encoded %d", rec, got, want)
		}
		total += inFlightSize(&rec)
		if a := testing.AllocsPerRun(10, func() { inFlightSize(&rec) }); a != 0 {
			t.Errorf("inFlightSize of %T allocates %v times", rec.Value, a)
		}
	}
	all, _ := encodeInFlight(nil, inFlightSamples())
	if total != len(all)-len(header) {
		t.Errorf("sizes add up to %d, encoded %d besides the header", total, len(all)-len(header))
	}
	recs := inFlightSamples()
	if a := testing.AllocsPerRun(10, func() { encodeInFlight(nil, recs) }); a != 1 {
		t.Errorf("encodeInFlight allocates %v times, want once", a)
	}
	// A value it cannot store counts as none.
	if got := inFlightSize(&Record{Key: "k", Value: "a string"}); got != 1+2 {
		t.Errorf("inFlightSize of an unknown value = %d, want 3", got)
	}
}

func TestInFlightRejectsOtherValues(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{"a string", "string"},
		{testValue{ID: "o-1"}, "runtime.testValue"},
		{&marker{id: 3}, "*runtime.marker"},
		{(*testPair)(nil), "nil *runtime.testPair"},
		{(*EventTime)(nil), "nil *runtime.EventTime"},
		{&badTag{}, "*runtime.badTag takes tag 7"},
		{[]byte("x"), "[]uint8"},
	} {
		dst := []byte("kept")
		got, err := encodeInFlight(dst, []Record{{Value: &testValue{}}, {Value: tc.v}})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "record 1") {
			t.Errorf("%T: err = %v, want it to name %s and record 1", tc.v, err, tc.want)
		}
		if string(got) != "kept" {
			t.Errorf("%T: dst = %q, want it as it was", tc.v, got)
		}
	}
}

func TestDecodeInFlightRejectsDamage(t *testing.T) {
	good, err := encodeInFlight(nil, inFlightSamples())
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{
		"empty":            nil,
		"format byte":      append([]byte{inFlightFormat + 1}, good[1:]...),
		"trailing byte":    append(bytes.Clone(good), 0),
		"count too large":  {inFlightFormat, 2, tagNil},
		"count overlong":   {inFlightFormat, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
		"unknown tag":      {inFlightFormat, 1, tagTestPair + 1},
		"unused tag bit":   {inFlightFormat, 1, tagNil | 0x20},
		"empty key marked": {inFlightFormat, 1, tagNil | flagKey, 0},
		"field too long":   {inFlightFormat, 1, tagNil | flagBytes, 5, 'a'},
		"number missing":   {inFlightFormat, 1, tagEventTime, 2},
		"number overlong":  {inFlightFormat, 1, tagEventTime, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0},
	}
	// Cut at every byte but inside the last sample's 70,000 bytes of
	// payload, where every 997th cut and the last 64 stand for the rest
	// (each cut decodes a copy: all of them cost seconds under -race).
	samples := inFlightSamples()
	small, err := encodeInFlight(nil, samples[:len(samples)-1])
	if err != nil {
		t.Fatal(err)
	}
	header := len(small) + 400 // the last sample's tag, key and lengths
	for i := 0; i < len(good); i++ {
		if i < header || len(good)-i <= 64 || i%997 == 0 {
			bad[fmt.Sprintf("truncated to %d bytes", i)] = good[:i]
		}
	}
	for name, b := range bad {
		got, err := decodeInFlight(b, testDecoder{})
		if !errors.Is(err, backend.ErrCorrupt) || got != nil {
			t.Errorf("%s: %d records, err = %v; want ErrCorrupt", name, len(got), err)
		}
	}
}

func TestChannelKey(t *testing.T) {
	for _, tc := range []struct {
		logical int
		from    string
	}{{0, "parse-orders/1"}, {1, "parse-payments/0"}, {1, "an operator with spaces/12"}} {
		k := channelKey(tc.logical, tc.from)
		l, from, ok := parseChannelKey(k)
		if !ok || l != tc.logical || from != tc.from {
			t.Errorf("parseChannelKey(%q) = %d, %q, %v", k, l, from, ok)
		}
	}
	if k := channelKey(0, "parse-orders/1"); k != "0 parse-orders/1" {
		t.Errorf("channelKey = %q", k)
	}
	for _, k := range []string{"", "0", "0 ", " parse-orders/1", "-1 parse-orders/1", "01 parse-orders/1", "+1 a/0", "x a/0", "1\ta/0"} {
		if l, from, ok := parseChannelKey(k); ok {
			t.Errorf("parseChannelKey(%q) = %d, %q, true; want not ok", k, l, from)
		}
	}
}

func FuzzDecodeInFlightNeverPanics(f *testing.F) {
	good, _ := encodeInFlight(nil, inFlightSamples())
	f.Add(good)
	for _, rec := range inFlightSamples() {
		b, _ := encodeInFlight(nil, []Record{rec})
		f.Add(b)
	}
	f.Add([]byte{inFlightFormat, 1, tagTestPair | flagKey | flagBytes, 1, 'k', 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := decodeInFlight(b, testDecoder{})
		if err != nil {
			if !errors.Is(err, backend.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// What decodes encodes again, to the same records.
		again, err := encodeInFlight(nil, recs)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeInFlight(again, testDecoder{})
		if err != nil || !reflect.DeepEqual(back, recs) {
			t.Fatalf("decoded %+v, encoded and decoded again %+v, %v", recs, back, err)
		}
	})
}

func FuzzInFlightRoundTrip(f *testing.F) {
	f.Add(uint8(2), "o-1", []byte("raw"), true, "a", "b", "c", int64(1), int64(-2), int64(3), int64(4))
	f.Add(uint8(3), "", []byte(nil), false, "", "ü", "large", int64(math.MinInt64), int64(0), int64(math.MaxInt64), int64(-1))
	f.Fuzz(func(t *testing.T, kind uint8, key string, raw []byte, hasBytes bool, s1, s2, s3 string, a, b, c, d int64) {
		rec := Record{Key: key}
		if hasBytes {
			rec.Bytes = append([]byte{}, raw...)
		}
		v := testValue{ID: s1, Name: s2, N: a, T: b, W: c}
		switch kind % 4 {
		case 0:
			rec.Value = &EventTime{Time: a, Watermark: b}
		case 1:
			rec.Value = &EventTime{Time: a, Watermark: b, Origin: Origin{Topic: s3, Partition: int32(c), Offset: d}}
		case 2:
			rec.Value = &v
		case 3:
			rec.Value = &testPair{testValue: v, Extra: s3, M: d}
		}
		recs := []Record{rec, {Key: s3, Value: &EventTime{Time: d}}}
		enc, err := encodeInFlight(nil, recs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeInFlight(enc, testDecoder{})
		if err != nil || !reflect.DeepEqual(got, recs) {
			t.Fatalf("round trip of %+v: %+v, %v", recs, got, err)
		}
		if n := inFlightSize(&recs[0]) + inFlightSize(&recs[1]); n != len(enc)-2 {
			t.Fatalf("inFlightSize adds up to %d, encoded %d besides the header", n, len(enc)-2)
		}
	})
}

// badTag is a job's value that takes one of the engine's tags.
type badTag struct{ testValue }

func (*badTag) InFlightTag() byte { return tagEventTimeFrom }

// Without the job's decoder its values are not known: an error, no guess.
func TestDecodeInFlightNeedsTheJobsDecoder(t *testing.T) {
	b, err := encodeInFlight(nil, []Record{{Value: &testValue{ID: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeInFlight(b, nil); !errors.Is(err, backend.ErrCorrupt) || !strings.Contains(err.Error(), "unknown tag 0x2") {
		t.Fatalf("decoded without the job's decoder: %v", err)
	}
}

// Records without key, bytes or value are the format byte, the count and a
// zero tag each: internal/cli's test of checkpoints inspect builds channel
// state this way, as the format is the package's own.
func TestInFlightOfEmptyRecords(t *testing.T) {
	b, err := encodeInFlight(nil, make([]Record, 3))
	if err != nil || !bytes.Equal(b, []byte{0xC1, 3, 0, 0, 0}) {
		t.Fatalf("three empty records encode to %x, %v", b, err)
	}
	if in, from, n, err := InFlightChannel("1 parse-payments/0", b, testDecoder{}); in != 1 || from != "parse-payments/0" || n != 3 || err != nil {
		t.Fatalf("InFlightChannel = %d, %q, %d, %v", in, from, n, err)
	}
	if _, _, n, err := InFlightChannel("1 parse-payments/0", b[:4], testDecoder{}); n != 0 || !errors.Is(err, backend.ErrCorrupt) {
		t.Fatalf("InFlightChannel of truncated channel state = %d, %v", n, err)
	}
	if _, _, _, err := InFlightChannel("parse-payments/0", b, testDecoder{}); !errors.Is(err, backend.ErrCorrupt) || !strings.Contains(err.Error(), "parse-payments/0") {
		t.Fatalf("InFlightChannel of a bad key: %v", err)
	}
}
