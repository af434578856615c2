package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// ellipsis marks text cut to fit.
const ellipsis = "…"

// humanBytes formats a size the way Flink's web UI does (powers of 1024,
// written KB, MB, GB): "0B", "512B", "1.2KB", "40KB", "1.2MB".
func humanBytes(n int64) string {
	if n < 0 {
		return "—"
	}
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + "B"
	}
	v := float64(n)
	for _, suffix := range []string{"KB", "MB", "GB", "TB"} {
		v /= unit
		if v < unit || suffix == "TB" {
			if v < 10 {
				return trimZero(fmt.Sprintf("%.1f", v)) + suffix
			}
			return fmt.Sprintf("%.0f", v) + suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// humanRate formats records per second compactly: "0/s", "210/s", "1.2k/s",
// "12k/s", "1.2M/s"; at most 6 cells.
func humanRate(r float64) string {
	if r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		r = 0
	}
	switch {
	case r < 1000:
		return fmt.Sprintf("%.0f/s", r)
	case r < 10_000:
		return trimZero(fmt.Sprintf("%.1f", r/1000)) + "k/s"
	case r < 1_000_000:
		return fmt.Sprintf("%.0fk/s", r/1000)
	case r < 10_000_000:
		return trimZero(fmt.Sprintf("%.1f", r/1e6)) + "M/s"
	}
	return fmt.Sprintf("%.0fM/s", r/1e6)
}

// humanDuration formats a duration for a table cell: "0ms", "<1ms",
// "1.2ms", "38ms", "1.2s", "12s", "1m05s".
func humanDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0ms"
	case d < time.Millisecond:
		return "<1ms"
	case d < 10*time.Millisecond:
		return trimZero(fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond))) + "ms"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return trimZero(fmt.Sprintf("%.1f", d.Seconds())) + "s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// roundDuration is a setting's duration as a person writes it: "1m",
// "10m", "15s", "1m30s"; humanDuration otherwise.
func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d >= time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d >= time.Second && d%time.Second == 0 && d < time.Minute:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return humanDuration(d)
}

// countdown formats the time left before something: "0.8s", "12s",
// "1m05s"; never negative.
func countdown(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < 10*time.Second {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return humanDuration(d)
}

// itoa writes an integer.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// trimZero turns "1.0" into "1".
func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// Thousands writes n with thousands separators: 18204 → "18,204".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// wallClock formats a wall-clock time as hh:mm:ss.mmm, in t's location.
func wallClock(t time.Time) string { return t.Format("15:04:05.000") }

// plural returns "1 task" or "3 tasks".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// width is the number of terminal cells s takes, escape sequences aside.
func width(s string) int { return lipgloss.Width(s) }

// truncate cuts s to at most w cells, ending it with "…" when cut.
func truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if width(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, ellipsis)
}

// padRight cuts or pads s with spaces to exactly w cells.
func padRight(s string, w int) string {
	s = truncate(s, w)
	if n := w - width(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

// padLeft cuts s to w cells and right-aligns it with spaces.
func padLeft(s string, w int) string {
	s = truncate(s, w)
	if n := w - width(s); n > 0 {
		return strings.Repeat(" ", n) + s
	}
	return s
}

// fitLines makes lines exactly h lines of exactly w cells: long lines are
// cut with "…", short ones padded, missing lines added blank, extra lines
// dropped. Every pane goes through it, so no content can break the layout.
func fitLines(lines []string, w, h int) []string {
	out := make([]string, h)
	for i := range out {
		if i < len(lines) {
			out[i] = padRight(lines[i], w)
		} else {
			out[i] = strings.Repeat(" ", max(w, 0))
		}
	}
	return out
}

// fitBlock is fitLines for a block of text.
func fitBlock(s string, w, h int) string {
	return strings.Join(fitLines(splitLines(s), w, h), "\n")
}

// splitLines splits a block into lines ("" is no line at all).
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
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
		bw := width(bg)
		left := ansi.Truncate(bg, x, "")
		if pad := x - width(left); pad > 0 {
			left += strings.Repeat(" ", pad)
		}
		right := ""
		if end := x + width(line); end < bw {
			right = ansi.TruncateLeft(bg, end, "")
		}
		out[row] = left + line + right
	}
	return out
}

// chip is one styled word of a line that may be dropped when the line is
// too narrow.
type chip struct {
	text  string
	style lipgloss.Style
	// drop orders what goes first when the line is too wide: 0 never,
	// higher values first.
	drop int
	// short replaces text when the line is still too wide after the drops.
	short string
	// pad is room kept for the chip beyond its text when deciding what
	// fits, so that a value that grows and shrinks (a duration) does not
	// make other chips come and go.
	pad int
}

// layoutChips renders chips separated by single spaces within w cells,
// dropping the droppable ones (highest drop first) while the line is too
// wide, then using the short forms; a line that still does not fit is cut
// with "…" at its end.
func layoutChips(chips []chip, w int) string {
	chips = append([]chip(nil), chips...)
	keep := make([]bool, len(chips))
	for i := range keep {
		keep[i] = chips[i].text != ""
	}
	total := func() int {
		n, first := 0, true
		for i, c := range chips {
			if !keep[i] {
				continue
			}
			if !first {
				n++
			}
			first = false
			n += width(c.text) + c.pad
		}
		return n
	}
	for total() > w {
		worst := -1
		for i, c := range chips {
			if keep[i] && c.drop > 0 && (worst < 0 || c.drop > chips[worst].drop) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		keep[worst] = false
	}
	for i := range chips {
		if total() <= w {
			break
		}
		if keep[i] && chips[i].short != "" {
			chips[i].text = chips[i].short
		}
	}
	parts := make([]string, 0, len(chips))
	for i, c := range chips {
		if keep[i] {
			parts = append(parts, c.style.Render(c.text))
		}
	}
	return truncate(strings.Join(parts, " "), w)
}

// rule draws a pane's top line, "── title ───── info ──", heavy ("━━")
// when the pane has the focus so that focus shows without colour too.
func rule(st *Styles, title, info string, w int, focused bool) string {
	line, lineStyle, titleStyle := "─", st.Rule, st.RuleTitle
	if focused {
		line, lineStyle, titleStyle = "━", st.RuleFocused, st.RuleTitleFocused
	}
	head := lineStyle.Render(strings.Repeat(line, 2)) + " " + titleStyle.Render(title) + " "
	tail := ""
	if info != "" {
		tail = " " + info + " " + lineStyle.Render(strings.Repeat(line, 2))
	}
	fill := w - width(head) - width(tail)
	if fill < 2 && tail != "" {
		tail = ""
		fill = w - width(head)
	}
	if fill < 0 {
		return truncate(head, w)
	}
	return head + lineStyle.Render(strings.Repeat(line, fill)) + tail
}
