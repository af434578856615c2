// Package tour is the guided tour's narration panel (`faultline tour
// NAME`): what the step says, what the tour waits for, and how its last
// check came out.
package tour

import (
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// MinHeight is the fewest rows the panel is laid out in, its rule
// counted: the title, three lines of narration, the status line and the
// check line.
const MinHeight = 6

// minNarration is how many lines of narration the link keeps its line
// for.
const minNarration = 3

// Model is the narration panel of a guided tour (view.Tour): a rule with
// the tour's title, the step, and the tour's keys when they fit there;
// the step's narration wrapped to the width with its **terms** in bold;
// the Flink documentation link on its own line; one status line (what the
// tour waits for, the key it asks for or presses itself, n for the next
// step, or how the tour came out) with the keys on its right when they
// did not fit in the rule; and the last check, ✓ or ✗ with why. Nothing
// that carries a number or names a key is cut: it wraps. When the panel
// is short, the link goes first, then lines of narration (the last one
// shown ends with "…").
type Model struct {
	ctx           *common.Context
	width, height int
}

// New returns the panel; it draws ctx's Snap.Tour.
func New(ctx *common.Context) *Model { return &Model{ctx: ctx} }

// Every pane and overlay is a Component.
var _ common.Component = (*Model)(nil)

// Init implements tea.Model.
func (p *Model) Init() tea.Cmd { return nil }

// Update implements tea.Model: the panel draws the sample as it is; its
// keys are commands the root model sends to the tour.
func (p *Model) Update(tea.Msg) (tea.Model, tea.Cmd) { return p, nil }

// SetSize implements Component.
func (p *Model) SetSize(w, h int) { p.width, p.height = w, h }

// ShortHelp implements help.KeyMap.
func (p *Model) ShortHelp() []key.Binding { return p.ctx.Keys.TourHelp() }

// FullHelp implements help.KeyMap.
func (p *Model) FullHelp() [][]key.Binding { return [][]key.Binding{p.ctx.Keys.TourHelp()} }

// View implements tea.Model.
func (p *Model) View() string {
	t := p.ctx.Tour()
	if t == nil || p.width <= 0 || p.height <= 0 {
		return strings.Join(common.FitLines(nil, p.width, p.height), "\n")
	}
	w := p.width - 2 // a space on either side
	hint := p.hint(t)
	rule, hintShown := p.rule(t, hint)
	lines := []string{rule}

	var tail []string
	status := wrap(p.status(t), w)
	if !hintShown {
		keys := wrap(hint, w)
		if n := len(status); len(keys) == 1 && (n == 0 || common.Width(status[n-1])+3+common.Width(keys[0]) <= w) {
			// On the right of the status line.
			if n == 0 {
				status = []string{""}
			}
			status[len(status)-1] = common.PadRight(status[len(status)-1], w-common.Width(keys[0])) + keys[0]
		} else {
			status = append(status, keys...)
		}
	}
	tail = append(tail, status...)
	st := p.ctx.Styles
	narr := wrap(marked(t.Text, st.Text, st.Bold), w)
	if check := p.check(t, w); p.height-1-len(tail)-len(check) >= len(narr) || t.Check != nil && !t.Check.Held {
		// The last check's result, when the narration leaves it room (the
		// narration is what the step says now); one that did not hold,
		// always.
		tail = append(tail, check...)
	}
	var link []string
	if t.Link != "" {
		link = wrap(words(t.Link, st.Muted), w)
	}
	room := p.height - 1 - len(tail)
	if len(link) > 0 && room-len(link) >= min(len(narr), minNarration) {
		room -= len(link)
	} else {
		link = nil
	}
	if room = max(room, 0); len(narr) > room {
		narr = narr[:room]
		if room > 0 {
			narr[room-1] = common.TruncateWords(narr[room-1]+" …", w)
		}
	} else if room > len(narr) && len(tail) > 0 {
		tail = append([]string{""}, tail...) // room to set the status apart
	}
	for _, group := range [][]string{narr, link, tail} {
		for _, l := range group {
			lines = append(lines, " "+l)
		}
	}
	return strings.Join(common.FitLines(lines, p.width, p.height), "\n")
}

// rule is the panel's top line, "── tour · Title · step 3/9 ── n next ·
// b back · r restart · q quit ──", the keys only when they fit (shown
// reports whether they did); a title too long for the line is cut at a
// word, the step never.
func (p *Model) rule(t *view.Tour, hint []unit) (rule string, shown bool) {
	st := p.ctx.Styles
	step := ""
	if t.Steps > 0 {
		step = " · step " + strconv.Itoa(t.Step) + "/" + strconv.Itoa(t.Steps)
	}
	if t.Earlier {
		step += " (earlier step — n to return)"
	}
	title := t.Title
	// The rule's lines and spaces take 4 cells before the info, and keep
	// 2 after it.
	if room := p.width - 6 - common.Width("tour · "+step); common.Width(title) > room {
		title = common.TruncateWords(title, max(room, 0))
	}
	text := "tour"
	if title != "" {
		text += " · " + title
	}
	text += step
	// Rule keeps its info when it leaves 2 cells of line.
	info := wrap(hint, p.width)
	if shown = len(info) == 1 && p.width-4-common.Width(text)-(common.Width(info[0])+4) >= 2; !shown {
		return common.Rule(st, text, "", p.width, false), false
	}
	return common.Rule(st, text, info[0], p.width, false), true
}

// hint is the tour's keys, "n next · b back · r restart · q quit"; once
// the tour is done, "r restart · q quit".
func (p *Model) hint(t *view.Tour) []unit {
	st, k := p.ctx.Styles, p.ctx.Keys
	bindings := append(k.TourHelp(), k.Quit)
	if t.Done {
		bindings = []key.Binding{k.TourRestart, k.Quit}
	}
	var out []unit
	for i, b := range bindings {
		if i > 0 {
			out = append(out, unit{{"·", st.HelpSep}})
		}
		out = append(out, unit{{b.Help().Key, st.HelpKey}, {" " + b.Help().Desc, st.HelpDesc}})
	}
	return out
}

// status is the status line: how the tour came out once it is done;
// else what it waits for, the key it asks for ("press x then 1") or
// presses itself ("pressing x then 1 (autoplay)"), and "n next" when the
// learner reads on.
func (p *Model) status(t *view.Tour) []unit {
	st, k := p.ctx.Styles, p.ctx.Keys
	if t.Done {
		again := words("· r starts it again, q quits", st.Muted)
		if t.Passed {
			return append(words("tour complete: every check held ✓", st.Success), again...)
		}
		return append(words("tour complete: a check did not hold ✗", st.Error), again...)
	}
	var parts [][]unit
	if t.Hint != "" {
		parts = append(parts, words(t.Hint, st.Warning))
	}
	if t.Waiting != "" {
		parts = append(parts, words("waiting for: "+strings.TrimSuffix(t.Waiting, "…")+"…", st.Info))
	}
	if t.Key != "" {
		if t.Autoplay {
			parts = append(parts, words("pressing "+t.Key+" (autoplay)", st.Muted))
		} else {
			parts = append(parts, words("press "+t.Key, st.Focus))
		}
	}
	if t.Next {
		h := k.TourNext.Help()
		parts = append(parts, words(h.Key+" "+h.Desc, st.Focus))
	}
	var out []unit
	for i, part := range parts {
		if i > 0 {
			out = append(out, unit{{"·", st.Muted}})
		}
		out = append(out, part...)
	}
	return out
}

// check is the last check's line, "✓ claim" or "✗ claim — why", its
// further lines indented under the claim; none before the first check.
func (p *Model) check(t *view.Tour, w int) []string {
	c := t.Check
	if c == nil {
		return nil
	}
	st := p.ctx.Styles
	var u []unit
	if c.Held {
		u = words("✓ "+c.Claim, st.Success)
	} else {
		u = words("✗ "+c.Claim, st.Error)
		if c.Why != "" {
			u = append(u, words("— "+c.Why, st.Text)...)
		}
	}
	lines := wrap(u, w-2)
	for i := range lines {
		if i > 0 {
			lines[i] = "  " + lines[i]
		}
	}
	return lines
}
