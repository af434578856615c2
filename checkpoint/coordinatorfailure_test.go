package checkpoint

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// failingStore is a Store whose Add fails while fail is set.
type failingStore struct {
	*MemoryStore
	mu   sync.Mutex
	fail bool
}

func (s *failingStore) setFail(fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = fail
}

func (s *failingStore) Add(ctx context.Context, c *Completed) error {
	s.mu.Lock()
	fail := s.fail
	s.mu.Unlock()
	if fail {
		return errors.New("disk full")
	}
	return s.MemoryStore.Add(ctx, c)
}

func TestTolerableFailures(t *testing.T) {
	// Each step triggers a checkpoint (two for "subsume") and ends it.
	tests := []struct {
		name      string
		tolerable int
		steps     []string
		wantFail  int // FailJob calls
		wantCount int // ConsecutiveFailures at the end
	}{
		{"first failure fails the job with 0 tolerated", 0, []string{"expire"}, 1, 0},
		{"within the threshold", 2, []string{"expire", "decline"}, 0, 2},
		{"exceeding the threshold", 2, []string{"expire", "decline", "storage"}, 1, 0},
		{"a completion resets the count", 2, []string{"expire", "decline", "complete", "expire", "decline"}, 0, 2},
		{"subsumed does not count", 0, []string{"subsume", "subsume"}, 0, 0},
		{"job failover does not count", 0, []string{"failover", "failover"}, 0, 0},
		{"a failed savepoint does not count", 0, []string{"savepoint-expire"}, 0, 0},
		{"a declined savepoint counts", 0, []string{"savepoint-decline"}, 1, 0},
		{"counting starts again after FailJob", 1, []string{"expire", "expire", "failover", "expire"}, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := &failingStore{MemoryStore: NewMemoryStore(3)}
			h := newHarness(t, Config{Timeout: time.Second, TolerableFailures: tc.tolerable}, store)
			attempt := int64(1)
			h.c.Start(attempt, job)
			for _, step := range tc.steps {
				switch step {
				case "expire":
					h.trigger(KindCheckpoint)
					h.clk.Advance(time.Second)
				case "savepoint-expire":
					h.trigger(KindSavepoint)
					h.clk.Advance(time.Second)
				case "decline":
					h.c.Decline(attempt, h.trigger(KindCheckpoint), src1, ReasonDeclined, errors.New("snapshot failed"))
				case "savepoint-decline":
					h.c.Decline(attempt, h.trigger(KindSavepoint), src1, ReasonDeclined, errors.New("snapshot failed"))
				case "storage":
					store.setFail(true)
					h.ack(attempt, h.trigger(KindCheckpoint), job...)
					store.setFail(false)
				case "complete":
					h.ack(attempt, h.trigger(KindCheckpoint), job...)
				case "subsume":
					older := h.trigger(KindCheckpoint)
					h.ack(attempt, h.trigger(KindCheckpoint), job...)
					h.ack(attempt, older, job...)
				case "failover":
					h.trigger(KindCheckpoint)
					h.c.Stop(ReasonJobFailover, errors.New("join/1 failed"))
					attempt++
					h.c.Start(attempt, job)
				default:
					t.Fatalf("unknown step %q", step)
				}
			}
			fails := h.gw.of("fail")
			if len(fails) != tc.wantFail {
				t.Fatalf("FailJob calls = %v, want %d", fails, tc.wantFail)
			}
			for _, f := range fails {
				if !errors.Is(f.err, ErrThresholdExceeded) {
					t.Errorf("FailJob error %v does not wrap ErrThresholdExceeded", f.err)
				}
				if f.attempt != 1 {
					t.Errorf("FailJob attempt = %d, want 1", f.attempt)
				}
			}
			if got := h.c.Stats().ConsecutiveFailures; got != tc.wantCount {
				t.Errorf("consecutive failures = %d, want %d", got, tc.wantCount)
			}
		})
	}
}

func TestFailJobErrorSaysWhy(t *testing.T) {
	h := newHarness(t, Config{Timeout: time.Second, TolerableFailures: 1}, nil)
	h.c.Start(7, job)
	h.trigger(KindCheckpoint)
	h.clk.Advance(time.Second)
	id := h.trigger(KindCheckpoint)
	h.c.Decline(7, id, sink, ReasonDeclined, errors.New("state too large"))
	fails := h.gw.of("fail")
	if len(fails) != 1 || fails[0].attempt != 7 {
		t.Fatalf("FailJob calls = %+v, want one for attempt 7", fails)
	}
	msg := fails[0].err.Error()
	for _, want := range []string{"exceeded checkpoint tolerable failure threshold", "2 consecutive", "1 tolerated", "declined", "sink/0", "state too large"} {
		if !strings.Contains(msg, want) {
			t.Errorf("FailJob error %q lacks %q", msg, want)
		}
	}
	// More failures in the same attempt do not fail the job again.
	for range 3 {
		h.trigger(KindCheckpoint)
		h.clk.Advance(time.Second)
	}
	if n := len(h.gw.of("fail")); n != 1 {
		t.Errorf("FailJob called %d times for one attempt, want 1", n)
	}
}

func TestDecline(t *testing.T) {
	h := newHarness(t, Config{TolerableFailures: 5}, nil)
	h.c.Start(1, job)
	id := h.trigger(KindCheckpoint)
	h.ack(1, id, src0)
	h.c.Decline(1, id, src1, ReasonDeclined, errors.New("snapshot failed: disk full"))
	h.ack(1, id, src1, sink)

	failed := h.eventsOf(EventFailed)
	if len(failed) != 1 {
		t.Fatalf("failed events = %+v, want 1", failed)
	}
	e := failed[0]
	if e.ID != id || e.Reason != ReasonDeclined || e.Task != src1 || !strings.Contains(e.Err.Error(), "disk full") {
		t.Errorf("failed event = %+v", e)
	}
	if got := h.gw.ids("abort"); !slices.Equal(got, []int64{id}) {
		t.Errorf("NotifyAborted = %v, want [%d]", got, id)
	}
	if got := h.gw.of("complete"); len(got) != 0 {
		t.Errorf("declined checkpoint completed: %v", got)
	}
	if s := h.c.Stats(); s.ConsecutiveFailures != 1 || s.Failed != 1 || s.History[0].Failure == "" {
		t.Errorf("stats = %+v", s)
	}
}

func TestStorageFailure(t *testing.T) {
	store := &failingStore{MemoryStore: NewMemoryStore(3), fail: true}
	h := newHarness(t, Config{TolerableFailures: 3}, store)
	h.c.Start(1, job)
	id := h.trigger(KindCheckpoint)
	h.ack(1, id, job...)

	failed := h.eventsOf(EventFailed)
	if len(failed) != 1 || failed[0].Reason != ReasonStorage || !strings.Contains(failed[0].Err.Error(), "disk full") {
		t.Fatalf("failed events = %+v, want one storage failure", failed)
	}
	if got := h.gw.ids("abort"); !slices.Equal(got, []int64{id}) {
		t.Errorf("NotifyAborted = %v", got)
	}
	if got := h.gw.of("complete"); len(got) != 0 {
		t.Errorf("NotifyComplete after a failed Add: %v", got)
	}
	if all, _ := store.All(context.Background()); len(all) != 0 {
		t.Errorf("store lists %d checkpoints", len(all))
	}
	if s := h.c.Stats(); s.ConsecutiveFailures != 1 || s.Completed != 0 || s.History[0].Status != StatusFailed {
		t.Errorf("stats = %+v", s)
	}
}
