package checkpoint

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func (h *harness) triggerTimes() []time.Duration {
	var out []time.Duration
	for _, c := range h.gw.of("trigger") {
		out = append(out, c.at.Sub(t0))
	}
	return out
}

func secs(s ...float64) []time.Duration {
	var out []time.Duration
	for _, x := range s {
		out = append(out, time.Duration(math.Round(x*1000))*time.Millisecond)
	}
	return out
}

func TestPeriodicTriggersAtEveryInterval(t *testing.T) {
	h := newHarness(t, Config{Interval: time.Second}, nil)
	h.c.Start(1, job)

	h.clk.Advance(999 * time.Millisecond)
	if got := h.triggerTimes(); len(got) != 0 {
		t.Fatalf("triggered before the interval: %v", got)
	}
	h.clk.Advance(time.Millisecond)
	h.ack(1, 1, job...)
	h.clk.Advance(time.Second)
	h.ack(1, 2, job...)
	h.clk.Advance(time.Second)

	if got, want := h.triggerTimes(), secs(1, 2, 3); !slices.Equal(got, want) {
		t.Errorf("trigger times = %v, want %v", got, want)
	}
	if got, want := h.gw.ids("complete"), []int64{1, 2}; !slices.Equal(got, want) {
		t.Errorf("completed = %v, want %v", got, want)
	}
	for _, c := range h.gw.of("trigger") {
		if c.attempt != 1 || c.kind != KindCheckpoint {
			t.Errorf("trigger call %+v, want attempt 1 and a checkpoint", c)
		}
	}
	if e := h.eventsOf(EventTriggered); len(e) != 3 || !e[0].At.Equal(t0.Add(time.Second)) {
		t.Errorf("triggered events = %+v", e)
	}
}

func TestNoPeriodicTriggerWithoutInterval(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	h.c.Start(1, job)
	h.clk.Advance(time.Hour)
	if got := h.triggerTimes(); len(got) != 0 {
		t.Fatalf("triggered %v without an interval", got)
	}
	if id := h.trigger(KindCheckpoint); id != 1 {
		t.Errorf("manual trigger id = %d, want 1", id)
	}
}

func TestTriggerWhileNotRunning(t *testing.T) {
	h := newHarness(t, Config{Interval: time.Second}, nil)
	if _, err := h.c.Trigger(KindCheckpoint); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Trigger before Start: err = %v, want ErrNotRunning", err)
	}
	h.c.Start(1, job)
	h.c.Stop(ReasonJobFailover, nil)
	if _, err := h.c.Trigger(KindSavepoint); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Trigger after Stop: err = %v, want ErrNotRunning", err)
	}
	h.clk.Advance(time.Minute)
	if got := h.triggerTimes(); len(got) != 0 {
		t.Errorf("periodic triggers after Stop: %v", got)
	}
}

func TestMinPause(t *testing.T) {
	tests := []struct {
		name string
		// end ends checkpoint 1, triggered at 1s, after this long.
		after time.Duration
		fail  bool
		want  []time.Duration
	}{
		{"pause over before the next tick", 100 * time.Millisecond, false, secs(1, 2, 3)},
		{"next tick waits for the pause", 500 * time.Millisecond, false, secs(1, 2.3, 3.3)},
		{"completion at the next tick", time.Second, false, secs(1, 2.8, 3.8)},
		{"a failure does not start the pause", 500 * time.Millisecond, true, secs(1, 2, 3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{Interval: time.Second, MinPause: 800 * time.Millisecond, TolerableFailures: 10}, nil)
			h.c.Start(1, job)
			h.clk.Advance(time.Second)
			h.clk.Advance(tc.after)
			if tc.fail {
				h.c.Decline(1, 1, sink, ReasonDeclined, errors.New("disk full"))
			} else {
				h.ack(1, 1, job...)
			}
			for range 40 {
				h.clk.Advance(50 * time.Millisecond)
				if n := len(h.gw.of("trigger")); n > 1 {
					h.ack(1, int64(n), job...)
				}
				if len(h.gw.of("trigger")) == len(tc.want) {
					break
				}
			}
			if got := h.triggerTimes(); !slices.Equal(got, tc.want) {
				t.Errorf("trigger times = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTimeoutExpiresCheckpoint(t *testing.T) {
	h := newHarness(t, Config{Timeout: 5 * time.Second, TolerableFailures: 1}, nil)
	h.c.Start(1, job)
	id := h.trigger(KindCheckpoint)
	h.ack(1, id, src0)

	h.clk.Advance(5*time.Second - time.Nanosecond)
	if got := h.gw.of("abort"); len(got) != 0 {
		t.Fatalf("aborted before the timeout: %v", got)
	}
	h.clk.Advance(time.Nanosecond)

	if got, want := h.gw.ids("abort"), []int64{id}; !slices.Equal(got, want) {
		t.Errorf("NotifyAborted ids = %v, want %v", got, want)
	}
	failed := h.eventsOf(EventFailed)
	if len(failed) != 1 || failed[0].Reason != ReasonExpired || !failed[0].At.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("failed events = %+v, want one expiry at 5s", failed)
	}
	if msg := failed[0].Err.Error(); !strings.Contains(msg, "src/1") || !strings.Contains(msg, "1 of 3") {
		t.Errorf("expiry error %q does not say what it waited for", msg)
	}
	s := h.c.Stats()
	if s.Failed != 1 || s.InProgress != 0 || s.ConsecutiveFailures != 1 {
		t.Errorf("stats = %+v, want 1 failed, 0 in progress, 1 consecutive", s)
	}
	if got := s.History[0]; got.Status != StatusFailed || !strings.HasPrefix(got.Failure, "expired: ") ||
		!slices.Equal(got.WaitingFor, []TaskID{sink, src1}) || got.Acked != 1 {
		t.Errorf("history = %+v", got)
	}
	if got := h.gw.of("fail"); len(got) != 0 {
		t.Errorf("FailJob called within the tolerance: %v", got)
	}
	// A late ack changes nothing.
	h.ack(1, id, src1, sink)
	if got := h.gw.of("complete"); len(got) != 0 {
		t.Errorf("expired checkpoint completed: %v", got)
	}
}

func TestMaxConcurrent(t *testing.T) {
	tests := []struct {
		max          int
		wantPending  []time.Duration // triggers while nothing is acknowledged
		wantAfterAck []time.Duration // after checkpoint 1 is acknowledged at 3.5s
	}{
		{1, secs(1), secs(1, 3.5)},
		{2, secs(1, 2), secs(1, 2, 3.5)},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("max %d", tc.max), func(t *testing.T) {
			h := newHarness(t, Config{Interval: time.Second, MaxConcurrent: tc.max}, nil)
			h.c.Start(1, job)
			h.clk.Advance(3 * time.Second)
			if got := h.triggerTimes(); !slices.Equal(got, tc.wantPending) {
				t.Errorf("triggers with nothing acknowledged = %v, want %v", got, tc.wantPending)
			}
			h.clk.Advance(500 * time.Millisecond)
			h.ack(1, 1, job...) // subsumes nothing: 1 is the oldest
			h.clk.Advance(500 * time.Millisecond)
			if got := h.triggerTimes(); !slices.Equal(got, tc.wantAfterAck) {
				t.Errorf("triggers after acknowledging 1 = %v, want %v", got, tc.wantAfterAck)
			}
		})
	}
}

func TestManualTriggerBypassesLimits(t *testing.T) {
	h := newHarness(t, Config{Interval: time.Second, MinPause: time.Hour, MaxConcurrent: 1}, nil)
	h.c.Start(1, job)
	a := h.trigger(KindCheckpoint)
	h.ack(1, a, job...)
	b := h.trigger(KindSavepoint)
	c := h.trigger(KindCheckpoint)
	if a != 1 || b != 2 || c != 3 {
		t.Errorf("ids = %d %d %d, want 1 2 3", a, b, c)
	}
	if got := h.c.Stats().InProgress; got != 2 {
		t.Errorf("in progress = %d, want 2", got)
	}
	if got := h.gw.of("trigger")[1].kind; got != KindSavepoint {
		t.Errorf("second trigger kind = %v, want savepoint", got)
	}
}
