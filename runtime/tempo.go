package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultline-dev/faultline/internal/clock"
	"github.com/faultline-dev/faultline/runtime/view"
)

// Tempo is how fast the whole dataflow moves (see view.Tempo).
type Tempo = view.Tempo

// Tempos, slowest last.
const (
	// TempoNormal is full speed.
	TempoNormal = view.TempoNormal
	// TempoSlow waits SlowDelay before every batch a task handles.
	TempoSlow = view.TempoSlow
	// TempoSlower waits SlowerDelay before every batch.
	TempoSlower = view.TempoSlower
	// TempoFrozen stops every task before its next batch; Step lets the
	// world run, slowly, to the next thing a person can see.
	TempoFrozen = view.TempoFrozen
)

// tempoBatch is the most records a source reads at once in slow motion: the
// job's record rate drops with its tempo, and what the sources have not read
// waits in Kafka (consumer lag), not in the job's queues.
const tempoBatch = 1

// stepLimit is the longest a Step runs when nothing visible happens (no
// checkpoint is triggered, the input has ended).
const stepLimit = 5 * time.Second

// The waits of the slow tempos.
const (
	SlowDelay   = 50 * time.Millisecond
	SlowerDelay = 250 * time.Millisecond
)

// timeControls are the job's clocks and what a person does to its time:
// the tempo (slow motion, frozen), steps in a frozen world, and the
// sources' pause.
type timeControls struct {
	// clk is the job's clock: it stops while the world is frozen and runs
	// slower in slow motion (view.Tempo.ClockRate), so that durations,
	// timeouts, restart delays and fault timers measured on it leave out
	// the time a person spent reading the screen. wall is the clock it
	// runs on (Config.Clock): the tempo's own waits, the times a person
	// reads as clock times, the stop budget and the run's elapsed time
	// use it.
	clk    *clock.Scaled
	wall   clock.Clock
	obs    *Observer
	tempo  tempo
	steps  *stepWatch // what a Step stops at
	paused atomic.Bool
}

// tempo is the job's current tempo. wake is closed and replaced on every
// change, so that waiting tasks look again; every change sets the job
// clock's rate (clk).
type tempo struct {
	clk   *clock.Scaled
	mu    sync.Mutex
	t     Tempo
	since time.Time // when the world froze (zero unless frozen)
	// stepping is set by Step in a frozen world until the next visible
	// event (stepWatch) or stepUntil; meanwhile the world runs slowly.
	stepping  bool
	stepUntil time.Time
	wake      chan struct{}
	// now mirrors t for the tasks' fast path: one atomic load per batch
	// at normal speed.
	now atomic.Int32
}

func (p *tempo) init(clk *clock.Scaled) { p.clk, p.wake = clk, make(chan struct{}) }

// get returns the tempo, whether a step is running (and until when at
// most), and the channel closed at the next change.
func (p *tempo) get() (Tempo, bool, time.Time, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.t, p.stepping, p.stepUntil, p.wake
}

func (p *tempo) change(f func()) {
	p.mu.Lock()
	f()
	p.now.Store(int32(p.t))
	p.clk.SetRate(p.t.ClockRate(p.stepping))
	close(p.wake)
	p.wake = make(chan struct{})
	p.mu.Unlock()
}

// SetTempo sets how fast the dataflow moves.
func (c *timeControls) SetTempo(t Tempo) {
	old, _, _, _ := c.tempo.get()
	now := c.wall.Now()
	c.tempo.change(func() {
		c.tempo.stepping = false
		switch {
		case t != TempoFrozen:
			c.tempo.since = time.Time{}
		case c.tempo.t != TempoFrozen:
			c.tempo.since = now
		}
		c.tempo.t = t
	})
	if old != t {
		c.obs.Emit(view.TempoChanged{Tempo: t.String()})
	}
}

// Now is the time on the job's clock, which stops while the world is
// frozen and runs slower in slow motion (view.Tempo.ClockRate).
func (c *timeControls) Now() time.Time { return c.clk.Now() }

// Tempo is how fast the dataflow moves now.
func (c *timeControls) Tempo() Tempo { return Tempo(c.tempo.now.Load()) }

// FrozenSince is when the world was frozen (steps do not change it), or
// zero when it is not frozen.
func (c *timeControls) FrozenSince() time.Time {
	c.tempo.mu.Lock()
	defer c.tempo.mu.Unlock()
	return c.tempo.since
}

// Step lets a frozen world run, slowly, until the next thing a person can
// see happens: a checkpoint's barriers leave a stage of the job (the
// sources inject them; every subtask of the next operators has taken its
// snapshot), a barrier reaches an operator with several inputs (a channel
// blocks, an alignment begins), or a checkpoint completes (stepWatch). It
// does nothing unless the world is frozen.
func (c *timeControls) Step() {
	until := c.wall.Now().Add(stepLimit)
	c.tempo.change(func() {
		if c.tempo.t == TempoFrozen {
			c.tempo.stepping, c.tempo.stepUntil = true, until
		}
	})
}

// Stepping reports whether a Step is running.
func (c *timeControls) Stepping() bool {
	_, stepping, _, _ := c.tempo.get()
	return stepping
}

// Pause stops (true) or resumes (false) the sources.
func (c *timeControls) Pause(p bool) {
	if c.paused.Swap(p) != p {
		c.obs.Emit(view.SourcesPaused{Paused: p})
	}
}

// Paused reports whether the sources are paused.
func (c *timeControls) Paused() bool { return c.paused.Load() }

// endStep ends a running Step: something visible happened.
func (c *timeControls) endStep() {
	if Tempo(c.tempo.now.Load()) != TempoFrozen {
		return
	}
	c.tempo.change(func() { c.tempo.stepping = false })
}

// pace holds the task before its next batch as the tempo says, and returns
// how long it held it (counted as idle time). In slow motion an operator
// that has fallen behind (more than one element waiting per input channel)
// is not held, so that the queues stay as short as at full speed: the
// sources set the pace. A frozen task waits for a Step and goes on slowly
// while it runs.
func (t *task) pace(ctx context.Context) time.Duration {
	return t.paceAs(ctx, true)
}

// paceAs is pace; behind says whether an operator that fell behind is
// let go on unheld. Taking an unaligned barrier is always held, so that in
// slow motion and in steps it can be seen at the front of its queue.
func (t *task) paceAs(ctx context.Context, behind bool) time.Duration {
	if Tempo(t.a.job.tempo.now.Load()) == TempoNormal {
		return 0
	}
	defer t.m.heldSince.Store(0)
	clk := t.wall()
	start := time.Time{}
	for {
		tp, stepping, until, wake := t.a.job.tempo.get()
		var d time.Duration
		switch tp {
		case TempoNormal:
			if start.IsZero() {
				return 0
			}
			return clock.Since(clk, start)
		case TempoSlow:
			d = SlowDelay
		case TempoSlower:
			d = SlowerDelay
		case TempoFrozen:
			if stepping {
				if clk.Now().After(until) {
					t.a.job.endStep()
					continue
				}
				d = SlowDelay
			}
		}
		if d > 0 && behind && t.behind() {
			if start.IsZero() {
				return 0
			}
			return clock.Since(clk, start)
		}
		if start.IsZero() {
			start = clk.Now()
			t.m.heldSince.Store(start.UnixNano()) // idle from now on, as the samplers see it
		}
		if d > 0 {
			after, tm := clock.After(clk, d)
			select {
			case <-after:
				return clock.Since(clk, start)
			case <-wake:
				tm.Stop()
			case <-ctx.Done():
				tm.Stop()
				return clock.Since(clk, start)
			}
			continue
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return clock.Since(clk, start)
		}
	}
}

// behind reports whether more elements wait in the task's input channels
// than one per channel.
func (t *task) behind() bool {
	if len(t.inputs) == 0 {
		return false
	}
	var waiting int64
	for _, in := range t.inputs {
		waiting += in.ch.Len()
	}
	return waiting > int64(len(t.inputs))
}
