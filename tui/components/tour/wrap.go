package tour

import (
	"strings"

	"github.com/faultline-dev/faultline/tui/common"

	"github.com/charmbracelet/lipgloss"
)

// piece is text in one style.
type piece struct {
	text  string
	style lipgloss.Style
}

// unit is what a line is never broken inside: a word, a word and the
// punctuation after a bold term ("**barrier**," is "barrier" bold and ","
// plain), or a key and its word ("n next"). A nil unit breaks the line.
type unit []piece

func (u unit) width() int {
	n := 0
	for _, p := range u {
		n += common.Width(p.text)
	}
	return n
}

// words splits plain text into units of one word each, in style.
func words(text string, style lipgloss.Style) []unit {
	var out []unit
	for _, w := range strings.Fields(text) {
		out = append(out, unit{{w, style}})
	}
	return out
}

// marked splits narration into units: **term** is a term in bold, the
// markers are dropped (an unclosed one makes the rest bold), a newline
// breaks the line and an empty line stays one.
func marked(text string, plain, bold lipgloss.Style) []unit {
	var out []unit
	var cur strings.Builder
	cur.Grow(len(text))
	isBold, space := false, true // space: a space came since the last word
	style := func() lipgloss.Style {
		if isBold {
			return bold
		}
		return plain
	}
	flush := func() {
		if cur.Len() == 0 {
			return
		}
		p := piece{cur.String(), style()}
		if n := len(out); !space && n > 0 && out[n-1] != nil {
			out[n-1] = append(out[n-1], p) // no space before it: one unit
		} else {
			out = append(out, unit{p})
		}
		cur.Reset()
		space = false
	}
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '*' && i+1 < len(text) && text[i+1] == '*':
			flush()
			isBold = !isBold
			i++
		case c == '\n':
			flush()
			out = append(out, nil)
			space = true
		case c == ' ' || c == '\t' || c == '\r':
			flush()
			space = true
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// wrap lays units out in lines of at most w cells, breaking only between
// units and at nil units; a unit wider than w goes on lines of its own,
// broken where it must be (a link), never cut.
func wrap(units []unit, w int) []string {
	if w <= 0 {
		return nil
	}
	var lines []string
	var line strings.Builder
	lineW := 0
	emit := func() {
		lines = append(lines, line.String())
		line.Reset()
		lineW = 0
	}
	for i, u := range units {
		if u == nil {
			// A break ends the line; a break right after another leaves
			// an empty line (a paragraph).
			if lineW > 0 || (i > 0 && units[i-1] == nil) {
				emit()
			}
			continue
		}
		uw := u.width()
		if lineW > 0 && lineW+1+uw > w {
			emit()
		}
		if lineW > 0 {
			line.WriteByte(' ')
			lineW++
		}
		if uw <= w-lineW {
			for _, p := range u {
				line.WriteString(p.style.Render(p.text))
			}
			lineW += uw
			continue
		}
		// Wider than a line: rune by rune.
		for _, p := range u {
			for _, r := range p.text {
				rw := common.Width(string(r))
				if lineW+rw > w {
					emit()
				}
				line.WriteString(p.style.Render(string(r)))
				lineW += rw
			}
		}
	}
	if lineW > 0 {
		emit()
	}
	return lines
}
