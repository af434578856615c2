package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
)

func TestMemoryStoreChecksum(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore(1)
	data := []byte("counts: a=1 b=2")
	h, err := s.PutState(ctx, 1, sink, data)
	if err != nil {
		t.Fatal(err)
	}
	if h.Size != int64(len(data)) || h.Checksum != Checksum(data) || h.Key == "" {
		t.Errorf("handle = %+v", h)
	}
	got, err := s.GetState(ctx, h)
	if err != nil || string(got) != "counts: a=1 b=2" {
		t.Fatalf("GetState = %q, %v", got, err)
	}
	got[0] = 'Y'
	if again, _ := s.GetState(ctx, h); again[0] != 'c' {
		t.Errorf("GetState returned the store's own slice")
	}

	if err := s.Corrupt(h.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetState(ctx, h); !errors.Is(err, ErrChecksum) {
		t.Errorf("corrupted blob: err = %v, want ErrChecksum", err)
	}
	if _, err := s.GetState(ctx, Handle{Key: "chk-9/none/0"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown key: err = %v, want ErrNotFound", err)
	}
	if err := s.Corrupt("chk-9/none/0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Corrupt unknown key: err = %v, want ErrNotFound", err)
	}
	empty, _ := s.PutState(ctx, 1, src0, nil)
	if err := s.Corrupt(empty.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetState(ctx, empty); !errors.Is(err, ErrChecksum) {
		t.Errorf("corrupted empty blob: err = %v, want ErrChecksum", err)
	}
}

func TestMemoryStoreConcurrentUse(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore(2)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			task := TaskID{"map", i}
			for id := int64(1); id <= 50; id++ {
				data := bytes.Repeat([]byte{byte(i)}, i+1)
				h, err := s.PutState(ctx, id, task, data)
				if err != nil {
					t.Error(err)
					return
				}
				if got, err := s.GetState(ctx, h); (err != nil && !errors.Is(err, ErrNotFound)) || (err == nil && !bytes.Equal(got, data)) {
					t.Errorf("GetState = %v, %v", got, err)
				}
				_, _ = s.Latest(ctx)
				_ = s.MaxID()
			}
		})
	}
	wg.Go(func() {
		for id := int64(1); id <= 50; id++ {
			if err := s.Add(ctx, &Completed{ID: id, Tasks: map[TaskID]SubtaskAck{}}); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	if got := s.MaxID(); got != 50 {
		t.Errorf("MaxID = %d, want 50", got)
	}
}

// A blob put in parts is the parts one after another, with the checksum
// of all of them; the store keeps the parts, and damage is still seen.
func TestMemoryStoreKeepsParts(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore(1)
	big := bytes.Repeat([]byte("x"), 1<<16)
	parts := [][]byte{[]byte("head:"), big, []byte(":tail")}
	h, err := s.PutStateParts(ctx, 1, sink, parts)
	if err != nil {
		t.Fatal(err)
	}
	whole := slices.Concat(parts...)
	if h.Size != int64(len(whole)) || h.Checksum != Checksum(whole) {
		t.Fatalf("handle %+v, want %d bytes with checksum %08x", h, len(whole), Checksum(whole))
	}
	s.mu.Lock()
	kept := s.blobs[h.Key].parts
	s.mu.Unlock()
	if len(kept) != 3 || &kept[1][0] != &big[0] {
		t.Fatalf("the store copied the parts")
	}
	got, err := s.GetState(ctx, h)
	if err != nil || !bytes.Equal(got, whole) {
		t.Fatalf("GetState: %d bytes, %v", len(got), err)
	}
	if err := s.Corrupt(h.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetState(ctx, h); !errors.Is(err, ErrChecksum) {
		t.Fatalf("corrupted parts: err = %v, want ErrChecksum", err)
	}
	if big[0] != 'x' {
		t.Fatalf("Corrupt changed the caller's part")
	}
}
