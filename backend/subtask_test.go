package backend

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"sort"
	"testing"
)

// encodeBeforeChannels is SubtaskState.Encode as it was before channel
// state: the magic, the keyed state, the operator entries.
func encodeBeforeChannels(keyed []byte, operator map[string][]byte) []byte {
	b := []byte(subtaskMagic)
	b = binary.AppendUvarint(b, uint64(len(keyed)))
	b = append(b, keyed...)
	names := make([]string, 0, len(operator))
	for n := range operator {
		names = append(names, n)
	}
	sort.Strings(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, n := range names {
		b = binary.AppendUvarint(b, uint64(len(n)))
		b = append(b, n...)
		b = binary.AppendUvarint(b, uint64(len(operator[n])))
		b = append(b, operator[n]...)
	}
	return b
}

func TestSubtaskStateChannelsRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("c"), 2*sharedPart)
	tests := []struct {
		name string
		s    SubtaskState
	}{
		{"keyed and operator state", SubtaskState{Keyed: []byte("keyed"), Operator: map[string][]byte{"offsets": {1, 2}}}},
		{"nothing", SubtaskState{Operator: map[string][]byte{}}},
		{"channels", SubtaskState{Keyed: []byte("keyed"), Operator: map[string][]byte{"offsets": {1, 2}},
			Channels: map[string][]byte{"0 parse-orders/1": {0xc1, 1, 0}, "0 parse-orders/0": big, "1 parse-payments/0": {}}}},
		{"channels only", SubtaskState{Operator: map[string][]byte{}, Channels: map[string][]byte{"1 a/0": {9}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.s.Encode()
			got, err := DecodeSubtaskState(b)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Keyed, tc.s.Keyed) || !equalEntries(got.Operator, tc.s.Operator) || !equalEntries(got.Channels, tc.s.Channels) {
				t.Fatalf("round trip: got %+v, want %+v", got, tc.s)
			}
			if (got.Channels == nil) != (len(tc.s.Channels) == 0) {
				t.Errorf("Channels = %v, want nil exactly when there are none", got.Channels)
			}
			if !bytes.Equal(b, tc.s.Encode()) {
				t.Error("two encodings of one state differ")
			}
			if len(tc.s.Channels) == 0 && !bytes.Equal(b, encodeBeforeChannels(tc.s.Keyed, tc.s.Operator)) {
				t.Error("a state without channels is not encoded as before channel state")
			}
		})
	}
}

func equalEntries(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

// A blob written before channel state existed decodes, without channels.
func TestSubtaskStateDecodesBlobsFromBeforeChannels(t *testing.T) {
	keyed := bytes.Repeat([]byte("k"), 3*sharedPart)
	op := map[string][]byte{"offsets": []byte("0:12,1:7"), "redo/0": bytes.Repeat([]byte("r"), sharedPart), "empty": nil}
	got, err := DecodeSubtaskState(encodeBeforeChannels(keyed, op))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Keyed, keyed) || !equalEntries(got.Operator, op) || got.Channels != nil {
		t.Fatalf("decoded %d bytes keyed, operator %v, channels %v", len(got.Keyed), got.Operator, got.Channels)
	}
}

// Large channels are shared by Parts as large operator entries are.
func TestSubtaskStatePartsShareLargeChannels(t *testing.T) {
	ch := bytes.Repeat([]byte("c"), sharedPart)
	s := &SubtaskState{Operator: map[string][]byte{"offsets": {1}}, Channels: map[string][]byte{"0 a/0": ch, "0 a/1": {1, 2, 3}}}
	shared := false
	for _, p := range s.Parts() {
		shared = shared || len(p) > 0 && &p[0] == &ch[0]
	}
	if !shared {
		t.Fatal("the large channel was copied")
	}
	got, err := DecodeSubtaskState(bytes.Join(s.Parts(), nil))
	if err != nil || !equalEntries(got.Channels, s.Channels) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
}

func TestSubtaskStateChannelsRejectDamage(t *testing.T) {
	s := &SubtaskState{Keyed: []byte("keyed"), Operator: map[string][]byte{"offsets": {1, 2}},
		Channels: map[string][]byte{"0 parse-orders/0": {0xc1, 1, 0}, "1 parse-payments/1": bytes.Repeat([]byte{7}, 200)}}
	full := s.Encode()
	before := len(encodeBeforeChannels(s.Keyed, s.Operator))
	for n := before + 1; n < len(full); n++ {
		if _, err := DecodeSubtaskState(full[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut to %d of %d bytes, in the channel section: err = %v, want ErrCorrupt", n, len(full), err)
		}
	}
	// Cut right before the section, it is a state without channels (the
	// stores' checksums see the loss).
	if got, err := DecodeSubtaskState(full[:before]); err != nil || got.Channels != nil {
		t.Fatalf("cut before the channel section: %v, %v", got, err)
	}

	section := func(names ...string) []byte {
		b := append(encodeBeforeChannels(nil, nil), channelSection)
		b = binary.AppendUvarint(b, uint64(len(names)))
		for _, n := range names {
			b = binary.AppendUvarint(b, uint64(len(n)))
			b = append(b, n...)
			b = append(b, 1, 'x')
		}
		return b
	}
	if got, err := DecodeSubtaskState(section("0 a/0", "1 a/0")); err != nil || !reflect.DeepEqual(got.Channels, map[string][]byte{"0 a/0": []byte("x"), "1 a/0": []byte("x")}) {
		t.Fatalf("a well-formed section: %v, %v", got, err)
	}
	for name, b := range map[string][]byte{
		"empty section":      section(),
		"out of order":       section("1 a/0", "0 a/0"),
		"twice":              section("0 a/0", "0 a/0"),
		"another section":    append(encodeBeforeChannels(nil, nil), 'D', 0),
		"after the channels": append(section("0 a/0"), 0),
	} {
		if _, err := DecodeSubtaskState(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
	}
}

func FuzzDecodeSubtaskState(f *testing.F) {
	f.Add((&SubtaskState{Keyed: []byte("k"), Operator: map[string][]byte{"o": {1}}, Channels: map[string][]byte{"0 a/0": {2}}}).Encode())
	f.Add(encodeBeforeChannels([]byte("keyed"), map[string][]byte{"offsets": []byte("0:1")}))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSubtaskState(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := DecodeSubtaskState(s.Encode())
		if err != nil || !bytes.Equal(again.Keyed, s.Keyed) || !equalEntries(again.Operator, s.Operator) ||
			!equalEntries(again.Channels, s.Channels) || (again.Channels == nil) != (s.Channels == nil) {
			t.Fatalf("decoded %+v, encoded and decoded again %+v, %v", s, again, err)
		}
	})
}
