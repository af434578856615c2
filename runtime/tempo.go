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
	// TempoFrozen stops every task before its next batch; Step lets each
	// handle one.
	TempoFrozen = view.TempoFrozen
)

// The waits of the slow tempos.
const (
	SlowDelay   = 50 * time.Millisecond
	SlowerDelay = 250 * time.Millisecond
)

// tempo is the job's current tempo. wake is closed and replaced on every
// change, so that waiting tasks look again.
type tempo struct {
	mu    sync.Mutex
	t     Tempo
	step  int64     // bumped by every Step
	since time.Time // when the world froze (zero unless frozen)
	wake  chan struct{}
	// now mirrors t for the tasks' fast path: one atomic load per batch
	// at normal speed.
	now atomic.Int32
}

func (p *tempo) init() { p.wake = make(chan struct{}) }

func (p *tempo) get() (Tempo, int64, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.t, p.step, p.wake
}

func (p *tempo) change(f func()) {
	p.mu.Lock()
	f()
	p.now.Store(int32(p.t))
	close(p.wake)
	p.wake = make(chan struct{})
	p.mu.Unlock()
}

// SetTempo sets how fast the dataflow moves.
func (j *Job) SetTempo(t Tempo) {
	old, _, _ := j.tempo.get()
	now := j.clk.Now()
	j.tempo.change(func() {
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

// Tempo is how fast the dataflow moves now.
func (j *Job) Tempo() Tempo { return Tempo(j.tempo.now.Load()) }

// FrozenSince is when the world was frozen (steps do not change it), or
// zero when it is not frozen.
func (j *Job) FrozenSince() time.Time {
	j.tempo.mu.Lock()
	defer j.tempo.mu.Unlock()
	return j.tempo.since
}

// Step lets every task of a frozen job handle one more batch.
func (j *Job) Step() {
	j.tempo.change(func() { j.tempo.step++ })
}

// pace holds the task before its next batch as the tempo says, and
// returns how long it held it (counted as idle time). A frozen task goes on
// once for every Step.
func (t *task) pace(ctx context.Context) time.Duration {
	if Tempo(t.a.job.tempo.now.Load()) == TempoNormal {
		return 0
	}
	clk := t.clk()
	start := time.Time{}
	for {
		tp, step, wake := t.a.job.tempo.get()
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
			if t.stepSeen < step {
				t.stepSeen = step
				if start.IsZero() {
					return 0
				}
				return clock.Since(clk, start)
			}
		}
		if start.IsZero() {
			start = clk.Now()
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
