package graph

import (
	"strings"

	"github.com/faultline-dev/faultline/tui/common"

	"github.com/charmbracelet/lipgloss"
)

// chip is one styled word of a line that may be dropped when the line is
// too narrow.
type chip struct {
	text  string
	style lipgloss.Style
	// drop orders what goes first when the line is too wide: 0 never,
	// higher values first.
	drop int
	// short replaces text when the line is still too wide after the drops,
	// and shorter replaces short when it is still too wide then.
	short, shorter string
	// pad is room kept for the chip beyond its text when deciding what
	// fits, so that a value that grows and shrinks (a duration) does not
	// make other chips come and go.
	pad int
}

// layoutChips renders chips separated by single spaces within w cells,
// dropping the droppable ones (highest drop first) while the line is too
// wide, then using the short forms, then the shorter ones; a line that
// still does not fit is cut
// with "…" at its end, at a word boundary, so that no number is cut.
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
			n += common.Width(c.text) + c.pad
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
	for i := range chips {
		if total() <= w {
			break
		}
		if keep[i] && chips[i].shorter != "" {
			chips[i].text = chips[i].shorter
		}
	}
	parts := make([]string, 0, len(chips))
	for i, c := range chips {
		if keep[i] {
			parts = append(parts, c.style.Render(c.text))
		}
	}
	return common.TruncateWords(strings.Join(parts, " "), w)
}
