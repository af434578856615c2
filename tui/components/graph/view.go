package graph

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
)

// graphGeom is the pane's column layout.
type graphGeom struct {
	labelW int // the operator column
	cellW  int // one subtask's column
	cols   int // the most subtasks of any operator
}

// idealCell is the cell width the label column gives way to.
const idealCell = 32

func (g *Model) geometry() graphGeom {
	cols, name, wide := 1, 0, 0
	for _, op := range g.ctx.Snap.Operators {
		cols = max(cols, op.Parallelism)
		name = max(name, common.Width(op.Name))
		wide = max(wide, common.Width(op.Name)) // a long name alone (an attached job's chain of operators)
		if e := edgeTexts(op); len(e) > 0 {
			wide = max(wide, common.Width(op.Name)+1+common.Width(e[0]))
		}
	}
	labelW := min(name, 16) + 1
	if extra := g.width - labelW - cols*idealCell; extra > 0 {
		labelW = max(labelW, min(wide+1, labelW+extra, 32))
	}
	return graphGeom{labelW: labelW, cellW: max((g.width-labelW)/cols, 1), cols: cols}
}

// View implements tea.Model.
func (g *Model) View() string {
	st := g.ctx.Styles
	sep := st.Muted.Render(" · ")
	var info []string
	load := ""
	if sel := g.Selected(); sel != "" {
		info = append(info, st.Focus.Render("▸"+sel))
		load = g.loadText(sel)
	}
	if a := g.ctx.Snap.Job.Attempt; a > 1 {
		info = append(info, st.Muted.Render("attempt "+strconv.FormatInt(a, 10)))
	}
	short := info
	if p := g.ctx.PendingCheckpoint(); p != nil {
		pending := "checkpoint " + strconv.FormatInt(p.ID, 10) + " pending · "
		acks := strconv.Itoa(p.Acked) + "/" + strconv.Itoa(p.Total) + " acked"
		kind := ""
		switch common.AlignmentKind(p, g.ctx.CheckpointMode(p)) {
		case common.KindUnaligned:
			kind = "unaligned · "
		case common.KindTimedOut:
			kind = "timeout → unaligned · "
		}
		short = append(slices.Clip(info), st.Info.Render(pending+acks))
		info = append(info, st.Info.Render(pending+kind+acks))
	} else if id := g.ctx.Snap.Checkpoints.LastCompleted; id > 0 {
		info = append(info, st.Muted.Render("checkpoint "+strconv.FormatInt(id, 10)+" completed"))
		short = info
	}
	// The rule keeps its info only when it fits: the selected subtask's
	// load goes first, then the checkpoint's kind.
	text := strings.Join(info, sep)
	if load != "" {
		withLoad := slices.Insert(slices.Clone(info), 1, st.Muted.Render(load))
		if t := strings.Join(withLoad, sep); common.Width(t)+13 <= g.width {
			text = t
		}
	}
	if common.Width(text)+13 > g.width { // the rule's lines and title take 13 cells
		text = strings.Join(short, sep)
	}
	lines := []string{common.Rule(st, "job", text, g.width, g.focused)}
	lines = append(lines, g.body(g.height-1)...)
	return strings.Join(common.FitLines(lines, g.width, g.height), "\n")
}

// body renders the rows in h lines, scrolled so the selected row shows
// (in a tour, the row of the subtask the tour points at).
func (g *Model) body(h int) []string {
	ops := g.ctx.Snap.Operators
	if len(ops) == 0 {
		return []string{g.ctx.Styles.Muted.Render(" waiting for the first sample of the job…")}
	}
	geo := g.geometry()
	_, roomy := g.Heights()
	all := h >= roomy
	pend := g.ctx.PendingCheckpoint()
	// The row whose strips show when not all do, and that stays in view:
	// the selected one, or the one whose subtask the tour points at.
	shown, stripped := g.selOp, g.selOp
	if hl := g.ctx.Highlight(); hl.Task != "" && slices.ContainsFunc(ops, func(o view.Operator) bool { return o.Name == taskOperator(hl.Task) }) {
		shown = taskOperator(hl.Task)
		if hl.Inputs {
			stripped = shown
		}
	}
	var lines []string
	var lineOps []view.Operator
	selEnd := 0
	for _, op := range ops {
		strips := len(op.Inputs) > 0 && (all || op.Name == stripped)
		lines = append(lines, g.row(op, geo, strips, pend)...)
		for len(lineOps) < len(lines) {
			lineOps = append(lineOps, op)
		}
		if op.Name == shown {
			selEnd = len(lines)
		}
	}
	if selEnd > h {
		lines, lineOps = lines[selEnd-h:], lineOps[selEnd-h:]
	}
	g.shown = shownRows{ops: lineOps, geo: geo}
	return lines
}

// shownRows is what the last View drew, for a mouse click: the operator
// of each body line, and the columns.
type shownRows struct {
	ops []view.Operator
	geo graphGeom
}

// SelectAt selects the subtask drawn at column x of body line y (the
// pane's line y+1, under its rule), its cell or its strips, and reports
// whether one is there.
func (g *Model) SelectAt(x, y int) bool {
	if y < 0 || y >= len(g.shown.ops) || x < g.shown.geo.labelW {
		return false
	}
	op := g.shown.ops[y]
	i := (x - g.shown.geo.labelW) / max(g.shown.geo.cellW, 1)
	if i >= op.Parallelism {
		return false
	}
	g.selOp, g.selIdx = op.Name, i
	return true
}

// row renders one operator: its core line and, when strips is set, one
// line per input channel.
func (g *Model) row(op view.Operator, geo graphGeom, strips bool, pend *view.Checkpoint) []string {
	st := g.ctx.Styles
	k := 0
	if strips {
		k = g.channelLines(op)
	}
	tasks := make([]view.Task, op.Parallelism)
	for i := range tasks {
		tasks[i] = g.ctx.Snap.Tasks[common.TaskName(op.Name, i)]
	}
	labels, inline := channelLabels(tasks, k)

	lines := make([]string, 1+k)
	var b strings.Builder
	b.WriteString(common.PadRight(g.opLabel(op, geo.labelW-1), geo.labelW))
	for i := range op.Parallelism {
		b.WriteString(common.PadRight(g.coreLine(op, i, tasks[i], geo.cellW, pend), geo.cellW))
	}
	lines[0] = b.String()

	suffixW := 5
	if k > 1 {
		suffixW = 10
	}
	for c := range k {
		b.Reset()
		label := ""
		if c < len(labels) {
			label = labels[c]
		}
		b.WriteString(common.PadLeft(st.Muted.Render(label), geo.labelW))
		for _, t := range tasks {
			b.WriteString(common.PadRight(g.stripLine(t, c, geo.cellW, suffixW, inline), geo.cellW))
		}
		lines[1+c] = b.String()
	}
	return lines
}

// opLabel is the operator's name and, when it fits, its input edges.
func (g *Model) opLabel(op view.Operator, w int) string {
	st := g.ctx.Styles
	name := st.Bold.Render(common.Truncate(op.Name, w))
	for _, e := range edgeTexts(op) {
		if common.Width(op.Name)+1+common.Width(e) <= w {
			return name + " " + st.Muted.Render(e)
		}
	}
	return name
}

// edgeTexts describes an operator's inputs, longest first: "← hash(customer)",
// "← hash"; "⋈" for a join; a source's topic; a sink's topic after "→".
func edgeTexts(op view.Operator) []string {
	if len(op.Inputs) == 0 {
		if op.Topic != "" {
			return []string{"← " + op.Topic}
		}
		return nil
	}
	arrow := "←"
	if op.Type == "join" {
		arrow = "⋈"
	}
	long, short := edgeKinds(op.Inputs, true), edgeKinds(op.Inputs, false)
	out := []string{arrow + " " + long}
	if op.Type == "sink" && op.Topic != "" {
		out = []string{arrow + " " + long + " → " + op.Topic, arrow + " " + short + " → " + op.Topic, out[0]}
	}
	if short != long {
		out = append(out, arrow+" "+short)
	}
	return out
}

// edgeKinds names the kinds of edges, once when they are all alike.
func edgeKinds(edges []view.Edge, long bool) string {
	var parts []string
	for _, e := range edges {
		s := e.Kind
		switch {
		case long && e.Kind == "hash" && e.Key != "":
			s = "hash(" + e.Key + ")"
		case !long && e.Kind == "forward":
			s = "fwd"
		case !long && e.Kind == "rebalance":
			s = "rebal"
		case !long && e.Kind == "broadcast":
			s = "bcast"
		}
		if !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ",")
}

// taskOperator is the operator of a subtask named "operator/index".
func taskOperator(task string) string {
	if i := strings.LastIndexByte(task, '/'); i >= 0 {
		return task[:i]
	}
	return task
}

// channelLabels names the strip lines of a row. When every subtask of the
// row has the same upstream subtasks in the same order (hash, rebalance
// and broadcast edges) the label column names them and inline is false;
// otherwise (forward edges: each subtask reads its own upstream subtask)
// the label column names the upstream operator and each strip starts with
// the upstream subtask's index.
func channelLabels(tasks []view.Task, k int) (labels []string, inline bool) {
	var ref []view.InputView
	same := true
	for _, t := range tasks {
		if len(t.Inputs) == 0 {
			continue
		}
		if ref == nil {
			ref = t.Inputs
			continue
		}
		if !slices.EqualFunc(ref, t.Inputs, func(a, b view.InputView) bool { return a.From == b.From }) {
			same = false
		}
	}
	if ref == nil {
		return nil, false
	}
	labels = make([]string, k)
	for c := range min(k, len(ref)) {
		from := ref[c].From
		if !same {
			from, _, _ = strings.Cut(from, "/")
		}
		labels[c] = from
	}
	return labels, !same
}

// loadText is a running subtask's load as Flink measures it, in ms per
// second (busy, idle, back-pressured), its records in and out, and its
// input watermark when it keeps one: "busy 980 idle 0 bp 20 ms/s · in
// 12,345 out 12,300 · wm 12:01:07".
func (g *Model) loadText(name string) string {
	t, ok := g.ctx.Snap.Tasks[name]
	if !ok || t.Status != "RUNNING" {
		return ""
	}
	ms := func(f float64) string { return strconv.Itoa(int(f*1000 + 0.5)) }
	idle := max(1-t.Busy-t.BackPressureRatio, 0)
	text := "busy " + ms(t.Busy) + " idle " + ms(idle) + " bp " + ms(t.BackPressureRatio) + " ms/s · in " +
		common.Thousands(t.RecordsIn) + " out " + common.Thousands(t.RecordsOut)
	if t.Watermark > 0 {
		text += " · wm " + time.UnixMilli(t.Watermark).Format("15:04:05")
	}
	return text
}
