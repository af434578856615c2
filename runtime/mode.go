package runtime

// The checkpointing mode: aligned or unaligned exactly-once, or
// at-least-once, and switching it while the job runs.

import (
	"time"

	"faultline/checkpoint"
	"faultline/runtime/barrier"
	"faultline/runtime/view"
)

// Mode is the checkpointing mode of the checkpoints triggered now.
func (j *Job) Mode() barrier.Mode { return barrier.Mode(j.mode.Load()) }

// Unaligned reports whether the exactly-once checkpoints triggered now
// are unaligned.
func (j *Job) Unaligned() bool { return j.unaligned.Load() }

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
func (j *Job) ModeNameNow() string { return ModeName(j.Mode(), j.Unaligned()) }

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
func (j *Job) endsAtLeastOnce(c *checkpoint.Completed) bool {
	since := j.exactlyOnceSince.Load()
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
