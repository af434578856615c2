package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// addCheckpoint writes a blob for every task and adds the checkpoint.
func addCheckpoint(t *testing.T, s *MemoryStore, id int64, kind Kind, tasks ...TaskID) *Completed {
	t.Helper()
	ctx := context.Background()
	c := &Completed{ID: id, Kind: kind, TriggerTime: t0, CompletionTime: t0, Tasks: map[TaskID]SubtaskAck{}}
	for _, task := range tasks {
		h, err := s.PutState(ctx, id, task, fmt.Appendf(nil, "state of %s at %d", task, id))
		if err != nil {
			t.Fatalf("PutState: %v", err)
		}
		c.Tasks[task] = SubtaskAck{Handle: h, Bytes: h.Size}
	}
	if err := s.Add(ctx, c); err != nil {
		t.Fatalf("Add %d: %v", id, err)
	}
	return c
}

func ids(cs []*Completed) []int64 {
	var out []int64
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func TestMemoryStoreRetention(t *testing.T) {
	tests := []struct {
		name     string
		retained int
		add      []Kind // ids 1, 2, …
		want     []int64
	}{
		{"keeps the newest", 2, []Kind{KindCheckpoint, KindCheckpoint, KindCheckpoint, KindCheckpoint}, []int64{3, 4}},
		{"at least one", 0, []Kind{KindCheckpoint, KindCheckpoint}, []int64{2}},
		{"savepoints stay", 1, []Kind{KindCheckpoint, KindSavepoint, KindCheckpoint, KindCheckpoint}, []int64{2, 4}},
		{"fewer than retained", 5, []Kind{KindCheckpoint, KindSavepoint}, []int64{1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := NewMemoryStore(tc.retained)
			var added []*Completed
			for i, kind := range tc.add {
				added = append(added, addCheckpoint(t, s, int64(i+1), kind, src0, sink))
			}
			all, err := s.All(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(all); !slices.Equal(got, tc.want) {
				t.Errorf("All = %v, want %v", got, tc.want)
			}
			for _, c := range added {
				kept := slices.Contains(tc.want, c.ID)
				for task, a := range c.Tasks {
					_, err := s.GetState(ctx, a.Handle)
					switch {
					case kept && err != nil:
						t.Errorf("state of %s in retained %d: %v", task, c.ID, err)
					case !kept && !errors.Is(err, ErrNotFound):
						t.Errorf("state of %s in dropped %d: err = %v, want ErrNotFound", task, c.ID, err)
					}
				}
			}
			if got, want := s.MaxID(), int64(len(tc.add)); got != want {
				t.Errorf("MaxID = %d, want %d", got, want)
			}
		})
	}
}

func TestMemoryStoreKeepsSharedAndPendingState(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore(1)
	first := addCheckpoint(t, s, 1, KindCheckpoint, src0, sink)

	// Checkpoint 2 never completes; 4 is still pending when 3 completes.
	failed, _ := s.PutState(ctx, 2, sink, []byte("failed"))
	pending, _ := s.PutState(ctx, 4, sink, []byte("pending"))

	// Checkpoint 3 carries the state of the finished src/0 from checkpoint 1.
	h, _ := s.PutState(ctx, 3, sink, []byte("sink at 3"))
	carried := first.Tasks[src0]
	carried.Finished = true
	third := &Completed{ID: 3, Tasks: map[TaskID]SubtaskAck{src0: carried, sink: {Handle: h}}}
	if err := s.Add(ctx, third); err != nil {
		t.Fatal(err)
	}

	if _, err := s.GetState(ctx, carried.Handle); err != nil {
		t.Errorf("carried state of dropped checkpoint 1: %v", err)
	}
	if _, err := s.GetState(ctx, first.Tasks[sink].Handle); !errors.Is(err, ErrNotFound) {
		t.Errorf("state only checkpoint 1 used: err = %v, want ErrNotFound", err)
	}
	if _, err := s.GetState(ctx, failed); !errors.Is(err, ErrNotFound) {
		t.Errorf("state of failed checkpoint 2: err = %v, want ErrNotFound", err)
	}
	if got, err := s.GetState(ctx, pending); err != nil || string(got) != "pending" {
		t.Errorf("state of pending checkpoint 4 = %q, %v", got, err)
	}
}

func TestMemoryStoreChecksum(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore(1)
	data := []byte("counts: a=1 b=2")
	h, err := s.PutState(ctx, 1, sink, data)
	if err != nil {
		t.Fatal(err)
	}
	if h.Size != int64(len(data)) || h.Checksum != checksum(data) || h.Key == "" {
		t.Errorf("handle = %+v", h)
	}
	data[0] = 'X' // the store kept its own copy
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

func TestMemoryStoreLatestAllMaxID(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore(2)
	if c, err := s.Latest(ctx); c != nil || err != nil {
		t.Errorf("Latest of an empty store = %v, %v", c, err)
	}
	if all, err := s.All(ctx); len(all) != 0 || err != nil {
		t.Errorf("All of an empty store = %v, %v", all, err)
	}
	if got := s.MaxID(); got != 0 {
		t.Errorf("MaxID of an empty store = %d", got)
	}

	addCheckpoint(t, s, 1, KindCheckpoint, sink)
	addCheckpoint(t, s, 2, KindSavepoint, sink)
	if c, _ := s.Latest(ctx); c.ID != 2 || c.Kind != KindSavepoint {
		t.Errorf("Latest = %+v, want savepoint 2", c)
	}
	addCheckpoint(t, s, 3, KindCheckpoint, sink)
	addCheckpoint(t, s, 4, KindCheckpoint, sink)
	latest, _ := s.Latest(ctx)
	if latest.ID != 4 {
		t.Errorf("Latest = %d, want 4", latest.ID)
	}
	if all, _ := s.All(ctx); !slices.Equal(ids(all), []int64{2, 3, 4}) {
		t.Errorf("All = %v, want [2 3 4]", ids(all))
	}
	if got := s.MaxID(); got != 4 {
		t.Errorf("MaxID = %d, want 4", got)
	}

	// Callers get copies.
	delete(latest.Tasks, sink)
	if again, _ := s.Latest(ctx); len(again.Tasks) != 1 {
		t.Errorf("Latest returned the store's own Tasks map")
	}
	if err := s.Add(ctx, &Completed{ID: 4}); err == nil {
		t.Errorf("adding checkpoint 4 twice succeeded")
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Add(canceled, &Completed{ID: 5}); !errors.Is(err, context.Canceled) {
		t.Errorf("Add with a canceled context: err = %v", err)
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
