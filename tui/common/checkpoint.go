package common

import (
	"strconv"

	"faultline/runtime/view"

	"github.com/charmbracelet/lipgloss"
)

// CheckpointWord is a checkpoint's status word in the table: pending,
// completed or failed, "savepoint" for a completed savepoint and "restored"
// for the one the job restored from.
func CheckpointWord(st *Styles, c *view.Checkpoint) (string, lipgloss.Style) {
	switch {
	case c.Status == view.StatusPending:
		return "pending", st.Info
	case c.Status == view.StatusFailed:
		return "failed", st.Error
	case c.Restored:
		return "restored", st.Focus
	case c.Savepoint:
		return "savepoint", st.Success
	}
	return "completed", st.Success
}

// CheckpointNote is what the status word leaves out: the failure, or that
// a pending or restored one is a savepoint.
func CheckpointNote(c *view.Checkpoint) string {
	sp := c.Savepoint
	switch {
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
