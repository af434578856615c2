package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"faultline/internal/clock"
	"faultline/runtime/view"
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
func (j *Job) SetTempo(t Tempo) {
	old, _, _, _ := j.tempo.get()
	now := j.wall.Now()
	j.tempo.change(func() {
		j.tempo.stepping = false
		switch {
		case t != TempoFrozen:
			j.tempo.since = time.Time{}
		case j.tempo.t != TempoFrozen:
			j.tempo.since = now
		}
		j.tempo.t = t
	})
	if old != t {
		j.obs.Emit(view.TempoChanged{Tempo: t.String()})
	}
}

// Now is the time on the job's clock, which stops while the world is
// frozen and runs slower in slow motion (view.Tempo.ClockRate).
func (j *Job) Now() time.Time { return j.clk.Now() }

// Tempo is how fast the dataflow moves now.
func (j *Job) Tempo() Tempo { return Tempo(j.tempo.now.Load()) }

// FrozenSince is when the world was frozen (steps do not change it), or
// zero when it is not frozen.
func (j *Job) FrozenSince() time.Time {
	j.tempo.mu.Lock()
	defer j.tempo.mu.Unlock()
	return j.tempo.since
}

// Step lets a frozen world run, slowly, until the next thing a person can
// see happens: a checkpoint's barriers leave a stage of the job (the
// sources inject them; every subtask of the next operators has taken its
// snapshot), a barrier reaches an operator with several inputs (a channel
// blocks, an alignment begins), or a checkpoint completes (stepWatch). It
// does nothing unless the world is frozen.
func (j *Job) Step() {
	until := j.wall.Now().Add(stepLimit)
	j.tempo.change(func() {
		if j.tempo.t == TempoFrozen {
			j.tempo.stepping, j.tempo.stepUntil = true, until
		}
	})
}

// Stepping reports whether a Step is running.
func (j *Job) Stepping() bool {
	_, stepping, _, _ := j.tempo.get()
	return stepping
}

// endStep ends a running Step: something visible happened.
func (j *Job) endStep() {
	if Tempo(j.tempo.now.Load()) != TempoFrozen {
		return
	}
	j.tempo.change(func() { j.tempo.stepping = false })
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
