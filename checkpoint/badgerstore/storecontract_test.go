package badgerstore

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/faultline-dev/faultline/checkpoint"
)

// storeFactories are the Store implementations the contract tests run on.
var storeFactories = []struct {
	name string
	open func(t *testing.T, retained int) checkpoint.Store
}{
	{"memory", func(t *testing.T, retained int) checkpoint.Store { return checkpoint.NewMemoryStore(retained) }},
	{"badger", func(t *testing.T, retained int) checkpoint.Store { return openBadger(t, t.TempDir(), retained) }},
}

func TestStoreContractRetention(t *testing.T) {
	tests := []struct {
		name     string
		retained int
		add      []checkpoint.Kind // ids 1, 2, …
		want     []int64
	}{
		{"keeps the newest", 2, []checkpoint.Kind{checkpoint.KindCheckpoint, checkpoint.KindCheckpoint, checkpoint.KindCheckpoint, checkpoint.KindCheckpoint}, []int64{3, 4}},
		{"at least one", 0, []checkpoint.Kind{checkpoint.KindCheckpoint, checkpoint.KindCheckpoint}, []int64{2}},
		{"savepoints stay", 1, []checkpoint.Kind{checkpoint.KindCheckpoint, checkpoint.KindSavepoint, checkpoint.KindCheckpoint, checkpoint.KindCheckpoint}, []int64{2, 4}},
		{"fewer than retained", 5, []checkpoint.Kind{checkpoint.KindCheckpoint, checkpoint.KindSavepoint}, []int64{1, 2}},
	}
	for _, f := range storeFactories {
		for _, tc := range tests {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				s := f.open(t, tc.retained)
				var added []*checkpoint.Completed
				for i, kind := range tc.add {
					// Blobs above and below Badger's value threshold.
					added = append(added, putAndAdd(t, s, int64(i+1), kind, 100+i*1000, src0, sink))
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
						case !kept && !errors.Is(err, checkpoint.ErrNotFound):
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
}

func TestStoreContractSharedAndPendingState(t *testing.T) {
	for _, f := range storeFactories {
		t.Run(f.name, func(t *testing.T) {
			ctx := context.Background()
			s := f.open(t, 1)
			first := putAndAdd(t, s, 1, checkpoint.KindCheckpoint, 2000, src0, sink)

			// Checkpoint 2 never completes; 4 is still pending when 3 completes.
			failed, _ := s.PutState(ctx, 2, sink, []byte("failed"))
			pending, _ := s.PutState(ctx, 4, sink, []byte("pending"))

			// Checkpoint 3 carries the state of the finished src/0 from checkpoint 1.
			h, _ := s.PutState(ctx, 3, sink, []byte("sink at 3"))
			carried := first.Tasks[src0]
			carried.Finished = true
			third := &checkpoint.Completed{ID: 3, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{src0: carried, sink: {Handle: h}}}
			if err := s.Add(ctx, third); err != nil {
				t.Fatal(err)
			}

			if _, err := s.GetState(ctx, carried.Handle); err != nil {
				t.Errorf("carried state of dropped checkpoint 1: %v", err)
			}
			if _, err := s.GetState(ctx, first.Tasks[sink].Handle); !errors.Is(err, checkpoint.ErrNotFound) {
				t.Errorf("state only checkpoint 1 used: err = %v, want ErrNotFound", err)
			}
			if _, err := s.GetState(ctx, failed); !errors.Is(err, checkpoint.ErrNotFound) {
				t.Errorf("state of failed checkpoint 2: err = %v, want ErrNotFound", err)
			}
			if got, err := s.GetState(ctx, pending); err != nil || string(got) != "pending" {
				t.Errorf("state of pending checkpoint 4 = %q, %v", got, err)
			}
		})
	}
}

func TestStoreContractLatestAllMaxID(t *testing.T) {
	for _, f := range storeFactories {
		t.Run(f.name, func(t *testing.T) {
			ctx := context.Background()
			s := f.open(t, 2)
			if c, err := s.Latest(ctx); c != nil || err != nil {
				t.Errorf("Latest of an empty store = %v, %v", c, err)
			}
			if all, err := s.All(ctx); len(all) != 0 || err != nil {
				t.Errorf("All of an empty store = %v, %v", all, err)
			}
			if got := s.MaxID(); got != 0 {
				t.Errorf("MaxID of an empty store = %d", got)
			}
			putAndAdd(t, s, 1, checkpoint.KindCheckpoint, 10, sink)
			putAndAdd(t, s, 2, checkpoint.KindSavepoint, 10, sink)
			if c, _ := s.Latest(ctx); c.ID != 2 || c.Kind != checkpoint.KindSavepoint {
				t.Errorf("Latest = %+v, want savepoint 2", c)
			}
			putAndAdd(t, s, 3, checkpoint.KindCheckpoint, 10, sink)
			putAndAdd(t, s, 4, checkpoint.KindCheckpoint, 10, sink)
			latest, _ := s.Latest(ctx)
			if latest.ID != 4 {
				t.Errorf("Latest = %d, want 4", latest.ID)
			}
			if all, _ := s.All(ctx); !slices.Equal(ids(all), []int64{2, 3, 4}) {
				t.Errorf("All = %v, want [2 3 4]", ids(all))
			}
			delete(latest.Tasks, sink)
			if again, _ := s.Latest(ctx); len(again.Tasks) != 1 {
				t.Errorf("Latest returned the store's own Tasks map")
			}
			if err := s.Add(ctx, &checkpoint.Completed{ID: 4}); err == nil {
				t.Errorf("adding checkpoint 4 twice succeeded")
			}
			canceled, cancel := context.WithCancel(ctx)
			cancel()
			if err := s.Add(canceled, &checkpoint.Completed{ID: 5}); !errors.Is(err, context.Canceled) {
				t.Errorf("Add with a canceled context: err = %v", err)
			}
			if _, err := s.GetState(ctx, checkpoint.Handle{Key: "chk-9/none/0"}); !errors.Is(err, checkpoint.ErrNotFound) {
				t.Errorf("unknown key: err = %v, want ErrNotFound", err)
			}
		})
	}
}

// An incremental snapshot's chain keeps the blobs it builds on alive after
// the checkpoints that wrote them were dropped by retention, and Verify
// checks them.
func TestStoreContractKeepsIncrementalChains(t *testing.T) {
	for _, f := range storeFactories {
		t.Run(f.name, func(t *testing.T) {
			ctx := context.Background()
			s := f.open(t, 1)
			base := putAndAdd(t, s, 1, checkpoint.KindCheckpoint, 2000, src0)
			// Checkpoint 2 builds on 1's blob; checkpoint 1 is dropped.
			h2, err := s.PutState(ctx, 2, src0, blobOf(src0, 2, 2000))
			if err != nil {
				t.Fatal(err)
			}
			chain := []checkpoint.Handle{base.Tasks[src0].Handle}
			c2 := &checkpoint.Completed{ID: 2, TriggerTime: t0, CompletionTime: t0, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{src0: {Handle: h2, Chain: chain}}}
			if err := s.Add(ctx, c2); err != nil {
				t.Fatal(err)
			}
			if got := ids(mustAll(t, s)); !slices.Equal(got, []int64{2}) {
				t.Fatalf("All = %v, want [2]", got)
			}
			if _, err := s.GetState(ctx, chain[0]); err != nil {
				t.Fatalf("the chain's base was deleted with its checkpoint: %v", err)
			}
			if v, ok := s.(interface {
				Verify(context.Context, int64) error
			}); ok {
				if err := v.Verify(ctx, 2); err != nil {
					t.Fatalf("Verify: %v", err)
				}
			}
			// A full checkpoint after it frees the base.
			putAndAdd(t, s, 3, checkpoint.KindCheckpoint, 2000, src0)
			if _, err := s.GetState(ctx, chain[0]); !errors.Is(err, checkpoint.ErrNotFound) {
				t.Fatalf("the base outlived every checkpoint that needs it: %v", err)
			}
		})
	}
}

func mustAll(t *testing.T, s checkpoint.Store) []*checkpoint.Completed {
	t.Helper()
	all, err := s.All(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return all
}
