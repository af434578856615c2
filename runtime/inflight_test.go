package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"faultline/backend"
)

// inFlightSamples are records of every kind the built-in operators send
// between subtasks, with and without keys and raw bytes.
func inFlightSamples() []Record {
	return []Record{
		{},
		{Bytes: []byte(`{"order_id":"o-1","customer":"c-7","amount_cents":1250}`), Value: &EventTime{Time: 1764660000123, Watermark: 1764659999000}},
		{Bytes: []byte(`{"order_id":"o-2"}`)},  // a generated record: no event time
		{Bytes: []byte{}, Value: &EventTime{}}, // empty, not nil
		{Bytes: []byte(`{"order_id":"o-2"}`), Value: &EventTime{Time: 1, Watermark: 0, Origin: Origin{Topic: "shop.orders", Partition: 3, Offset: 1 << 40}}},
		{Bytes: []byte(`x`), Value: &EventTime{Time: 2, Origin: Origin{Topic: "payments", Partition: 0, Offset: 0}}},
		{Key: "o-1", Value: &Order{OrderID: "o-1", Customer: "c-7", AmountCents: 1250, EventTime: 1764660000123, Watermark: 1764659999000}},
		{Key: "o-1", Value: &Payment{OrderID: "o-1", PaymentID: "p-1", AmountCents: 1250, EventTime: 1764660000200, Watermark: -1}},
		{Key: "c-7", Value: &PaidOrder{OrderID: "o-1", Customer: "c-7", AmountCents: 1250}},
		{Value: &Revenue{PaidOrder: PaidOrder{OrderID: "o-1", Customer: "c-7", AmountCents: 1250}, CustomerTotalCents: math.MaxInt64}},
		{Key: "ö-ü/\x00 ", Value: &Enriched{Order: Order{OrderID: "o-9", Customer: "Zoë", AmountCents: math.MinInt64, EventTime: 1, Watermark: 2}, Tier: "large"}},
		{Value: &Order{}},
		{Key: strings.Repeat("k", 300), Bytes: bytes.Repeat([]byte{0xff}, 70000), Value: &Payment{}},
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
	got, err := decodeInFlight(b[len(prefix):])
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
	if got, err := decodeInFlight(empty); err != nil || len(got) != 0 {
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
	for _, v := range []any{&EventTime{}, &Order{}, &Payment{}, &PaidOrder{}, &Revenue{}, &Enriched{}} {
		n := 0
		fillFields(t, reflect.ValueOf(v).Elem(), &n)
		recs := []Record{{Key: "k", Bytes: []byte("b"), Value: v}}
		b, err := encodeInFlight(nil, recs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeInFlight(b)
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
		{Order{OrderID: "o-1"}, "runtime.Order"},
		{&marker{id: 3}, "*runtime.marker"},
		{(*Payment)(nil), "nil *runtime.Payment"},
		{[]byte("x"), "[]uint8"},
	} {
		dst := []byte("kept")
		got, err := encodeInFlight(dst, []Record{{Value: &Order{}}, {Value: tc.v}})
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
		"unknown tag":      {inFlightFormat, 1, tagCount},
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
		got, err := decodeInFlight(b)
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
	f.Add([]byte{inFlightFormat, 1, tagRevenue | flagKey | flagBytes, 1, 'k', 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := decodeInFlight(b)
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
		back, err := decodeInFlight(again)
		if err != nil || !reflect.DeepEqual(back, recs) {
			t.Fatalf("decoded %+v, encoded and decoded again %+v, %v", recs, back, err)
		}
	})
}

func FuzzInFlightRoundTrip(f *testing.F) {
	f.Add(uint8(2), "o-1", []byte("raw"), true, "a", "b", "c", int64(1), int64(-2), int64(3), int64(4))
	f.Add(uint8(6), "", []byte(nil), false, "", "ü", "large", int64(math.MinInt64), int64(0), int64(math.MaxInt64), int64(-1))
	f.Fuzz(func(t *testing.T, kind uint8, key string, raw []byte, hasBytes bool, s1, s2, s3 string, a, b, c, d int64) {
		rec := Record{Key: key}
		if hasBytes {
			rec.Bytes = append([]byte{}, raw...)
		}
		o := Order{OrderID: s1, Customer: s2, AmountCents: a, EventTime: b, Watermark: c}
		switch kind % tagCount {
		case tagEventTime:
			rec.Value = &EventTime{Time: a, Watermark: b}
		case tagOrder:
			rec.Value = &o
		case tagPayment:
			rec.Value = &Payment{OrderID: s1, PaymentID: s2, AmountCents: a, EventTime: b, Watermark: c}
		case tagPaidOrder:
			rec.Value = &PaidOrder{OrderID: s1, Customer: s2, AmountCents: a}
		case tagRevenue:
			rec.Value = &Revenue{PaidOrder: PaidOrder{OrderID: s1, Customer: s2, AmountCents: a}, CustomerTotalCents: d}
		case tagEnriched:
			rec.Value = &Enriched{Order: o, Tier: s3}
		}
		recs := []Record{rec, {Key: s3, Value: &EventTime{Time: d}}}
		enc, err := encodeInFlight(nil, recs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeInFlight(enc)
		if err != nil || !reflect.DeepEqual(got, recs) {
			t.Fatalf("round trip of %+v: %+v, %v", recs, got, err)
		}
		if n := inFlightSize(&recs[0]) + inFlightSize(&recs[1]); n != len(enc)-2 {
			t.Fatalf("inFlightSize adds up to %d, encoded %d besides the header", n, len(enc)-2)
		}
	})
}

// Records without key, bytes or value are the format byte, the count and a
// zero tag each: internal/cli's test of checkpoints inspect builds channel
// state this way, as the format is the package's own.
func TestInFlightOfEmptyRecords(t *testing.T) {
	b, err := encodeInFlight(nil, make([]Record, 3))
	if err != nil || !bytes.Equal(b, []byte{0xC1, 3, 0, 0, 0}) {
		t.Fatalf("three empty records encode to %x, %v", b, err)
	}
	if in, from, n, err := InFlightChannel("1 parse-payments/0", b); in != 1 || from != "parse-payments/0" || n != 3 || err != nil {
		t.Fatalf("InFlightChannel = %d, %q, %d, %v", in, from, n, err)
	}
	if _, _, n, err := InFlightChannel("1 parse-payments/0", b[:4]); n != 0 || !errors.Is(err, backend.ErrCorrupt) {
		t.Fatalf("InFlightChannel of truncated channel state = %d, %v", n, err)
	}
	if _, _, _, err := InFlightChannel("parse-payments/0", b); !errors.Is(err, backend.ErrCorrupt) || !strings.Contains(err.Error(), "parse-payments/0") {
		t.Fatalf("InFlightChannel of a bad key: %v", err)
	}
}
