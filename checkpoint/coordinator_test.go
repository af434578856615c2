package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/clock"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

var (
	src0 = TaskID{"src", 0}
	src1 = TaskID{"src", 1}
	sink = TaskID{"sink", 0}
	job  = []TaskID{src0, src1, sink}
)

// call is one recorded Gateway call.
type call struct {
	op          string // "trigger", "complete", "abort", "fail"
	attempt, id int64
	kind        Kind
	at          time.Time
	err         error
}

func (c call) String() string { return fmt.Sprintf("%s(%d,%d)", c.op, c.attempt, c.id) }

// fakeGateway records every call the coordinator makes.
type fakeGateway struct {
	mu    sync.Mutex
	calls []call
}

func (g *fakeGateway) add(c call) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, c)
}

func (g *fakeGateway) TriggerSources(attempt, id int64, kind Kind, mode string, at time.Time) {
	g.add(call{op: "trigger", attempt: attempt, id: id, kind: kind, at: at})
}
func (g *fakeGateway) NotifyComplete(attempt, id int64) {
	g.add(call{op: "complete", attempt: attempt, id: id})
}
func (g *fakeGateway) NotifyAborted(attempt, id int64) {
	g.add(call{op: "abort", attempt: attempt, id: id})
}
func (g *fakeGateway) FailJob(attempt int64, err error) {
	g.add(call{op: "fail", attempt: attempt, err: err})
}

// of returns the recorded calls of one kind.
func (g *fakeGateway) of(op string) []call {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []call
	for _, c := range g.calls {
		if c.op == op {
			out = append(out, c)
		}
	}
	return out
}

func (g *fakeGateway) ids(op string) []int64 {
	var ids []int64
	for _, c := range g.of(op) {
		ids = append(ids, c.id)
	}
	return ids
}

func (g *fakeGateway) log() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, c := range g.calls {
		out = append(out, c.String())
	}
	return out
}

// harness is a coordinator on a fake clock with a recording gateway.
type harness struct {
	t      *testing.T
	clk    *clock.Fake
	gw     *fakeGateway
	store  Store
	c      *Coordinator
	mu     sync.Mutex
	events []Event
}

func newHarness(t *testing.T, cfg Config, store Store) *harness {
	t.Helper()
	if store == nil {
		store = NewMemoryStore(3)
	}
	h := &harness{t: t, clk: clock.NewFake(t0), gw: &fakeGateway{}, store: store}
	h.c = NewCoordinator(cfg, store, h.clk, h.gw, func(e Event) {
		h.c.Stats() // would deadlock if the coordinator's lock were held
		h.mu.Lock()
		defer h.mu.Unlock()
		h.events = append(h.events, e)
	})
	return h
}

func (h *harness) eventsOf(typ EventType) []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Event
	for _, e := range h.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (h *harness) trigger(kind Kind) int64 {
	h.t.Helper()
	id, err := h.c.Trigger(kind)
	if err != nil {
		h.t.Fatalf("Trigger: %v", err)
	}
	return id
}

func (h *harness) ack(attempt, id int64, tasks ...TaskID) {
	for _, task := range tasks {
		h.c.Acknowledge(attempt, id, task, ackOf(task, id))
	}
}

func ackOf(task TaskID, id int64) SubtaskAck {
	a := SubtaskAck{
		Handle:           Handle{Key: StateKey(id, task)},
		Bytes:            100,
		IncrementalBytes: 10,
		Alignment:        time.Duration(task.Index+1) * time.Millisecond,
	}
	if task.Operator == "src" {
		a.Offsets = Offsets{"orders": {int32(task.Index): 10 * id}}
	}
	return a
}

func TestIDsStrictlyIncrease(t *testing.T) {
	store := NewMemoryStore(2)
	h := newHarness(t, Config{Interval: time.Second}, store)
	var ids []int64
	h.c.Start(1, job)
	ids = append(ids, h.trigger(KindCheckpoint))
	h.ack(1, ids[0], job...)
	ids = append(ids, h.trigger(KindCheckpoint)) // left pending
	h.c.Stop(ReasonJobFailover, nil)
	h.c.Start(2, job)
	h.clk.Advance(time.Second)
	ids = append(ids, h.gw.of("trigger")[2].id)
	ids = append(ids, h.trigger(KindSavepoint))
	h.ack(2, ids[3], job...)

	// A new coordinator on the same store, as after a process restart.
	h2 := newHarness(t, Config{}, store)
	if got := h2.c.NextID(); got != ids[3]+1 {
		t.Errorf("new coordinator NextID = %d, want %d", got, ids[3]+1)
	}
	h2.c.Start(1, job)
	ids = append(ids, h2.trigger(KindCheckpoint))

	if want := []int64{1, 2, 3, 4, 5}; !slices.Equal(ids, want) {
		t.Errorf("ids = %v, want %v", ids, want)
	}
}

func TestStopIgnoresOldAttempt(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	h.c.Start(1, job)
	old := h.trigger(KindCheckpoint)
	h.ack(1, old, src0, src1)
	h.c.Stop(ReasonJobFailover, errors.New("join/1 failed"))

	failed := h.eventsOf(EventFailed)
	if len(failed) != 1 || failed[0].Reason != ReasonJobFailover || !strings.Contains(failed[0].Err.Error(), "join/1 failed") {
		t.Fatalf("failed events = %+v, want one job failover", failed)
	}
	if got := h.gw.of("abort"); len(got) != 1 || got[0].attempt != 1 || got[0].id != old {
		t.Errorf("NotifyAborted = %v, want abort(1,%d)", got, old)
	}

	h.ack(1, old, sink) // the old attempt's last ack arrives late
	h.c.Start(2, job)
	id := h.trigger(KindCheckpoint)
	h.ack(1, id, job...) // acks from attempt 1 for the new id
	h.c.Decline(1, id, sink, ReasonDeclined, errors.New("old"))
	h.c.TaskFinished(1, sink)
	if got := h.gw.of("complete"); len(got) != 0 {
		t.Fatalf("completed by old-attempt acks: %v", got)
	}
	s := h.c.Stats()
	if s.InProgress != 1 || s.Failed != 1 || s.History[0].Acked != 0 || s.History[0].Total != 3 {
		t.Fatalf("stats = %+v, want the new checkpoint pending with no acks", s)
	}
	h.ack(2, id, job...)
	if got, want := h.gw.of("complete"), []call{{op: "complete", attempt: 2, id: id}}; !slices.Equal(got, want) {
		t.Errorf("NotifyComplete = %v, want %v", got, want)
	}
}

func TestTaskFinishedCarriesPreviousState(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	h.c.Start(1, job)
	first := h.trigger(KindCheckpoint)
	h.ack(1, first, job...)

	second := h.trigger(KindCheckpoint)
	h.ack(1, second, src1, sink)
	if got := h.c.Stats().History[0].WaitingFor; !slices.Equal(got, []TaskID{src0}) {
		t.Fatalf("waiting for %v, want [src/0]", got)
	}
	h.c.TaskFinished(1, src0) // bounded input ended

	completed := h.eventsOf(EventCompleted)
	if len(completed) != 2 || completed[1].ID != second {
		t.Fatalf("completed events = %+v, want %d completed", completed, second)
	}
	got := completed[1].Completed.Tasks[src0]
	want := ackOf(src0, first)
	if !got.Finished || got.Handle != want.Handle || got.Offsets["orders"][0] != want.Offsets["orders"][0] || got.IncrementalBytes != 0 {
		t.Errorf("carried state of src/0 = %+v, want the ack of checkpoint %d, finished", got, first)
	}
	if got := completed[1].Completed.Tasks[sink]; got.Finished || got.Handle.Key != StateKey(second, sink) {
		t.Errorf("state of sink/0 = %+v, want its own ack", got)
	}

	// Later checkpoints neither wait for src/0 nor lose its state.
	third := h.trigger(KindCheckpoint)
	if got := h.c.Stats().History[0]; got.Total != 2 {
		t.Errorf("third checkpoint expects %d subtasks, want 2", got.Total)
	}
	h.ack(1, third, src1, sink)
	latest, err := h.store.Latest(context.Background())
	if err != nil || latest.ID != third {
		t.Fatalf("Latest = %v, %v; want checkpoint %d", latest, err, third)
	}
	if got := latest.Tasks[src0]; !got.Finished || got.Handle != want.Handle {
		t.Errorf("third checkpoint's src/0 = %+v, want the state of checkpoint %d", got, first)
	}
}

func TestCompletionSubsumesOlderPending(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	h.c.Start(1, job)
	a := h.trigger(KindCheckpoint)
	b := h.trigger(KindCheckpoint)
	c := h.trigger(KindCheckpoint)
	h.ack(1, a, src0)
	h.ack(1, b, job...)

	want := []string{"trigger(1,1)", "trigger(1,2)", "trigger(1,3)", "abort(1,1)", "complete(1,2)"}
	if got := h.gw.log(); !slices.Equal(got, want) {
		t.Errorf("gateway calls = %v, want %v", got, want)
	}
	failed := h.eventsOf(EventFailed)
	if len(failed) != 1 || failed[0].ID != a || failed[0].Reason != ReasonSubsumed {
		t.Errorf("failed events = %+v, want %d subsumed", failed, a)
	}
	s := h.c.Stats()
	if s.InProgress != 1 || s.History[0].ID != c || s.History[0].Status != StatusPending {
		t.Errorf("stats = %+v, want %d still pending", s, c)
	}
	if s.ConsecutiveFailures != 0 || s.LastCompleted != b || s.Completed != 1 {
		t.Errorf("stats = %+v", s)
	}
	h.ack(1, a, src1, sink) // too late
	if got := h.gw.ids("complete"); !slices.Equal(got, []int64{b}) {
		t.Errorf("NotifyComplete = %v, want [%d]", got, b)
	}
}

func TestStats(t *testing.T) {
	h := newHarness(t, Config{Job: "orders", Mode: "exactly-once"}, nil)
	h.c.Start(1, job)
	first := h.trigger(KindCheckpoint)
	h.clk.Advance(20 * time.Millisecond)
	h.ack(1, first, job...)
	second := h.trigger(KindSavepoint)
	h.ack(1, second, sink)
	h.c.MarkRestored(first, KindCheckpoint)

	s := h.c.Stats()
	if s.Completed != 1 || s.InProgress != 1 || s.LastCompleted != first || !slices.Equal(s.Restored, []int64{first}) || s.RestoredSavepoint {
		t.Errorf("stats = %+v", s)
	}
	if len(s.History) != 2 {
		t.Fatalf("history has %d entries, want 2", len(s.History))
	}
	p, c := s.History[0], s.History[1]
	if p.ID != second || p.Kind != KindSavepoint || p.Status != StatusPending || p.Acked != 1 || p.Total != 3 ||
		!slices.Equal(p.WaitingFor, []TaskID{src0, src1}) || !p.EndTime.IsZero() || p.Restored {
		t.Errorf("pending stats = %+v", p)
	}
	if c.ID != first || c.Status != StatusCompleted || c.Acked != 3 || c.FullBytes != 300 || c.IncrementalBytes != 30 ||
		c.MaxAlignment != 2*time.Millisecond || c.WaitingFor != nil || !c.Restored || c.EndTime.Sub(c.TriggerTime) != 20*time.Millisecond {
		t.Errorf("completed stats = %+v", c)
	}
	e := h.eventsOf(EventCompleted)[0].Completed
	if e.Job != "orders" || e.Mode != "exactly-once" || e.Duration() != 20*time.Millisecond || len(e.Tasks) != 3 {
		t.Errorf("completed = %+v", e)
	}
	// Stats hands out copies.
	s.History[1].AckedTasks[sink] = SubtaskAck{}
	delete(h.c.Stats().History[1].AckedTasks, sink)
	if got := h.c.Stats().History[1].AckedTasks[sink].Bytes; got != 100 {
		t.Errorf("AckedTasks was shared: sink bytes = %d", got)
	}

	for range 70 {
		h.ack(1, h.trigger(KindCheckpoint), job...)
	}
	if got := len(h.c.Stats().History); got != 64 {
		t.Errorf("history has %d entries, want 64", got)
	}
}

func TestConcurrentAcks(t *testing.T) {
	const checkpoints, parallelism = 50, 8
	var tasks []TaskID
	for i := range parallelism {
		tasks = append(tasks, TaskID{"map", i})
	}
	h := newHarness(t, Config{MaxConcurrent: 3}, NewMemoryStore(2))
	h.c.Start(1, tasks)
	var ids []int64
	for range checkpoints {
		ids = append(ids, h.trigger(KindCheckpoint))
	}
	var wg sync.WaitGroup
	for _, task := range tasks {
		wg.Go(func() {
			for _, id := range ids {
				h.c.Acknowledge(1, id, task, ackOf(task, id))
				_ = h.c.Stats()
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			h.clk.Advance(time.Millisecond)
		}
	})
	wg.Wait()

	completed := h.gw.ids("complete")
	if !slices.IsSorted(completed) || len(completed) == 0 || completed[len(completed)-1] != ids[len(ids)-1] {
		t.Errorf("completed = %v, want increasing and ending with %d", completed, ids[len(ids)-1])
	}
	var evs []int64
	for _, e := range h.eventsOf(EventCompleted) {
		evs = append(evs, e.ID)
	}
	if !slices.Equal(evs, completed) {
		t.Errorf("completed events %v differ from NotifyComplete %v", evs, completed)
	}
	if s := h.c.Stats(); s.Completed+s.Failed != checkpoints || s.InProgress != 0 {
		t.Errorf("stats = %+v, want %d ended", s, checkpoints)
	}
}
