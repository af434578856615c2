// Package header is the UI's top line: the job, its status and settings,
// and the badges of a world that is not running at full speed.
package header

import (
	"strings"
	"time"

	"faultline/runtime/view"
	"faultline/tui/common"

	tea "github.com/charmbracelet/bubbletea"
)

// Model is the top line: the job, its status (with the restart
// countdown), the checkpointing mode and interval, the input rate and the
// broker, and on the right the badges of a world that is not running at
// full speed: FROZEN, SLOW, SLOWER, SOURCES PAUSED. What does not fit goes,
// least important first; the badges stay.
type Model struct {
	common.NoKeys
	ctx   *common.Context
	width int
}

// New returns the bar; it draws what ctx holds.
func New(ctx *common.Context) *Model { return &Model{ctx: ctx} }

// Every pane and overlay is a Component.
var _ common.Component = (*Model)(nil)

// Init implements tea.Model.
func (h *Model) Init() tea.Cmd { return nil }

// Update implements tea.Model.
func (h *Model) Update(tea.Msg) (tea.Model, tea.Cmd) { return h, nil }

// SetSize implements Component.
func (h *Model) SetSize(w, _ int) { h.width = w }

// segment is one part of the header, already styled; when the line is too
// wide the segment with the lowest keep is shortened to short, or dropped
// when it has no short form. keep 100 never goes.
type segment struct {
	text, short string
	keep        int
}

// View implements tea.Model.
func (h *Model) View() string {
	st := h.ctx.Styles
	app := st.AppName.Render(" faultline ")
	if !h.ctx.HasSnap {
		return common.PadRight(app+"  "+st.Muted.Render("waiting for the job…"), h.width)
	}
	snap := &h.ctx.Snap
	job := snap.Job

	title := job.Title
	if title == "" {
		title = job.Name
	}
	status := job.Status
	if status == "" {
		status = "—"
	}
	if status == "RESTARTING" && !snap.Restart.NextRestartAt.IsZero() {
		status += " in " + common.Countdown(snap.Restart.NextRestartAt.Sub(snap.Now))
	}
	mode := h.ctx.Mode
	if mode == "" {
		mode = "—"
	}
	var detail string
	switch {
	case strings.Contains(mode, "unaligned"):
	case mode == "exactly-once":
		detail = "· aligned"
	case mode == "at-least-once":
		detail = "· no alignment"
	}
	interval := "manual checkpoints"
	if job.Interval > 0 {
		interval = "every " + common.HumanDuration(job.Interval)
	}
	kafka := ""
	if job.Broker != "" {
		kafka = "kafka " + job.Broker
		if job.Embedded {
			kafka += " (embedded)"
		}
	}
	input := ""
	if snap.Input.Generator {
		input = "input " + common.HumanRate(h.ctx.Rate)
	}

	modeText := st.Text.Render(mode)
	segs := []segment{
		{text: st.Title.Render(title), keep: 80},
		{text: st.JobStatus(job.Status).Render(status), keep: 100},
		{text: modeText + st.Muted.Render(" "+detail), short: modeText, keep: 40},
		{text: st.Muted.Render(interval), keep: 50},
		{text: st.Muted.Render(input), keep: 35},
		{text: st.Muted.Render(kafka), keep: 30},
	}
	if detail == "" {
		segs[2].text, segs[2].short = modeText, ""
	}
	if input == "" {
		segs[4].text = ""
	}
	if kafka == "" {
		segs[5].text = ""
	}
	var badges []string
	if t := h.ctx.Tempo; t != view.TempoNormal {
		label, style := strings.ToUpper(t.String()), st.Badge
		if frozen, ok := common.FrozenFor(snap); ok && t == view.TempoFrozen {
			label += " " + common.HumanDuration(frozen.Truncate(time.Second))
			if job.FreezeLimit > 0 && frozen >= job.FreezeLimit/2 {
				label += " · FAILS OVER AT " + common.RoundDuration(job.FreezeLimit)
				style = st.BadgeAlert
			}
		}
		badges = append(badges, style.Render(" "+label+" "))
	}
	if h.ctx.Paused {
		badges = append(badges, st.Badge.Render(" SOURCES PAUSED "))
	}
	right := strings.Join(badges, " ")
	room := h.width - common.Width(app) - common.Width(right) - 1

	render := func() string {
		var parts []string
		for _, s := range segs {
			if s.text != "" {
				parts = append(parts, s.text)
			}
		}
		return strings.Join(parts, "  ")
	}
	left := render()
	for common.Width(left)+2 > room {
		worst := -1
		for i, s := range segs {
			if s.text != "" && s.keep < 100 && (worst < 0 || s.keep < segs[worst].keep) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		if segs[worst].short != "" {
			segs[worst].text, segs[worst].short = segs[worst].short, ""
			segs[worst].keep = 90 // the mode itself goes late
		} else {
			segs[worst].text = ""
		}
		left = render()
	}
	line := app + "  " + common.Truncate(left, max(room-2, 0))
	if right != "" {
		line = common.PadRight(line, h.width-common.Width(right)) + right
	}
	return common.PadRight(line, h.width)
}
