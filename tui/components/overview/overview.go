// Package overview is the checkpoints' summary and configuration overlay
// (Flink's web UI: Checkpoints → Summary and Configuration).
package overview

import (
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
)

// Model shows the checkpoint summary (min, average, max and 99th
// percentile over the completed checkpoints of the history) and the
// checkpointing configuration under Flink's keys. ↑/↓ scroll it when it
// is taller than the terminal; i or esc closes it.
type Model struct {
	ctx           *common.Context
	width, height int
	top           int
}

// New returns the overlay; it draws what ctx holds.
func New(ctx *common.Context) *Model { return &Model{ctx: ctx} }

// Every pane and overlay is a Component.
var _ common.Component = (*Model)(nil)

// Init implements tea.Model.
func (o *Model) Init() tea.Cmd { return nil }

// SetSize implements Component.
func (o *Model) SetSize(w, h int) { o.width, o.height = w, h }

// ShortHelp implements help.KeyMap.
func (o *Model) ShortHelp() []key.Binding {
	if len(o.lines()) > o.rows() {
		return []key.Binding{o.ctx.Keys.Scroll, o.ctx.Keys.CloseOverview}
	}
	return []key.Binding{o.ctx.Keys.CloseOverview}
}

// FullHelp implements help.KeyMap.
func (o *Model) FullHelp() [][]key.Binding { return [][]key.Binding{o.ShortHelp()} }

// Update implements tea.Model: i and esc close it, arrows scroll it.
func (o *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return o, nil
	}
	k := o.ctx.Keys
	if key.Matches(km, k.Overview, k.Back) {
		o.top = 0
		return o, func() tea.Msg { return common.CloseOverlayMsg{} }
	}
	o.top = k.ScrollTop(km, o.top, o.rows(), len(o.lines()))
	return o, nil
}

// rows is how many lines show below the rule.
func (o *Model) rows() int { return max(o.height-1, 1) }

// View implements tea.Model.
func (o *Model) View() string {
	st := o.ctx.Styles
	lines := o.lines()
	info := "i/esc close"
	if len(lines) > o.rows() {
		info = strconv.Itoa(o.top+1) + "–" + strconv.Itoa(min(len(lines), o.top+o.rows())) + " of " + strconv.Itoa(len(lines)) + " · " + info
	}
	out := []string{common.Rule(st, "checkpoints: summary and configuration", st.Muted.Render(info), o.width, true)}
	top := max(min(o.top, len(lines)-o.rows()), 0)
	out = append(out, lines[top:min(len(lines), top+o.rows())]...)
	return strings.Join(common.FitLines(out, o.width, o.height), "\n")
}

// lines is the whole overlay, before scrolling.
func (o *Model) lines() []string {
	st := o.ctx.Styles
	snap := &o.ctx.Snap
	s := Summarize(snap)
	const nameW, numW = 22, 9
	head := func(title string) string {
		t := " " + common.PadRight(title, nameW)
		for _, c := range []string{"min", "avg", "max", "p99"} {
			t += " " + common.PadLeft(c, numW)
		}
		return st.TableHeader.Render(t)
	}
	row := func(r Row) string {
		t := " " + common.PadRight(r.Name, nameW)
		for _, x := range []float64{r.Spread.Min, r.Spread.Avg, r.Spread.Max, r.Spread.P99} {
			t += " " + common.PadLeft(r.cell(x), numW)
		}
		return t
	}
	var out []string
	if rep := snap.Checkpoints.Reported; rep != nil {
		// The job's own summary covers every completed checkpoint; the
		// history's below covers the ones it still holds.
		out = append(out, st.Bold.Render(" summary")+st.Muted.Render(" of all "+common.Plural(snap.Checkpoints.Completed, "completed checkpoint", "completed checkpoints")+
			", as the job reports it (Flink's REST API: Checkpoints → Summary)"))
		out = append(out, head("per checkpoint"))
		for _, r := range Reported(rep) {
			out = append(out, row(r))
		}
		out = append(out, "")
	}
	if s.Checkpoints == 0 {
		out = append(out, st.Muted.Render(" summary: no completed checkpoint in the history yet"))
	} else {
		out = append(out, st.Bold.Render(" summary")+st.Muted.Render(" of the "+common.Plural(s.Checkpoints, "completed checkpoint", "completed checkpoints")+
			" in the history, durations on the job's clock (Flink: Checkpoints → Summary)"))
		out = append(out, head("per checkpoint"))
		for _, r := range s.PerCheckpoint {
			out = append(out, row(r))
		}
		out = append(out, head("per subtask ("+strconv.Itoa(s.Acks)+" acks)"))
		for _, r := range s.PerSubtask {
			out = append(out, row(r))
		}
	}
	out = append(out, "", st.Bold.Render(" configuration")+st.Muted.Render(" (Checkpoints → Configuration; .x is "+checkpointingKeys+"x)"))
	for _, c := range Configuration(snap.Job) {
		flinkKey := c[2]
		if rest, ok := strings.CutPrefix(flinkKey, checkpointingKeys); ok {
			flinkKey = "." + rest
		}
		out = append(out, " "+common.PadRight(c[0], 18)+" "+common.PadRight(c[1], 23)+" "+st.Muted.Render(flinkKey))
	}
	return out
}

// checkpointingKeys is the prefix of Flink's checkpointing keys, said once
// above them.
const checkpointingKeys = "execution.checkpointing."

// Configuration is the checkpointing configuration of job, each entry its
// name, its value and Flink's key for it.
func Configuration(job view.JobInfo) [][3]string {
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	orNever := func(d time.Duration, never string) string {
		if d <= 0 {
			return never
		}
		return common.RoundDuration(d)
	}
	mode := job.Mode
	if mode == "" {
		mode = "—"
	}
	backend := job.StateBackend
	switch backend {
	case "heap":
		backend = "heap (Flink: hashmap)"
	case "badger":
		backend = "badger (Flink: rocksdb)"
	}
	return [][3]string{
		{"mode", mode, "execution.checkpointing.mode"},
		{"interval", orNever(job.Interval, "off (manual only)"), "execution.checkpointing.interval"},
		{"timeout", orNever(job.CheckpointTimeout, "—"), "execution.checkpointing.timeout"},
		{"min pause", orNever(job.MinPause, "0s"), "execution.checkpointing.min-pause"},
		{"max concurrent", strconv.Itoa(job.MaxConcurrent), "execution.checkpointing.max-concurrent-checkpoints"},
		{"tolerable failed", strconv.Itoa(job.TolerableFailures), "execution.checkpointing.tolerable-failed-checkpoints"},
		{"unaligned", onOff(job.Unaligned), "execution.checkpointing.unaligned.enabled"},
		{"aligned timeout", orNever(job.AlignedTimeout, "0 (never switches)"), "execution.checkpointing.aligned-checkpoint-timeout"},
		{"retained", strconv.Itoa(job.Retained), "execution.checkpointing.num-retained"},
		{"state backend", backend, "state.backend.type"},
		{"checkpoint storage", orDash(job.CheckpointStorage), "state.checkpoint-storage"},
		{"classic name", orDash(common.ClassicBackend(job.StateBackend, job.CheckpointStorage)), "(before Flink 1.13)"},
		{"incremental", onOff(job.Incremental), "execution.checkpointing.incremental"},
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
