package badgerstore

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/checkpoint"
)

// bigBlob is size bytes that differ from piece to piece.
func bigBlob(size int) []byte {
	b := make([]byte, size)
	r := rand.New(rand.NewPCG(uint64(size), 7))
	for i := 0; i < size; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < size; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// A state blob larger than a value log file is stored in pieces and read
// back whole; its pieces go with it.
func TestBadgerStoreBlobInPieces(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBadger(t, dir, 1)
	const size = 40<<20 + 12345 // more than a value log file: 6 pieces
	blob := bigBlob(size)
	h, err := s.PutState(ctx, 1, sink, blob)
	if err != nil {
		t.Fatalf("PutState of %d bytes: %v", size, err)
	}
	if h.Size != size || h.Checksum != checkpoint.Checksum(blob) {
		t.Errorf("handle %+v", h)
	}
	if err := s.Add(ctx, &checkpoint.Completed{ID: 1, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{sink: {Handle: h}}}); err != nil {
		t.Fatal(err)
	}
	if n := countBlobs(t, s); n != 1+6 {
		t.Errorf("%d keys under state/, want the index and 6 pieces", n)
	}
	closeStore(t, s)

	s = openBadger(t, dir, 1)
	got, err := s.GetState(ctx, h)
	if err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("GetState after reopen: %d bytes, %v", len(got), err)
	}
	if err := s.Verify(ctx, 1); err != nil {
		t.Errorf("Verify: %v", err)
	}
	// The same blob handed over in parts makes the same handle.
	parts := [][]byte{blob[:3<<20], blob[3<<20 : 23<<20], blob[23<<20 : 23<<20+1], blob[23<<20+1:]}
	h2, err := s.PutStateParts(ctx, 2, sink, parts)
	if err != nil {
		t.Fatal(err)
	}
	if h2.Size != h.Size || h2.Checksum != h.Checksum {
		t.Errorf("PutStateParts handle %+v, PutState's %+v", h2, h)
	}
	if got, err := s.GetState(ctx, h2); err != nil || !bytes.Equal(got, blob) {
		t.Errorf("GetState of the blob put in parts: %d bytes, %v", len(got), err)
	}
	// Checkpoint 2 replaces 1: its blob and pieces go.
	if err := s.Add(ctx, &checkpoint.Completed{ID: 2, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{sink: {Handle: h2}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetState(ctx, h); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("GetState of the dropped blob: %v, want ErrNotFound", err)
	}
	if n := countBlobs(t, s); n != 1+6 {
		t.Errorf("%d keys under state/ after retention, want 7", n)
	}
	// A pending blob in pieces whose checkpoint never completes is an
	// orphan at the next open, pieces and all.
	if _, err := s.PutState(ctx, 3, sink, blob[:9<<20]); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	s = openBadger(t, dir, 1)
	if n := countBlobs(t, s); n != 1+6 {
		t.Errorf("%d keys under state/ after reopen, want 7", n)
	}
	// A lost piece, and a damaged one, are damage.
	dropKey(t, s, pieceKey(h2.Key, 2))
	if _, err := s.GetState(ctx, h2); !errors.Is(err, checkpoint.ErrChecksum) || !strings.Contains(err.Error(), "piece 2 of 6 is missing") {
		t.Errorf("GetState with a piece missing: %v, want ErrChecksum", err)
	}
	h4, err := s.PutState(ctx, 4, sink, blob[:17<<20])
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Corrupt(h4.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetState(ctx, h4); !errors.Is(err, checkpoint.ErrChecksum) {
		t.Errorf("GetState of a corrupted blob in pieces: %v, want ErrChecksum", err)
	}
}

func TestBadgerStoreStateSizeLimit(t *testing.T) {
	s := openBadger(t, t.TempDir(), 1)
	piece := make([]byte, pieceSize)
	parts := slices.Repeat([][]byte{piece}, MaxStateSize/pieceSize+1)
	_, err := s.PutStateParts(context.Background(), 1, sink, parts)
	if err == nil || !strings.Contains(err.Error(), "more than the store's limit") {
		t.Errorf("PutStateParts of more than MaxStateSize: %v", err)
	}
	if n := countBlobs(t, s); n != 0 {
		t.Errorf("%d keys written for a blob over the limit", n)
	}
}

func TestSplitParts(t *testing.T) {
	tests := []struct {
		name  string
		parts []int // sizes
	}{
		{"one part, whole pieces", []int{30}},
		{"one part, a short last piece", []int{27}},
		{"parts across pieces", []int{4, 4, 4, 13, 1}},
		{"empty parts", []int{0, 12, 0, 0, 3, 0}},
		{"nothing", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var parts [][]byte
			var want []byte
			for i, n := range tc.parts {
				p := bytes.Repeat([]byte{byte('a' + i)}, n)
				parts = append(parts, p)
				want = append(want, p...)
			}
			var got []byte
			var buf []byte
			var sizes []int
			for piece := range splitParts(parts, 10, &buf) {
				got = append(got, piece...)
				sizes = append(sizes, len(piece))
			}
			if !bytes.Equal(got, want) {
				t.Errorf("pieces make %q, want %q", got, want)
			}
			for i, n := range sizes {
				if n == 0 || n > 10 || (i < len(sizes)-1 && n != 10) {
					t.Errorf("piece sizes %v, want 10 each but the last", sizes)
				}
			}
		})
	}
}

func TestPieceOf(t *testing.T) {
	for name, want := range map[string]string{
		"chk-3/sink/0":       "chk-3/sink/0",
		"chk-3/sink/0#0000":  "chk-3/sink/0",
		"chk-3/sink/12#0107": "chk-3/sink/12",
		"chk-3/a#0001/0":     "chk-3/a#0001/0",
		"chk-3/sink/0#00x1":  "chk-3/sink/0#00x1",
		"chk-3/sink/0#00001": "chk-3/sink/0#00001",
	} {
		if got := pieceOf(name); got != want {
			t.Errorf("pieceOf(%q) = %q, want %q", name, got, want)
		}
	}
}
