package tui

import (
	"strings"

	"github.com/faultline-dev/faultline/tui/common"

	"github.com/charmbracelet/x/ansi"
)

// fitBlock is FitLines for a block of text.
func fitBlock(s string, w, h int) string {
	return strings.Join(common.FitLines(common.SplitLines(s), w, h), "\n")
}

// joinSideBySide puts two blocks of the same height next to each other with
// sep between them on every line.
func joinSideBySide(left, right []string, sep []string) []string {
	n := max(len(left), len(right))
	out := make([]string, n)
	for i := range n {
		var l, r, s string
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		if i < len(sep) {
			s = sep[i]
		}
		out[i] = l + s + r
	}
	return out
}

// overlay draws box over base with its top-left corner at (x, y): the cells
// of base that the box covers are replaced, the rest of each line kept.
func overlay(base []string, box []string, x, y int) []string {
	out := append([]string(nil), base...)
	for i, line := range box {
		row := y + i
		if row < 0 || row >= len(out) {
			continue
		}
		bg := out[row]
		bw := common.Width(bg)
		left := ansi.Truncate(bg, x, "")
		if pad := x - common.Width(left); pad > 0 {
			left += strings.Repeat(" ", pad)
		}
		right := ""
		if end := x + common.Width(line); end < bw {
			right = ansi.TruncateLeft(bg, end, "")
		}
		out[row] = left + line + right
	}
	return out
}
