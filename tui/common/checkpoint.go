package common

import (
	"strconv"

	"github.com/faultline-dev/faultline/runtime/view"

	"github.com/charmbracelet/lipgloss"
)

// The checkpointing modes (Flink: CheckpointingMode, and
// execution.checkpointing.unaligned for exactly-once) as the view names
// them (view.Mode).
const (
	ExactlyOnce          = string(view.ModeExactlyOnce)
	ExactlyOnceUnaligned = string(view.ModeExactlyOnceUnaligned)
	AtLeastOnce          = string(view.ModeAtLeastOnce)
)

// NextMode is the mode the mode key asks for after mode: exactly-once
// (aligned), then exactly-once unaligned, then at-least-once, then
// exactly-once again. An unknown mode goes on as exactly-once would.
func NextMode(mode string) string {
	switch mode {
	case ExactlyOnceUnaligned:
		return AtLeastOnce
	case AtLeastOnce:
		return ExactlyOnce
	}
	return ExactlyOnceUnaligned
}

// How a checkpoint's barriers were handled (Flink's checkpoint type:
// aligned or unaligned checkpoint), as the history's type column and the
// detail say it.
const (
	KindAligned   = "aligned"
	KindUnaligned = "unaligned"
	// KindTimedOut is an aligned checkpoint that a subtask switched to
	// unaligned by the aligned-checkpoint timeout (Flink:
	// execution.checkpointing.aligned-checkpoint-timeout).
	KindTimedOut = "timed out"
)

// AlignmentKind says how checkpoint c, taken in mode, handled its
// barriers: KindTimedOut when a subtask switched it to unaligned by the
// timeout, KindUnaligned when a subtask took its snapshot unaligned (or,
// while it is pending, when it was triggered unaligned), "" for an
// at-least-once checkpoint (it aligns nothing), else KindAligned.
func AlignmentKind(c *view.Checkpoint, mode string) string {
	switch {
	case len(c.TimedOut) > 0:
		return KindTimedOut
	case c.Unaligned:
		return KindUnaligned
	case mode == AtLeastOnce:
		return ""
	case mode == ExactlyOnceUnaligned && c.Status == view.StatusPending && !c.Savepoint:
		// A savepoint is always aligned.
		return KindUnaligned
	}
	return KindAligned
}

// KindStyle is the style of an alignment kind.
func KindStyle(st *Styles, kind string) lipgloss.Style {
	switch kind {
	case KindUnaligned:
		return st.Info
	case KindTimedOut:
		return st.Warning
	case "":
		return st.Muted
	}
	return st.Text
}

// InFlight reports whether checkpoint c has anything to say of in-flight
// data (Flink: persisted and processed in-flight data): bytes of either,
// or a subtask that took its snapshot unaligned.
func InFlight(c *view.Checkpoint) bool {
	return c.PersistedInFlight > 0 || c.ProcessedInFlight > 0 || c.Unaligned || len(c.TimedOut) > 0
}

// PersistedRecords is how many in-flight records the subtasks of c
// stored as channel state (so far, while it is pending).
func PersistedRecords(c *view.Checkpoint) int64 {
	var n int64
	for _, a := range c.AckedTasks {
		n += a.PersistedRecords
	}
	return n
}

// CheckpointWord is a checkpoint's status word in the table: pending,
// completed or failed, "savepoint" for a completed savepoint, "restored"
// for the one the job restored from, and DAMAGED for a completed one that
// a restore found it could not use.
func CheckpointWord(st *Styles, c *view.Checkpoint) (string, lipgloss.Style) {
	switch {
	case c.Status == view.StatusPending:
		return "pending", st.Info
	case c.Status == view.StatusFailed:
		return "failed", st.Error
	case c.Damaged != "":
		return "DAMAGED", st.Error
	case c.Restored:
		return "restored", st.Focus
	case c.Savepoint:
		return "savepoint", st.Success
	}
	return "completed", st.Success
}

// CheckpointNote is what the status word leaves out: the failure, why a
// damaged one cannot be restored, or that a pending or restored one is a
// savepoint.
func CheckpointNote(c *view.Checkpoint) string {
	sp := c.Savepoint
	switch {
	case c.Status != view.StatusFailed && c.Damaged != "":
		return c.Damaged
	case c.Status == view.StatusFailed:
		reason := c.Failure
		if reason == "" {
			reason = "failed"
		}
		if sp {
			reason = "savepoint: " + reason
		}
		return reason
	case sp && (c.Status == view.StatusPending || c.Restored):
		return "savepoint"
	}
	return ""
}

// AckText is "acknowledged/expected", e.g. "8/13".
func AckText(c *view.Checkpoint) string {
	return strconv.Itoa(c.Acked) + "/" + strconv.Itoa(c.Total)
}

// Unusable reports whether a checkpoint's figures mean nothing for a
// restore: it failed, or a restore found it damaged. The table says why
// in their place.
func Unusable(c *view.Checkpoint) bool {
	return c.Status == view.StatusFailed || c.Damaged != ""
}

// AfterBarrier is how many records the subtasks of an at-least-once
// checkpoint processed past its barrier before their snapshots (so far,
// while it is pending): a restore from it reads them again.
func AfterBarrier(c *view.Checkpoint) int64 {
	var n int64
	for _, a := range c.AckedTasks {
		n += a.AfterBarrier
	}
	return n
}

// ModeLog remembers the checkpointing mode each checkpoint was triggered
// in. A row of the history does not carry it, and the job's mode is that
// of the checkpoints triggered from now on; the events tell it: the run's
// mode at its start, each mode_changed, and each checkpoint_triggered,
// which takes the mode in force, since the events come in the order the
// job emitted them.
type ModeLog struct {
	mode string           // the mode checkpoints are triggered in now; "" before anything said
	byID map[int64]string // the mode of each checkpoint whose trigger the events told
	// newest is the newest checkpoint the events said was triggered;
	// changedAfter what it was when the last mode_changed came.
	newest, changedAfter int64
	changed              bool
}

// maxModes bounds the checkpoints a ModeLog remembers: the oldest go.
const maxModes = 4096

// Observe takes one event, in the order of the stream.
func (l *ModeLog) Observe(e view.Event) {
	switch e := e.(type) {
	case view.RunStarted:
		if !l.changed && e.Mode != "" {
			l.mode = e.Mode
		}
	case view.ModeChanged:
		l.mode, l.changed, l.changedAfter = e.Mode, true, l.newest
	case view.CheckpointTriggered:
		l.newest = max(l.newest, e.ID)
		if l.mode == "" {
			return
		}
		if l.byID == nil {
			l.byID = map[int64]string{}
		}
		l.byID[e.ID] = l.mode
		if len(l.byID) > maxModes {
			for id := range l.byID {
				if id <= l.newest-maxModes/2 {
					delete(l.byID, id)
				}
			}
		}
	}
}

// Seed gives the mode of the checkpoints triggered now (a sample's) when
// no event has told it yet.
func (l *ModeLog) Seed(mode string) {
	if l.mode == "" && mode != "" {
		l.mode = mode
	}
}

// Mode is the mode checkpoint c was taken in, "" when that is not known.
// A checkpoint whose records were processed past its barrier is
// at-least-once; else the mode in force when its checkpoint_triggered
// event came; else, for a checkpoint newer than the last mode_changed the
// events told (or when none did), now, the job's mode now. An older
// checkpoint whose trigger the events did not tell is not known.
func (l *ModeLog) Mode(c *view.Checkpoint, now string) string {
	if AfterBarrier(c) > 0 {
		return AtLeastOnce
	}
	if m, ok := l.byID[c.ID]; ok {
		return m
	}
	if !l.changed || c.ID > l.changedAfter {
		return now
	}
	return ""
}
