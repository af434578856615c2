package common

import (
	"github.com/charmbracelet/lipgloss"

	"github.com/faultline-dev/faultline/runtime/view"
)

// Theme names the colour roles every style is built from (as gh-dash's
// theme does). The default uses the terminal's own 16 ANSI colours, so it
// follows the user's palette on dark and light backgrounds alike and never
// has to ask the terminal for its background colour. Colour is never the
// only carrier of a state: every coloured state is also a word or a glyph,
// because NO_COLOR strips colour and bold alike.
type Theme struct {
	Primary lipgloss.TerminalColor // the app name, focused pane, selection
	Accent  lipgloss.TerminalColor // checkpoint barriers
	Muted   lipgloss.TerminalColor // secondary text, rules, disabled entries
	Error   lipgloss.TerminalColor // FAILED, lost records, failed checkpoints
	Warning lipgloss.TerminalColor // RESTARTING, BLOCKED, ALIGNING, tempo badges
	Success lipgloss.TerminalColor // RUNNING, completed checkpoints, acks
	Info    lipgloss.TerminalColor // pending checkpoints, notices, in-flight data stored
}

// DefaultTheme is faultline's theme in the 16 ANSI colours.
func DefaultTheme() Theme {
	return Theme{
		Primary: lipgloss.ANSIColor(12), // bright blue
		Accent:  lipgloss.ANSIColor(13), // bright magenta
		Muted:   lipgloss.ANSIColor(8),  // bright black (grey)
		Error:   lipgloss.ANSIColor(9),  // bright red
		Warning: lipgloss.ANSIColor(11), // bright yellow
		Success: lipgloss.ANSIColor(10), // bright green
		Info:    lipgloss.ANSIColor(14), // bright cyan
	}
}

// HighContrastTheme is for a projector, where the default's grey (bright
// black) washes out: secondary text in the terminal's white, and the
// states in the bright colours with nothing dimmed.
func HighContrastTheme() Theme {
	t := DefaultTheme()
	t.Muted = lipgloss.ANSIColor(7)    // white
	t.Primary = lipgloss.ANSIColor(15) // bright white
	return t
}

// ThemeNamed is the theme called name: "" or "default", "high-contrast";
// ok is false for another name.
func ThemeNamed(name string) (t Theme, ok bool) {
	switch name {
	case "", "default":
		return DefaultTheme(), true
	case "high-contrast":
		return HighContrastTheme(), true
	}
	return DefaultTheme(), false
}

// Styles are every style the UI draws with, built once from a Theme so that
// no View has to make one.
type Styles struct {
	Theme Theme

	Text, Bold, Muted                    lipgloss.Style
	Error, Warning, Success, Info, Focus lipgloss.Style

	AppName lipgloss.Style // " faultline "
	Title   lipgloss.Style // the job's title
	Badge   lipgloss.Style // FROZEN, SLOW, SOURCES PAUSED
	// BadgeAlert is a badge that warns: a freeze nearing the time the job
	// fails over.
	BadgeAlert lipgloss.Style

	Rule, RuleFocused           lipgloss.Style // a pane's top line
	RuleTitle, RuleTitleFocused lipgloss.Style // its title

	Selected lipgloss.Style // the selected subtask or row
	Barrier  lipgloss.Style // ▌14 in a queue strip
	Blocked  lipgloss.Style // a blocked channel's gate and BLOCKED word
	Element  lipgloss.Style // an element in a queue strip
	// Persisted is an element an unaligned barrier overtook, stored as
	// channel state; Recording a channel whose records are being stored
	// as in-flight data (its gate and REC count).
	Persisted, Recording lipgloss.Style

	// Highlight is what a guided tour's step points at, after its »
	// marker (HighlightMarker).
	Highlight lipgloss.Style

	TableHeader lipgloss.Style
	Disabled    lipgloss.Style // an unavailable fault

	Box      lipgloss.Style // overlays: fault menu, help, detail
	BoxTitle lipgloss.Style

	HelpKey, HelpDesc, HelpSep lipgloss.Style
}

// NewStyles builds the styles of t for the terminal r writes to (its colour
// profile decides how much colour is left; lipgloss.DefaultRenderer() is
// the one tests set to termenv.Ascii).
func NewStyles(r *lipgloss.Renderer, t Theme) *Styles {
	if r == nil {
		r = lipgloss.DefaultRenderer()
	}
	base := r.NewStyle()
	fg := func(c lipgloss.TerminalColor) lipgloss.Style { return base.Foreground(c) }
	return &Styles{
		Theme: t,

		Text:    base,
		Bold:    base.Bold(true),
		Muted:   fg(t.Muted),
		Error:   fg(t.Error).Bold(true),
		Warning: fg(t.Warning),
		Success: fg(t.Success),
		Info:    fg(t.Info),
		Focus:   fg(t.Primary).Bold(true),

		AppName: base.Foreground(lipgloss.ANSIColor(0)).Background(t.Primary).Bold(true),
		Title:   base.Bold(true),
		Badge:   base.Foreground(lipgloss.ANSIColor(0)).Background(t.Warning).Bold(true),

		BadgeAlert: base.Foreground(lipgloss.ANSIColor(15)).Background(t.Error).Bold(true),

		Rule:             fg(t.Muted),
		RuleFocused:      fg(t.Primary),
		RuleTitle:        base.Bold(true),
		RuleTitleFocused: fg(t.Primary).Bold(true),

		Selected: fg(t.Primary).Bold(true).Reverse(true),
		Barrier:  fg(t.Accent).Bold(true),
		Blocked:  fg(t.Warning).Bold(true),
		Element:  base,

		Persisted: fg(t.Info).Bold(true),
		Recording: fg(t.Info),

		Highlight: fg(t.Accent).Bold(true).Reverse(true),

		TableHeader: fg(t.Muted).Underline(true),
		Disabled:    fg(t.Muted).Faint(true),

		Box:      base.Border(lipgloss.RoundedBorder()).BorderForeground(t.Primary).Padding(0, 1),
		BoxTitle: fg(t.Primary).Bold(true),

		HelpKey:  fg(t.Primary),
		HelpDesc: fg(t.Muted),
		HelpSep:  fg(t.Muted),
	}
}

// JobStatus is the style of a job status word (Flink's JobStatus).
func (s *Styles) JobStatus(status string) lipgloss.Style {
	switch view.JobState(status) {
	case view.JobRunning:
		return s.Success
	case view.JobRestarting, view.JobFailing, "CANCELLING", "CANCELING", "SUSPENDED":
		return s.Warning
	case view.JobFailed:
		return s.Error
	case view.JobFinished:
		return s.Info
	}
	return s.Muted
}

// TaskStatus is the style of a subtask status word as the graph shows it.
func (s *Styles) TaskStatus(word string) lipgloss.Style {
	switch word {
	case "RUN", "RUNNING":
		return s.Success
	case "FAILED":
		return s.Error
	case "RESTARTING", "CANCELING", "CANCELED", "DEPLOYING", "INITIALIZING":
		return s.Warning
	case "FINISHED":
		return s.Info
	}
	return s.Muted
}

// BackPressure is the style of a back-pressure level.
func (s *Styles) BackPressure(bp view.BackPressure) lipgloss.Style {
	switch bp {
	case view.BackPressureHigh:
		return s.Error
	case view.BackPressureLow:
		return s.Warning
	}
	return s.Muted
}

// Level is the style of a log line or flash of that level.
func (s *Styles) Level(l Level) lipgloss.Style {
	switch l {
	case LevelError:
		return s.Error
	case LevelWarning:
		return s.Warning
	case LevelSuccess:
		return s.Success
	case LevelMuted:
		return s.Muted
	}
	return s.Text
}

// Level grades a log line or a flash.
type Level int

const (
	LevelInfo Level = iota
	LevelMuted
	LevelSuccess
	LevelWarning
	LevelError
)
