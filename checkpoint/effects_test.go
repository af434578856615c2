package checkpoint

import (
	"context"
	"slices"
	"testing"
	"time"
)

// heldStore is a Store whose Add waits, once it has begun, until the test
// lets it go on.
type heldStore struct {
	*MemoryStore
	adding  chan int64    // the id of each Add begun
	release chan struct{} // one value lets one Add go on
}

func newHeldStore() *heldStore {
	return &heldStore{MemoryStore: NewMemoryStore(3), adding: make(chan int64, 8), release: make(chan struct{}, 8)}
}

func (s *heldStore) Add(ctx context.Context, c *Completed) error {
	s.adding <- c.ID
	<-s.release
	return s.MemoryStore.Add(ctx, c)
}

// within fails the test unless done is closed soon: what it waits for
// must not wait for the store.
func within(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s waited for the store's write", what)
	}
}

// A checkpoint's metadata is written without the coordinator's lock: while
// the store syncs, the coordinator answers and takes acknowledgements, and
// nothing tells of the completion until the write has returned.
func TestCompletionWritesTheStoreOutsideTheLock(t *testing.T) {
	store := newHeldStore()
	h := newHarness(t, Config{MaxConcurrent: 2}, store)
	h.c.Start(1, job)
	first := h.trigger(KindCheckpoint)
	second := h.trigger(KindCheckpoint)
	acked := make(chan struct{})
	go func() {
		defer close(acked)
		h.ack(1, second, job...)
	}()
	if id := <-store.adding; id != second {
		t.Fatalf("store.Add(%d), want %d", id, second)
	}

	answered := make(chan struct{})
	go func() {
		defer close(answered)
		if st := h.c.Stats(); st.InProgress != 2 {
			t.Errorf("InProgress while checkpoint %d is written = %d, want 2", second, st.InProgress)
		}
		h.ack(1, first, src0) // an acknowledgement of another checkpoint
	}()
	within(t, answered, "Stats and an acknowledgement")
	if got := h.gw.of("complete"); len(got) != 0 {
		t.Errorf("NotifyComplete before the metadata was written: %v", got)
	}
	if got := h.eventsOf(EventCompleted); len(got) != 0 {
		t.Errorf("completion announced before the metadata was written: %v", got)
	}
	store.release <- struct{}{}
	within(t, acked, "the last acknowledgement")

	if got := h.gw.ids("complete"); !slices.Equal(got, []int64{second}) {
		t.Errorf("NotifyComplete = %v, want [%d]", got, second)
	}
	if got := h.gw.ids("abort"); !slices.Equal(got, []int64{first}) {
		t.Errorf("NotifyAborted = %v, want [%d], subsumed", got, first)
	}
	latest, err := store.Latest(context.Background())
	if err != nil || latest == nil || latest.ID != second {
		t.Errorf("Latest = %v, %v; want checkpoint %d", latest, err, second)
	}
}

// A checkpoint whose acknowledgements are all in when Stop comes is not
// aborted: its write completes it, and Stop returns after it.
func TestStopLetsACheckpointBeingWrittenComplete(t *testing.T) {
	store := newHeldStore()
	h := newHarness(t, Config{}, store)
	h.c.Start(1, job)
	id := h.trigger(KindCheckpoint)
	acked := make(chan struct{})
	go func() {
		defer close(acked)
		h.ack(1, id, job...)
	}()
	<-store.adding
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		h.c.Stop(ReasonJobFailover, nil)
	}()
	store.release <- struct{}{}
	within(t, acked, "the last acknowledgement")
	within(t, stopped, "Stop")
	if got := h.gw.log(); !slices.Equal(got, []string{"trigger(1,1)", "complete(1,1)"}) {
		t.Errorf("gateway calls = %v, want the trigger and the completion", got)
	}
	if got := h.c.Stats().Completed; got != 1 {
		t.Errorf("completed = %d, want 1", got)
	}
}

// A checkpoint whose last acknowledgement comes while a newer one is being
// written is subsumed: the store is written in the order of ids.
func TestOlderCheckpointAcknowledgedDuringAWriteIsSubsumed(t *testing.T) {
	store := newHeldStore()
	h := newHarness(t, Config{MaxConcurrent: 2}, store)
	h.c.Start(1, job)
	first := h.trigger(KindCheckpoint)
	second := h.trigger(KindCheckpoint)
	acked := make(chan struct{})
	go func() {
		defer close(acked)
		h.ack(1, second, job...)
	}()
	<-store.adding
	h.ack(1, first, job...) // queued behind the write under way
	store.release <- struct{}{}
	within(t, acked, "the last acknowledgement")

	select {
	case id := <-store.adding:
		t.Fatalf("store.Add(%d) after checkpoint %d", id, second)
	default:
	}
	failed := h.eventsOf(EventFailed)
	if len(failed) != 1 || failed[0].ID != first || failed[0].Reason != ReasonSubsumed {
		t.Errorf("failed = %+v, want checkpoint %d subsumed", failed, first)
	}
	if got := h.gw.ids("complete"); !slices.Equal(got, []int64{second}) {
		t.Errorf("NotifyComplete = %v, want [%d]", got, second)
	}
}
