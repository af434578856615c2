package runtime

// The checkpointing mode: aligned or unaligned exactly-once, or
// at-least-once, and switching it while the job runs.

import (
	"sync/atomic"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/barrier"
	"github.com/faultline-dev/faultline/runtime/view"
)

// modeState is the checkpointing mode of the checkpoints triggered now,
// and since when the job runs exactly-once.
type modeState struct {
	mode      atomic.Int32 // barrier.Mode of the checkpoints triggered now
	unaligned atomic.Bool  // exactly-once checkpoints triggered now are unaligned
	// usedUnaligned is set once a checkpoint completed unaligned.
	usedUnaligned atomic.Bool
	// exactlyOnceSince is when checkpoints began to be triggered
	// exactly-once (Unix ns), 0 while they are triggered at-least-once: a
	// completed checkpoint triggered since ends the at-least-once period.
	exactlyOnceSince atomic.Int64
}

// Mode is the checkpointing mode of the checkpoints triggered now.
func (ms *modeState) Mode() barrier.Mode { return barrier.Mode(ms.mode.Load()) }

// Unaligned reports whether the exactly-once checkpoints triggered now
// are unaligned.
func (ms *modeState) Unaligned() bool { return ms.unaligned.Load() }

// Checkpointing modes by name, as the UI and the report show them
// (view.Mode).
const (
	ModeAligned     = string(view.ModeExactlyOnce)
	ModeUnaligned   = string(view.ModeExactlyOnceUnaligned)
	ModeAtLeastOnce = string(view.ModeAtLeastOnce)
)

// ModeName names a checkpointing mode.
func ModeName(m barrier.Mode, unaligned bool) string {
	switch {
	case m == barrier.AtLeastOnce:
		return ModeAtLeastOnce
	case unaligned:
		return ModeUnaligned
	}
	return ModeAligned
}

// modeNamed is the mode named name (ModeName's inverse).
func modeNamed(name string) (m barrier.Mode, unaligned bool) {
	switch name {
	case ModeAtLeastOnce:
		return barrier.AtLeastOnce, false
	case ModeUnaligned:
		return barrier.ExactlyOnce, true
	}
	return barrier.ExactlyOnce, false
}

// ModeNameNow names the mode of the checkpoints triggered now.
func (ms *modeState) ModeNameNow() string { return ModeName(ms.Mode(), ms.Unaligned()) }

// SetMode switches the checkpointing mode for the checkpoints triggered
// from now on (exactly-once aligns barriers, at-least-once does not); each
// subtask changes its barrier handler when the first barrier of such a
// checkpoint reaches it. unaligned makes exactly-once checkpoints
// unaligned.
func (j *Job) SetMode(m barrier.Mode, unaligned bool) {
	unaligned = unaligned && m == barrier.ExactlyOnce
	before := j.ModeNameNow()
	j.unaligned.Store(unaligned)
	if barrier.Mode(j.mode.Swap(int32(m))) != m {
		// Before the coordinator records the new mode in the checkpoints
		// it triggers: none is recorded exactly-once before it counts.
		if m == barrier.AtLeastOnce {
			j.exactlyOnceSince.Store(0)
			j.lenient(j.cfg.AtLeastOnce.Open)
		} else {
			j.exactlyOnceSince.Store(j.wall.Now().UnixNano())
		}
	}
	if now := ModeName(m, unaligned); now != before {
		j.coord.SetMode(now)
		j.obs.Emit(view.ModeChanged{Mode: now})
	}
}

// endsAtLeastOnce reports whether completed checkpoint c ends an
// at-least-once period: it was triggered exactly-once after the job last
// switched to exactly-once, so no failure will restore an at-least-once
// checkpoint again. One triggered exactly-once before a switch to
// at-least-once, or while the job still runs at-least-once, does not.
func (ms *modeState) endsAtLeastOnce(c *checkpoint.Completed) bool {
	since := ms.exactlyOnceSince.Load()
	return c.Mode != ModeAtLeastOnce && since != 0 && c.TriggerTime.UnixNano() >= since
}

// lenient opens or closes (f) an at-least-once period now; the oracle
// would read the output too strictly without it, so a failure to keep it
// is logged.
func (j *Job) lenient(f func(time.Time) error) {
	if err := f(j.wall.Now()); err != nil {
		j.logf("keep the at-least-once periods: %v", err)
	}
}
