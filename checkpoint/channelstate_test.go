package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"faultline/backend"
)

// flipInMemory flips one byte in the middle of marker in the parts the
// memory store keeps for key.
func flipInMemory(t *testing.T, s *MemoryStore, key string, marker []byte) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.blobs[key].parts {
		if i := bytes.Index(p, marker); i >= 0 {
			p[i+len(marker)/2] ^= 0xff
			return
		}
	}
	t.Fatal("marker not found in the stored parts")
}

// The checksum of a state blob covers its channel state (the in-flight
// records of an unaligned checkpoint): a byte flipped there is ErrChecksum
// in both stores, as one in the keyed or operator state is.
func TestStoresDetectFlippedChannelState(t *testing.T) {
	for _, f := range storeFactories {
		t.Run(f.name, func(t *testing.T) {
			ctx := context.Background()
			var dir string
			var s Store
			if f.name == "badger" {
				dir = t.TempDir()
				s = openBadger(t, dir, 3)
			} else {
				s = f.open(t, 3)
			}
			marker := []byte(strings.Repeat(fmt.Sprintf("IN-FLIGHT-%016x;", rand.Uint64()), 300))
			state := &backend.SubtaskState{Keyed: []byte("keyed state"), Operator: map[string][]byte{"offsets": []byte("0:12")},
				Channels: map[string][]byte{"0 parse-orders/0": marker, "1 parse-payments/1": []byte("small")}}
			h, err := s.(PartsStorage).PutStateParts(ctx, 1, sink, state.Parts())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Add(ctx, &Completed{ID: 1, TriggerTime: t0, CompletionTime: t0, Tasks: map[TaskID]SubtaskAck{sink: {Handle: h, Unaligned: true}}}); err != nil {
				t.Fatal(err)
			}
			b, err := s.GetState(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := backend.DecodeSubtaskState(b); err != nil || !bytes.Equal(got.Channels["0 parse-orders/0"], marker) {
				t.Fatalf("channel state read back: %v", err)
			}

			if bs, ok := s.(*BadgerStore); ok {
				closeStore(t, bs)
				if n := flipOnDisk(t, dir, marker); n == 0 {
					t.Fatal("channel state not found on disk")
				}
				s = openBadger(t, dir, 3)
			} else {
				flipInMemory(t, s.(*MemoryStore), h.Key, marker)
			}
			if _, err := s.GetState(ctx, h); !errors.Is(err, ErrChecksum) {
				t.Errorf("GetState of the blob with a flipped channel state byte: err = %v, want ErrChecksum", err)
			}
			if bs, ok := s.(*BadgerStore); ok {
				if err := bs.Verify(ctx, 1); !errors.Is(err, ErrChecksum) {
					t.Errorf("Verify = %v, want ErrChecksum", err)
				}
			}
		})
	}
}
