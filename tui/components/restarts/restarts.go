// Package restarts is the pane of the restart and failover strategies
// (Flink: RestartBackoffTimeStrategy, FailoverStrategy).
package restarts

import (
	"fmt"
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
)

// Model shows the restart strategy (Flink: RestartBackoffTimeStrategy)
// and the failover strategy (Flink: FailoverStrategy): the job's status and
// the countdown to the next restart, the strategy and its budget, which
// subtasks the last failover restarted and why, the records individual
// failover lost, and why the job gave up when it did. When the pane is too
// short the most urgent lines stay.
type Model struct {
	common.NoKeys
	ctx           *common.Context
	width, height int
}

// New returns the pane; it draws what ctx holds.
func New(ctx *common.Context) *Model { return &Model{ctx: ctx} }

// Every pane and overlay is a Component.
var _ common.Component = (*Model)(nil)

// Init implements tea.Model.
func (p *Model) Init() tea.Cmd { return nil }

// Update implements tea.Model.
func (p *Model) Update(tea.Msg) (tea.Model, tea.Cmd) { return p, nil }

// SetSize implements Component.
func (p *Model) SetSize(w, h int) { p.width, p.height = w, h }

// restartLine is one line of the pane; lower prio values stay longer. A
// line with wrap set is plain text drawn in style, wrapped rather than cut
// (what the user must not miss: records lost, why the job gave up; the
// strategy's parameters). When the pane is short, a line with a short
// form takes it before any line goes.
type restartLine struct {
	text  string
	short string // styled, one line
	prio  int
	wrap  bool
	style lipgloss.Style
	// strategy marks the restart strategy's line; named is the text of
	// the budget's line once that line went for room.
	strategy bool
	named    []string // longest first
}

// rows are the screen lines of l in w cells.
func (l restartLine) rows(w int) []string {
	if !l.wrap {
		return []string{common.TruncateWords(l.text, w)}
	}
	var out []string
	for _, r := range strings.Split(ansi.Wordwrap(l.text, w, ""), "\n") {
		out = append(out, l.style.Render(common.Truncate(r, w)))
	}
	return out
}

// View implements tea.Model.
func (p *Model) View() string {
	st := p.ctx.Styles
	r := p.ctx.Snap.Restart
	info := ""
	if r.Restarts > 0 {
		info = st.Muted.Render(common.Plural(r.Restarts, "restart", "restarts"))
	}
	rule := common.Rule
	if p.ctx.Highlight().Restart {
		rule = common.MarkedRule // "──»restarts": a guided tour points at the pane
	}
	lines := []string{rule(st, "restarts", info, p.width, false)}
	body := p.lines()
	w := p.width - 1
	// Keep the most urgent lines that fit, in their order.
	count := func() int {
		n := 0
		for _, l := range body {
			n += len(l.rows(w))
		}
		return n
	}
	for len(body) > 1 && count() > p.height-1 {
		short := -1
		for i, l := range body {
			if l.short != "" && len(l.rows(w)) > 1 {
				short = i
			}
		}
		if short >= 0 {
			body[short] = restartLine{text: body[short].short, prio: body[short].prio, strategy: body[short].strategy}
			continue
		}
		worst := 0
		for i, l := range body {
			if l.prio >= body[worst].prio {
				worst = i
			}
		}
		body = append(body[:worst], body[worst+1:]...)
	}
	named(body, w)
	for _, l := range body {
		for _, r := range l.rows(w) {
			lines = append(lines, " "+r)
		}
	}
	return strings.Join(common.FitLines(lines, p.width, p.height), "\n")
}

// lines is everything the pane would say with room enough.
func (p *Model) lines() []restartLine {
	job := p.jobStatus()
	out := p.statusLines(job)
	out = append(out, p.alarmLines()...)
	out = append(out, p.strategyLines(job)...)
	out = append(out, p.failoverLines()...)
	if l, ok := p.failureLine(); ok {
		out = append(out, l)
	}
	return out
}

// jobStatus is the job's status, "—" while it has none.
func (p *Model) jobStatus() string {
	if job := p.ctx.Snap.Job.Status; job != "" {
		return job
	}
	return "—"
}

// statusLines say the job's status and, when restarting, the countdown
// to the next restart or, when it gave up, that it did: on one line when
// they fit, else on two.
func (p *Model) statusLines(job string) []restartLine {
	st := p.ctx.Styles
	snap := &p.ctx.Snap
	r := snap.Restart
	status := "job " + st.JobStatus(job).Render(job)
	var after string
	switch {
	case job == "RESTARTING" && !r.NextRestartAt.IsZero():
		after = st.Warning.Render("restarting in " + common.Countdown(r.NextRestartAt.Sub(common.JobNow(snap))))
	case r.GaveUp != "" || r.Status.GaveUp:
		after = st.Error.Render("gave up")
	}
	switch sep := st.Muted.Render(" · "); {
	case after == "":
		return []restartLine{{text: status}}
	case common.Width(status+sep+after) <= p.width-1:
		return []restartLine{{text: status + sep + after}}
	default:
		return []restartLine{{text: status}, {text: after}}
	}
}

// alarmLines say what the user must not miss: why the job gave up and
// the records individual failover lost.
func (p *Model) alarmLines() []restartLine {
	st := p.ctx.Styles
	r := p.ctx.Snap.Restart
	var out []restartLine
	if r.GaveUp != "" || r.Status.GaveUpReason != "" {
		why := r.GaveUp
		if why == "" {
			why = r.Status.GaveUpReason
		}
		out = append(out, restartLine{text: "gave up: " + why, prio: 1, wrap: true, style: st.Error})
	}
	if r.LostRecords > 0 {
		out = append(out, restartLine{text: r.Failover + " failover lost " + common.Thousands(r.LostRecords) + " records",
			prio: 0, wrap: true, style: st.Error})
	}
	return out
}

// strategyLines name the restart strategy with its parameters and say its
// budget for a job whose status is job.
func (p *Model) strategyLines(job string) []restartLine {
	st := p.ctx.Styles
	r := p.ctx.Snap.Restart
	var out []restartLine
	desc := r.Description
	if desc == "" {
		desc = r.Strategy
	}
	if desc != "" {
		// Wrapped: the parameters are numbers (exponential-delay's take
		// three lines of a narrow pane); the strategy's name when short.
		l := restartLine{text: desc, wrap: true, style: st.Bold, prio: 4, strategy: true}
		if r.Strategy != "" && r.Strategy != desc {
			l.short = st.Bold.Render(r.Strategy)
		}
		out = append(out, l)
	}
	if b := restartBudget(r, job); b != "" {
		out = append(out, p.budgetLine(r, b))
	}
	return out
}

// failoverLines name the failover strategy and the subtasks its last
// failover restarted, and the checkpoint the job last restored from.
func (p *Model) failoverLines() []restartLine {
	snap := &p.ctx.Snap
	r := snap.Restart
	failover := "failover " + r.Failover
	if r.Failover == "" {
		failover = "failover —"
	}
	switch n := len(r.LastRestarted); {
	case n == 0:
	case n <= 3:
		failover += ": restarted " + strings.Join(r.LastRestarted, " ")
	case common.Width(failover+": restarted "+common.Plural(n, "task", "tasks")) <= p.width-1:
		failover += ": restarted " + common.Plural(n, "task", "tasks")
	default:
		failover += ": " + common.Plural(n, "task", "tasks")
	}
	out := []restartLine{{text: failover, prio: 2}}
	if from := restoredFrom(snap.Checkpoints); from != "" {
		out = append(out, restartLine{text: from, prio: 2})
	}
	return out
}

// failureLine says what failed last and why, and ok is false when
// nothing failed.
func (p *Model) failureLine() (l restartLine, ok bool) {
	r := p.ctx.Snap.Restart
	if r.LastFailed == "" && r.LastError == "" {
		return restartLine{}, false
	}
	who := r.LastFailed
	if who == "" {
		who = "the job"
	}
	text := who + " failed"
	switch {
	case strings.HasPrefix(r.LastError, who+": "):
		text = r.LastError // the error names its subtask already
	case r.LastError != "":
		text = who + ": " + r.LastError
	}
	return restartLine{text: p.ctx.Styles.Warning.Render(text), prio: 3}, true
}

// restartBudget is the strategy's budget and its delay: "attempts 1/3 ·
// delay 1s", "failures 2/3 in 1m", "attempts 2 (unlimited) · last delay
// 2s". exponential-delay's delay grows, so outside a restart it is the
// last one, not the next.
func restartBudget(r view.Restart, job string) string {
	s := r.Status
	var out string
	switch {
	case s.MaxFailuresInWindow > 0 || r.Strategy == "failure-rate":
		out = "failures " + strconv.Itoa(s.FailuresInWindow) + "/" + strconv.Itoa(s.MaxFailuresInWindow) +
			" in " + common.HumanDuration(s.Window)
	case r.Strategy == "none":
		return "no restarts"
	case s.MaxAttempts > 0 || r.Strategy == "fixed-delay":
		out = "attempts " + strconv.Itoa(s.Attempts) + "/" + strconv.Itoa(s.MaxAttempts)
	case r.Strategy != "":
		out = "attempts " + strconv.Itoa(s.Attempts) + " (unlimited)"
	default:
		return ""
	}
	if s.NextDelay > 0 {
		delay := " · delay "
		if r.Strategy == "exponential-delay" && job != "RESTARTING" {
			delay = " · last delay "
		}
		out += delay + common.HumanDuration(s.NextDelay)
	}
	return out
}

// budgetLine is the line of budget b: when the strategy's line goes, its
// name comes here, "attempts 1/10" alone does not say whose (without the
// delay when the whole does not fit).
func (p *Model) budgetLine(r view.Restart, b string) restartLine {
	st := p.ctx.Styles
	l := restartLine{text: b, prio: 1}
	if r.Strategy != "" && r.Strategy != "none" {
		name := st.Bold.Render(r.Strategy) + st.Muted.Render(" · ")
		l.named = []string{name + b}
		if budget, _, ok := strings.Cut(b, " · "); ok {
			l.named = append(l.named, name+budget)
		}
	}
	return l
}

// named puts the strategy's name into the budget's line when the
// strategy's own line went for room and the name fits in w.
func named(body []restartLine, w int) {
	for _, l := range body {
		if l.strategy {
			return
		}
	}
	for i, l := range body {
		for _, n := range l.named {
			if common.Width(n) <= w {
				body[i].text = n
				break
			}
		}
	}
}

// restoredFrom is "restored from checkpoint 13 (2 restores)", or from a
// savepoint; "" before the first restore.
func restoredFrom(c view.Checkpoints) string {
	rs := c.Restored
	if len(rs) == 0 {
		return ""
	}
	kind := "checkpoint"
	if c.RestoredSavepoint {
		kind = "savepoint"
	}
	from := fmt.Sprintf("restored from %s %d", kind, rs[len(rs)-1])
	if len(rs) > 1 {
		from += fmt.Sprintf(" (%d restores)", len(rs))
	}
	return from
}
