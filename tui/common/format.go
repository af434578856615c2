package common

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

// HumanBytes formats a size the way Flink's web UI does (powers of 1024,
// written KB, MB, GB): "0B", "512B", "1.2KB", "40KB", "1.2MB".
func HumanBytes(n int64) string {
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

// HumanRate formats records per second compactly: "0/s", "210/s", "1.2k/s",
// "12k/s", "1.2M/s"; at most 6 cells.
func HumanRate(r float64) string {
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

// HumanDuration formats a duration for a table cell: "0ms", "<1ms",
// "1.2ms", "38ms", "1.2s", "12s", "1m05s".
func HumanDuration(d time.Duration) string {
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

// RoundDuration is a setting's duration as a person writes it: "1m",
// "10m", "15s", "1m30s"; HumanDuration otherwise.
func RoundDuration(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d >= time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d >= time.Second && d%time.Second == 0 && d < time.Minute:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return HumanDuration(d)
}

// Countdown formats the time left before something: "0.8s", "12s",
// "1m05s"; never negative.
func Countdown(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < 10*time.Second {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return HumanDuration(d)
}

// Itoa writes an integer.
func Itoa(n int64) string { return strconv.FormatInt(n, 10) }

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

// WallClock formats a wall-clock time as hh:mm:ss.mmm, in t's location.
func WallClock(t time.Time) string { return t.Format("15:04:05.000") }

// Plural returns "1 task" or "3 tasks".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Width is the number of terminal cells s takes, escape sequences aside.
func Width(s string) int { return lipgloss.Width(s) }

// Truncate cuts s to at most w cells, ending it with "…" when cut.
func Truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if Width(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, ellipsis)
}

// TruncateTask cuts a subtask's name ("operator/index") to at most w
// cells in its operator's part, so that two subtasks of one long-named
// operator stay apart: "orders-source→parse-orders/1" is
// "orders-source→pa…/1".
func TruncateTask(name string, w int) string {
	if Width(name) <= w {
		return name
	}
	i := strings.LastIndex(name, "/")
	if i < 0 || Width(name[i:])+2 > w {
		return Truncate(name, w)
	}
	return Truncate(name[:i], w-Width(name[i:])) + name[i:]
}

// TruncateWords cuts s to at most w cells at a word boundary, ending it
// with "…" when cut, so that no number or name is cut in the middle; a
// first word longer than w is cut where it must be.
func TruncateWords(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if Width(s) <= w {
		return s
	}
	cut, pos := 0, 0
	for _, r := range ansi.Strip(s) {
		if pos > w-1 {
			break
		}
		if r == ' ' && pos > 0 {
			cut = pos
		}
		pos += lipgloss.Width(string(r))
	}
	if cut == 0 {
		return Truncate(s, w)
	}
	return ansi.Truncate(s, cut+1, ellipsis)
}

// Wrap breaks plain text s into lines of at most w cells at spaces (never
// inside a word such as "at-least-once"; a word longer than w is cut), at
// most `most` lines (0: no limit); the last line of a longer text is cut
// at a word boundary with "…".
func Wrap(s string, w, most int) []string {
	if w <= 0 {
		return nil
	}
	var lines []string
	var cur strings.Builder
	curW := 0
	for _, word := range strings.Fields(s) {
		ww := Width(word)
		if curW > 0 && curW+1+ww > w {
			lines = append(lines, cur.String())
			cur.Reset()
			curW = 0
		}
		if curW > 0 {
			cur.WriteByte(' ')
			curW++
		}
		cur.WriteString(word)
		curW += ww
	}
	lines = append(lines, cur.String())
	for i, l := range lines {
		lines[i] = Truncate(l, w)
	}
	if most > 0 && len(lines) > most {
		rest := strings.Join(lines[most-1:], " ")
		lines = append(lines[:most-1], TruncateWords(rest, w))
	}
	return lines
}

// JoinWrapped joins parts with sep into lines of at most w cells, breaking
// only between parts (a part wider than w is cut at a word boundary).
func JoinWrapped(parts []string, sep string, w int) []string {
	var lines []string
	cur := ""
	for _, p := range parts {
		switch {
		case cur == "":
			cur = p
		case Width(cur+sep+p) <= w:
			cur += sep + p
		default:
			lines = append(lines, cur)
			cur = p
		}
	}
	lines = append(lines, cur)
	for i, l := range lines {
		lines[i] = TruncateWords(l, w)
	}
	return lines
}

// PadRight cuts or pads s with spaces to exactly w cells.
func PadRight(s string, w int) string {
	s = Truncate(s, w)
	if n := w - Width(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

// PadLeft cuts s to w cells and right-aligns it with spaces.
func PadLeft(s string, w int) string {
	s = Truncate(s, w)
	if n := w - Width(s); n > 0 {
		return strings.Repeat(" ", n) + s
	}
	return s
}

// FitLines makes lines exactly h lines of exactly w cells: long lines are
// cut with "…", short ones padded, missing lines added blank, extra lines
// dropped. Every pane goes through it, so no content can break the layout.
func FitLines(lines []string, w, h int) []string {
	out := make([]string, h)
	for i := range out {
		if i < len(lines) {
			out[i] = PadRight(lines[i], w)
		} else {
			out[i] = strings.Repeat(" ", max(w, 0))
		}
	}
	return out
}

// SplitLines splits a block into lines ("" is no line at all).
func SplitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// Rule draws a pane's top line, "── title ───── info ──", heavy ("━━")
// when the pane has the focus so that focus shows without colour too.
func Rule(st *Styles, title, info string, w int, focused bool) string {
	return rule(st, title, info, w, focused, false)
}

// MarkedRule is Rule for a pane a guided tour points at: the space before
// the title is the HighlightMarker, and the title is highlighted
// ("──»restarts ───").
func MarkedRule(st *Styles, title, info string, w int, focused bool) string {
	return rule(st, title, info, w, focused, true)
}

func rule(st *Styles, title, info string, w int, focused, marked bool) string {
	line, lineStyle, titleStyle := "─", st.Rule, st.RuleTitle
	if focused {
		line, lineStyle, titleStyle = "━", st.RuleFocused, st.RuleTitleFocused
	}
	head := lineStyle.Render(strings.Repeat(line, 2)) + " " + titleStyle.Render(title) + " "
	if marked {
		head = lineStyle.Render(strings.Repeat(line, 2)) + st.Highlight.Render(HighlightMarker+title) + " "
	}
	tail := ""
	if info != "" {
		tail = " " + info + " " + lineStyle.Render(strings.Repeat(line, 2))
	}
	fill := w - Width(head) - Width(tail)
	if fill < 2 && tail != "" {
		tail = ""
		fill = w - Width(head)
	}
	if fill < 0 {
		return Truncate(head, w)
	}
	return head + lineStyle.Render(strings.Repeat(line, fill)) + tail
}

// ClassicBackend is the name Flink gave a state backend with its
// checkpoint storage before it split them (1.13): MemoryStateBackend
// (state on the heap, checkpoints in the JobManager's memory),
// FsStateBackend (heap, checkpoints in a file system) and
// RocksDBStateBackend (state on disk, checkpoints in a file system); ""
// for a pair that had no name of its own or is not known.
func ClassicBackend(backend, storage string) string {
	switch {
	case backend == "heap" && storage == "jobmanager":
		return "MemoryStateBackend"
	case backend == "heap" && storage == "filesystem":
		return "FsStateBackend"
	case backend == "badger" && storage == "filesystem":
		return "RocksDBStateBackend"
	}
	return ""
}
