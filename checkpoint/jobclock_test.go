package checkpoint

import (
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/clock"
)

// On the job's clock, which stands still while the world is frozen, a
// checkpoint frozen for 10 s in the middle reports the time the job ran
// (and the frozen time beside it), does not expire, and keeps its wall
// clock times for the person who reads them.
func TestFrozenTimeIsLeftOutOfACheckpoint(t *testing.T) {
	wall := clock.NewFake(t0)
	job := clock.NewScaled(wall)
	store := NewMemoryStore(3)
	c := NewCoordinator(Config{Timeout: 5 * time.Second, Wall: wall}, store, job, &fakeGateway{}, nil)
	c.Start(1, []TaskID{src0, src1, sink})
	id, err := c.Trigger(KindCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	c.Acknowledge(1, id, src0, ackOf(src0, id))
	wall.Advance(time.Second)
	job.SetRate(0) // frozen
	wall.Advance(10 * time.Second)
	if got := c.Stats().History[0]; got.Status != StatusPending || got.Duration != time.Second || got.Frozen != 10*time.Second {
		t.Fatalf("frozen pending checkpoint: status %s, duration %v, frozen %v; want pending, 1s, 10s", got.Status, got.Duration, got.Frozen)
	}
	job.SetRate(1)
	wall.Advance(time.Second)
	c.Acknowledge(1, id, src1, ackOf(src1, id))
	c.Acknowledge(1, id, sink, ackOf(sink, id))

	got := c.Stats().History[0]
	if got.Status != StatusCompleted {
		t.Fatalf("status %s (%s), want completed: frozen time must not count toward the 5s timeout", got.Status, got.Failure)
	}
	if got.Duration != 2*time.Second || got.Frozen != 10*time.Second {
		t.Errorf("duration %v frozen %v, want 2s and 10s", got.Duration, got.Frozen)
	}
	if wallTook := got.EndTime.Sub(got.TriggerTime); wallTook != 12*time.Second {
		t.Errorf("wall-clock trigger to end = %v, want 12s", wallTook)
	}
	if e2e := got.AckedTasks[sink].EndToEnd; e2e != 2*time.Second {
		t.Errorf("sink's end-to-end = %v, want 2s", e2e)
	}
	if at := got.AckedTasks[sink].AckTime; !at.Equal(t0.Add(12 * time.Second)) {
		t.Errorf("sink's ack time = %v, want the wall clock's %v", at, t0.Add(12*time.Second))
	}
	latest, err := store.Latest(t.Context())
	if err != nil || latest == nil {
		t.Fatalf("Latest: %v, %v", latest, err)
	}
	if latest.Duration() != 2*time.Second || latest.Frozen != 10*time.Second {
		t.Errorf("stored checkpoint: duration %v frozen %v, want 2s and 10s", latest.Duration(), latest.Frozen)
	}
}
