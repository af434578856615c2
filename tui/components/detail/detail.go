// Package detail is the detail view of one checkpoint (Flink's web UI: a
// checkpoint's per-subtask statistics).
package detail

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
)

// Model is the detail view of one checkpoint (Flink's web UI: a
// checkpoint's per-subtask statistics): for every subtask, whether it
// acknowledged, its synchronous and asynchronous snapshot durations, its
// alignment duration (for an at-least-once checkpoint, which aligns
// nothing, the records it processed after the barrier instead), its start
// delay (trigger to first barrier) and the size of its state, full and
// incremental; for a checkpoint with in-flight data or triggered
// unaligned, also how it handled its barriers (aligned, unaligned, timed
// out) and its persisted and processed in-flight data, the columns that
// fit first. Above them: why it failed, why a restore could not use it,
// how many records a restore from it reads again, its in-flight data, and
// which subtasks the aligned-checkpoint timeout switched to unaligned. A
// pending checkpoint's detail fills in with every sample.
type Model struct {
	ctx           *common.Context
	width, height int
	id            int64
	top           int
}

// New returns the view; it draws what ctx holds.
func New(ctx *common.Context) *Model { return &Model{ctx: ctx} }

// Every pane and overlay is a Component.
var _ common.Component = (*Model)(nil)

// Open shows checkpoint id from its first row.
func (d *Model) Open(id int64) { d.id, d.top = id, 0 }

// ID is the checkpoint shown.
func (d *Model) ID() int64 { return d.id }

// Init implements tea.Model.
func (d *Model) Init() tea.Cmd { return nil }

// SetSize implements Component.
func (d *Model) SetSize(w, h int) { d.width, d.height = w, h }

// ShortHelp implements help.KeyMap.
func (d *Model) ShortHelp() []key.Binding {
	return []key.Binding{d.ctx.Keys.Scroll, d.ctx.Keys.Back}
}

// FullHelp implements help.KeyMap.
func (d *Model) FullHelp() [][]key.Binding {
	k := d.ctx.Keys
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Back}}
}

// Update implements tea.Model: arrows scroll, esc closes.
func (d *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return d, nil
	}
	k := d.ctx.Keys
	rows := d.tableRows(len(d.summary(d.ctx.CheckpointByID(d.id))))
	if key.Matches(km, k.Back) {
		return d, func() tea.Msg { return common.CloseOverlayMsg{} }
	}
	d.top = k.ScrollTop(km, d.top, rows, len(d.subtasks()))
	return d, nil
}

// tableRows is how many subtask rows fit below the rule, a summary of
// summary lines and the table's head.
func (d *Model) tableRows(summary int) int { return max(d.height-2-summary, 1) }

// subtasks lists the subtasks of the checkpoint in spec order, then any the
// job no longer has.
func (d *Model) subtasks() []string {
	names := d.ctx.TaskNames()
	c := d.ctx.CheckpointByID(d.id)
	if c == nil {
		return names
	}
	var extra []string
	add := func(s string) {
		if !slices.Contains(names, s) && !slices.Contains(extra, s) {
			extra = append(extra, s)
		}
	}
	for id := range c.AckedTasks {
		add(id)
	}
	for _, id := range c.WaitingFor {
		add(id)
	}
	slices.Sort(extra)
	return append(names, extra...)
}

// summary is what the view says of checkpoint c above its table.
func (d *Model) summary(c *view.Checkpoint) []string {
	if c == nil {
		return nil
	}
	out := d.joined(d.facts(c))
	out = append(out, d.joined(d.figures(c))...)
	notes := d.notes(c)
	if len(notes) == 0 {
		notes = []string{""} // nothing more to say: a blank line before the table
	}
	return append(out, notes...)
}

// facts are the first things the view says of checkpoint c: its status,
// whether it is a restored savepoint, its mode, its acknowledgements, when
// it was triggered and how long it ran or took.
func (d *Model) facts(c *view.Checkpoint) []string {
	st := d.ctx.Styles
	word, style := common.CheckpointWord(st, c)
	facts := []string{style.Render(word)}
	if c.Restored && c.Savepoint {
		facts = append(facts, "savepoint")
	}
	if m := d.ctx.CheckpointMode(c); m != "" {
		facts = append(facts, m)
	}
	facts = append(facts, common.AckText(c)+" acknowledged", "triggered "+common.WallClock(c.TriggerTime))
	took := common.HumanDuration(common.CheckpointDuration(&d.ctx.Snap, c))
	if note := common.FrozenNote(c.Frozen); note != "" {
		took += " (job time; the world stood " + note + " of it)"
	}
	if c.Status == view.StatusPending {
		return append(facts, st.Info.Render("running for "+took))
	}
	return append(facts, "end to end "+took)
}

// figures are checkpoint c's sizes, full and incremental, and its longest
// alignment or, at-least-once, why it has none.
func (d *Model) figures(c *view.Checkpoint) []string {
	alignment := "longest alignment " + common.HumanDuration(c.MaxAlignment)
	if d.ctx.CheckpointMode(c) == common.AtLeastOnce {
		alignment = "no alignment: barriers are counted, no input is held back"
	}
	return []string{"size " + common.HumanBytes(c.FullBytes) + " full",
		common.HumanBytes(c.IncrementalBytes) + " incremental", alignment}
}

// notes are what more the view says of checkpoint c, below its facts and
// figures: why it failed or a restore passed over it, or what it waits
// for; its in-flight data; how its barriers were handled; and, for an
// at-least-once checkpoint, the records processed after them.
func (d *Model) notes(c *view.Checkpoint) []string {
	st := d.ctx.Styles
	var out []string
	switch {
	case c.Status == view.StatusFailed:
		out = d.said("failed: "+common.CheckpointNote(c), st.Error)
	case c.Damaged != "":
		out = d.said("DAMAGED: "+c.Damaged+" — a restore passed over it and went back to an older checkpoint", st.Error)
	case len(c.WaitingFor) > 0:
		out = []string{" " + st.Info.Render("waiting for "+common.Plural(len(c.WaitingFor), "subtask", "subtasks"))}
	}
	if d.inFlight(c) {
		out = append(out, d.inFlightData(c)...)
	}
	out = append(out, d.kindNote(c)...)
	if d.ctx.CheckpointMode(c) == common.AtLeastOnce {
		out = append(out, d.said(afterBarrierText(d.ctx.Snap.Operators, c), st.Warning)...)
	}
	return out
}

// inFlightData says checkpoint c's persisted in-flight data, with its
// records, and its processed in-flight data.
func (d *Model) inFlightData(c *view.Checkpoint) []string {
	persisted := "persisted in-flight data " + common.HumanBytes(c.PersistedInFlight)
	if n := common.PersistedRecords(c); n > 0 {
		persisted += " (" + common.Plural(int(n), "record", "records") + ")"
	}
	return d.joined([]string{persisted, "processed in-flight data " + common.HumanBytes(c.ProcessedInFlight)})
}

// kindNote explains how checkpoint c's barriers were handled when they
// were not aligned: timed out (and which subtasks the aligned-checkpoint
// timeout switched) or unaligned; nothing otherwise.
func (d *Model) kindNote(c *view.Checkpoint) []string {
	st := d.ctx.Styles
	switch kind := common.AlignmentKind(c, d.ctx.CheckpointMode(c)); {
	case kind == common.KindTimedOut:
		timeout := "the aligned-checkpoint timeout"
		if t := d.ctx.Snap.Job.AlignedTimeout; t > 0 {
			timeout += " (" + common.RoundDuration(t) + ")"
		}
		who := strings.Join(c.TimedOut, ", ")
		return d.said("timed out → unaligned: "+who+" — the checkpoint was older than "+timeout+
			" when it reached them: they took their snapshot unaligned and stored the records in flight with it", st.Warning)
	case kind == common.KindUnaligned:
		return d.said("unaligned: the barriers overtook the records in flight; each subtask took its snapshot at its first barrier "+
			"and stored the records it overtook as channel state, processed after the snapshot", st.Info)
	}
	return nil
}

// joined is parts joined by a muted " · " on as many lines of the view's
// width as they take, each line indented by one cell.
func (d *Model) joined(parts []string) []string {
	var out []string
	for _, l := range common.JoinWrapped(parts, d.ctx.Styles.Muted.Render(" · "), d.width-2) {
		out = append(out, " "+l)
	}
	return out
}

// said is text in style, wrapped on at most three lines of the view's
// width, each line indented by one cell.
func (d *Model) said(text string, style lipgloss.Style) []string {
	var out []string
	for _, l := range common.Wrap(text, d.width-2, 3) {
		out = append(out, " "+style.Render(l))
	}
	return out
}

// View implements tea.Model.
func (d *Model) View() string {
	st := d.ctx.Styles
	c := d.ctx.CheckpointByID(d.id)
	title := "checkpoint " + strconv.FormatInt(d.id, 10)
	lines := []string{common.Rule(st, title, st.Muted.Render("esc close"), d.width, true)}
	if c == nil {
		lines = append(lines, st.Muted.Render(" checkpoint "+strconv.FormatInt(d.id, 10)+" is no longer in the history"))
		return strings.Join(common.FitLines(lines, d.width, d.height), "\n")
	}
	if c.Savepoint {
		title = "savepoint " + strconv.FormatInt(d.id, 10)
		lines[0] = common.Rule(st, title, st.Muted.Render("esc close"), d.width, true)
	}
	summary := d.summary(c)
	lines = append(lines, summary...)
	rows := d.tableRows(len(summary))

	alo := d.ctx.CheckpointMode(c) == common.AtLeastOnce
	names := d.subtasks()
	nameW := 8
	for _, n := range names {
		nameW = max(nameW, common.Width(n))
	}
	nameW = min(nameW, 32)
	typed := d.inFlight(c)
	cols := d.columns(c, alo, d.width-2-nameW-9-typeW(typed))
	var head strings.Builder
	head.WriteString(" " + common.PadRight("subtask", nameW) + " " + common.PadRight("ack", 9))
	if typed {
		head.WriteString(" " + common.PadRight("type", 9))
	}
	for _, col := range cols {
		head.WriteString(" " + common.PadLeft(col.title, col.w))
	}
	lines = append(lines, st.TableHeader.Render(head.String()))

	acks := c.AckedTasks
	waiting := map[string]bool{}
	for _, id := range c.WaitingFor {
		waiting[id] = true
	}
	top := max(min(d.top, len(names)-rows), 0)
	for _, n := range names[top:min(len(names), top+rows)] {
		var b strings.Builder
		if n == d.ctx.Selected {
			b.WriteString(st.Selected.Render("▸"+common.PadRight(common.TruncateTask(n, nameW), nameW)) + " ")
		} else {
			b.WriteString(" " + common.PadRight(common.TruncateTask(n, nameW), nameW) + " ")
		}
		a, ok := acks[n]
		switch {
		case ok && a.Finished:
			b.WriteString(st.Muted.Render(common.PadRight("✓ finished", 9)))
		case ok:
			b.WriteString(st.Success.Render(common.PadRight("✓ acked", 9)))
		case waiting[n] && c.Status == view.StatusFailed:
			b.WriteString(st.Error.Render(common.PadRight("✗ never", 9)))
		case waiting[n]:
			b.WriteString(st.Info.Render(common.PadRight("○ waiting", 9)))
		default:
			b.WriteString(st.Muted.Render(common.PadRight("—", 9)))
		}
		if ok {
			if typed {
				kind, style := d.subtaskKind(n, a, alo)
				b.WriteString(" " + style.Render(common.PadRight(kind, 9)))
			}
			for _, col := range cols {
				b.WriteString(" " + common.PadLeft(col.cell(a), col.w))
			}
		}
		lines = append(lines, b.String())
	}
	if len(names) > rows {
		lines[0] = common.Rule(st, title, st.Muted.Render(strconv.Itoa(top+1)+"–"+
			strconv.Itoa(min(len(names), top+rows))+" of "+strconv.Itoa(len(names))+" · esc close"), d.width, true)
	}
	return strings.Join(common.FitLines(lines, d.width, d.height), "\n")
}

// inFlight reports whether the detail of c says how its subtasks handled
// their barriers and what in-flight data they stored and processed: when
// it has any, or was triggered unaligned.
func (d *Model) inFlight(c *view.Checkpoint) bool {
	return common.InFlight(c) || d.ctx.CheckpointMode(c) == common.ExactlyOnceUnaligned
}

// typeW is the width of the type column with its separator, 0 without.
func typeW(typed bool) int {
	if typed {
		return 10
	}
	return 0
}

// subtaskKind is how subtask n handled the barriers of the checkpoint it
// acknowledged with a: "unaligned", "timed out" (the aligned-checkpoint
// timeout switched it), "aligned", or "—" for a subtask without input
// channels or an at-least-once checkpoint, which align nothing.
func (d *Model) subtaskKind(n string, a view.SubtaskAck, alo bool) (string, lipgloss.Style) {
	st := d.ctx.Styles
	switch {
	case a.TimedOut:
		return common.KindTimedOut, common.KindStyle(st, common.KindTimedOut)
	case a.Unaligned:
		return common.KindUnaligned, common.KindStyle(st, common.KindUnaligned)
	case alo:
		return "—", st.Muted
	}
	if t, ok := d.ctx.Snap.Tasks[n]; ok && len(t.Inputs) == 0 {
		return "—", st.Muted // a source: no channel to align
	}
	return common.KindAligned, common.KindStyle(st, common.KindAligned)
}

// ackCol is one figure column of the subtasks' table.
type ackCol struct {
	title string
	w     int
	cell  func(a view.SubtaskAck) string
}

// columns are the figure columns that fit in w cells, kept in the order
// a reader wants them (sync, async, alignment or records after the
// barrier, persisted and processed in-flight data when the checkpoint
// has any, full size, start delay, incremental size) and shown in Flink's
// order.
func (d *Model) columns(c *view.Checkpoint, alo bool, w int) []ackCol {
	const numW = 7
	dur := func(f func(view.SubtaskAck) time.Duration) func(view.SubtaskAck) string {
		return func(a view.SubtaskAck) string { return common.HumanDuration(f(a)) }
	}
	size := func(f func(view.SubtaskAck) int64) func(view.SubtaskAck) string {
		return func(a view.SubtaskAck) string { return common.HumanBytes(f(a)) }
	}
	third := ackCol{"align", numW, dur(func(a view.SubtaskAck) time.Duration { return a.Alignment })}
	if alo {
		// Records processed after the barrier.
		third = ackCol{"after", numW, func(a view.SubtaskAck) string { return common.Thousands(a.AfterBarrier) }}
	}
	all := []struct {
		prio int
		col  ackCol
	}{
		// Flink's acknowledgement time and end-to-end duration (trigger
		// to acknowledgement, on the job's clock).
		{9, ackCol{"acked at", 12, func(a view.SubtaskAck) string { return common.WallClock(a.AckTime) }}},
		{4, ackCol{"e2e", numW, dur(func(a view.SubtaskAck) time.Duration { return a.EndToEnd })}},
		{0, ackCol{"sync", numW, dur(func(a view.SubtaskAck) time.Duration { return a.SyncDuration })}},
		{1, ackCol{"async", numW, dur(func(a view.SubtaskAck) time.Duration { return a.AsyncDuration })}},
		{2, third},
		{7, ackCol{"delay", numW, dur(func(a view.SubtaskAck) time.Duration { return a.StartDelay })}},
		{6, ackCol{"full", numW, size(func(a view.SubtaskAck) int64 { return a.Bytes })}},
		{8, ackCol{"incr", numW, size(func(a view.SubtaskAck) int64 { return a.IncrementalBytes })}},
	}
	if d.inFlight(c) {
		all = append(all, []struct {
			prio int
			col  ackCol
		}{
			{3, ackCol{"persisted", 9, size(func(a view.SubtaskAck) int64 { return a.PersistedInFlight })}},
			{5, ackCol{"processed", 9, size(func(a view.SubtaskAck) int64 { return a.ProcessedInFlight })}},
		}...)
	}
	keep := make([]bool, len(all))
	used := 0
	for prio := range 10 {
		for i, col := range all {
			if col.prio == prio && used+1+col.col.w <= w {
				keep[i] = true
				used += 1 + col.col.w
			}
		}
	}
	var cols []ackCol
	for i, col := range all {
		if keep[i] {
			cols = append(cols, col.col)
		}
	}
	return cols
}

// afterBarrierText says what an at-least-once checkpoint's "after" counts,
// per operator (the subtask table has them per subtask): the records a
// subtask handled between its first barrier and its snapshot, which its
// state holds and a restore reads again. They are not the output's
// duplicates: one record counts at each operator it passed early, and only
// those that reached the sink ahead of its barrier and made an output
// (an order still waiting for its payment makes none) are committed twice.
func afterBarrierText(ops []view.Operator, c *view.Checkpoint) string {
	by := map[string]int64{}
	for task, a := range c.AckedTasks {
		op, _, _ := strings.Cut(task, "/")
		by[op] += a.AfterBarrier
	}
	var parts []string
	for _, op := range ops {
		if n := by[op.Name]; n > 0 {
			parts = append(parts, op.Name+" "+common.Thousands(n))
		}
	}
	if len(parts) == 0 {
		return "processed after the barrier: none — a restore from this checkpoint reads nothing again"
	}
	return "processed after the barrier: " + strings.Join(parts, " · ") +
		" — read again after a restore. One record counts at each operator it passed early;" +
		" only those that made an output ahead of the sink's barrier are committed twice (verify: dup)"
}
