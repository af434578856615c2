package runtime

// The slow fault: a subtask that falls behind its input. It holds each
// record for a fixed time, chosen when the fault begins so that the subtask
// handles about 1/factor of its normal rate, at any input rate (ten times
// the few microseconds a record costs would change nothing at 400
// records/s). The normal rate is the one of the last full second in which
// the subtask kept up with its input (it waited for some) and no slow fault
// held it: a fault that begins while the subtask catches up on the backlog
// of an earlier one (working flat out, faster than normal) slows it as much
// as the first did. Its input queues fill, back-pressure
// reaches upstream, barriers wait behind the queued records, and alignment
// at the slowed subtask takes visibly longer; in at-least-once mode the
// records it processes past a barrier become the duplicates of the next
// recovery.

import (
	"context"
	"math"
	"time"

	"github.com/faultline-dev/faultline/internal/clock"
)

// slowFloorRate is the rate a slow fault assumes for a subtask that has not
// been measured yet (it has handled nothing for a second).
const slowFloorRate = 100.0

// earliestRate is the least time a rate is taken over: a slow fault
// that begins sooner goes by slowFloorRate.
const earliestRate = 100 * time.Millisecond

// slowBatch is the most records a slowed source reads at once, so that a
// checkpoint's trigger waits behind a few held records only.
const slowBatch = 8

// keptUp is the share of a second a subtask must have waited for input in
// for its rate then to be its normal one: one that never waited worked
// flat out, on a backlog or at its limit.
const keptUp = 0.05

// slowing is a subtask's slow fault while it lasts, and the measure of its
// normal rate that the fault starts from. The task goroutine owns it.
type slowing struct {
	until     time.Time     // the fault's end (zero: not slowed)
	perRecord time.Duration // how long each record is held

	// rate is the normal rate, in records per second (0: not measured).
	rate float64
	// The second being measured: from when, the records handled and the
	// idle time until then, and whether a slow fault held it meanwhile.
	markAt                  time.Time
	markProcessed, markIdle int64
	disturbed               bool
	// The last batch measured: when, and the records handled by then.
	lastAt        time.Time
	lastProcessed int64
}

// measure updates the normal rate from processed, the subtask's records so
// far, and idle, its idle time so far (ns); it is called once per batch.
func (s *slowing) measure(now time.Time, processed, idle int64) {
	if !s.until.IsZero() {
		s.disturbed = true
	}
	s.lastAt, s.lastProcessed = now, processed
	if s.markAt.IsZero() {
		s.markAt, s.markProcessed, s.markIdle = now, processed, idle
		return
	}
	// The first measure comes after a fifth of a second, so that a fault
	// early in a run starts from a rate too.
	d := now.Sub(s.markAt)
	if d < time.Second && !(s.rate == 0 && d >= time.Second/5) {
		return
	}
	waited := float64(idle-s.markIdle) >= keptUp*float64(d)
	if !s.disturbed && (waited || s.rate == 0) {
		s.rate = float64(processed-s.markProcessed) / d.Seconds()
	}
	s.markAt, s.markProcessed, s.markIdle, s.disturbed = now, processed, idle, !s.until.IsZero()
}

// begin starts a slow fault of factor for d at now. Before the first
// measure of the normal rate (a fault early in a run) it goes by the rate
// so far, when there is a tenth of a second of it.
func (s *slowing) begin(now time.Time, factor float64, d time.Duration) {
	rate := s.rate
	if so := s.lastAt.Sub(s.markAt); rate == 0 && !s.markAt.IsZero() && so >= earliestRate {
		rate = float64(s.lastProcessed-s.markProcessed) / so.Seconds()
	}
	if rate < slowFloorRate {
		rate = slowFloorRate
	}
	s.until, s.disturbed = now.Add(d), true
	s.perRecord = time.Duration(math.Min(float64(time.Second)*factor/rate, float64(time.Second)))
}

// active reports whether the fault lasts at now, ending it when it is over.
func (s *slowing) active(now time.Time) bool {
	if s.until.IsZero() {
		return false
	}
	if now.After(s.until) {
		s.until, s.perRecord = time.Time{}, 0
		return false
	}
	return true
}

// resumeSlow carries a slow fault that outlasted the subtask's previous
// attempt over to this one.
func (t *task) resumeSlow() {
	t.slow.rate = math.Float64frombits(t.m.normalRate.Load())
	if u := t.m.slowUntil.Load(); u != 0 {
		t.slow.until, t.slow.perRecord = time.Unix(0, int64(u)), time.Duration(t.m.slowPer.Load())
	}
}

// measureRate notes the batch begun at began, just handled, for the slow
// fault's measure.
func (t *task) measureRate(began time.Time) {
	before := t.slow.rate
	t.slow.measure(began, t.m.RecordsIn.Load()+t.in, t.m.IdleNanos.Load())
	if t.slow.rate != before {
		t.m.normalRate.Store(math.Float64bits(t.slow.rate))
	}
}

// slowed reports whether a slow fault holds the task now; the UI's view of
// it ends with it.
func (t *task) slowed() bool {
	if t.slow.until.IsZero() {
		return false
	}
	if !t.slow.active(t.clk().Now()) {
		t.m.slowUntil.Store(0)
		return false
	}
	return true
}

// holdRecords holds the task for n records of a slow fault, no longer than
// the fault lasts, or until ctx ends. An unaligned barrier that arrives
// meanwhile is taken at once, between two held records as it were (Flink
// handles priority events between records): the slowness of a subtask is
// what unaligned checkpoints overtake.
func (t *task) holdRecords(ctx context.Context, n int) error {
	if n <= 0 || !t.slowed() {
		return nil
	}
	clk := t.clk()
	d := min(time.Duration(n)*t.slow.perRecord, t.slow.until.Sub(clk.Now()))
	after, tm := clock.After(clk, d)
	defer tm.Stop()
	woken := false
	for {
		select {
		case <-after:
		case <-ctx.Done():
		case <-t.gate.c:
			woken = true
			if t.opr == nil {
				continue // a source has no input to take a barrier from
			}
			if err := t.opr.takePriority(ctx); err != nil {
				return err
			}
			continue
		}
		break
	}
	if woken {
		t.gate.signal() // what else woke it is looked at by the loop
	}
	return nil
}
