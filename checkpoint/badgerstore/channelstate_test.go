package badgerstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/checkpoint"
)

// flipInMemory flips one byte in the middle of marker, a part the memory
// store keeps as it was given (it does not copy the parts of a blob).
func flipInMemory(marker []byte) { marker[len(marker)/2] ^= 0xff }

// The checksum of a state blob covers its channel state (the in-flight
// records of an unaligned checkpoint): a byte flipped there is ErrChecksum
// in both stores, as one in the keyed or operator state is.
func TestStoresDetectFlippedChannelState(t *testing.T) {
	for _, f := range storeFactories {
		t.Run(f.name, func(t *testing.T) {
			ctx := context.Background()
			var dir string
			var s checkpoint.Store
			if f.name == "badger" {
				dir = t.TempDir()
				s = openBadger(t, dir, 3)
			} else {
				s = f.open(t, 3)
			}
			marker := []byte(strings.Repeat(fmt.Sprintf("IN-FLIGHT-%016x;", rand.Uint64()), 300))
			state := &backend.SubtaskState{Keyed: []byte("keyed state"), Operator: map[string][]byte{"offsets": []byte("0:12")},
				Channels: map[string][]byte{"0 parse-orders/0": marker, "1 parse-payments/1": []byte("small")}}
			h, err := s.(checkpoint.PartsStorage).PutStateParts(ctx, 1, sink, state.Parts())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Add(ctx, &checkpoint.Completed{ID: 1, TriggerTime: t0, CompletionTime: t0, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{sink: {Handle: h, Unaligned: true}}}); err != nil {
				t.Fatal(err)
			}
			b, err := s.GetState(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := backend.DecodeSubtaskState(b); err != nil || !bytes.Equal(got.Channels["0 parse-orders/0"], marker) {
				t.Fatalf("channel state read back: %v", err)
			}

			if bs, ok := s.(*Store); ok {
				closeStore(t, bs)
				if n := flipOnDisk(t, dir, marker); n == 0 {
					t.Fatal("channel state not found on disk")
				}
				s = openBadger(t, dir, 3)
			} else {
				flipInMemory(marker)
			}
			if _, err := s.GetState(ctx, h); !errors.Is(err, checkpoint.ErrChecksum) {
				t.Errorf("GetState of the blob with a flipped channel state byte: err = %v, want ErrChecksum", err)
			}
			if bs, ok := s.(*Store); ok {
				if err := bs.Verify(ctx, 1); !errors.Is(err, checkpoint.ErrChecksum) {
					t.Errorf("Verify = %v, want ErrChecksum", err)
				}
			}
		})
	}
}
