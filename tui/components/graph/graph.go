// Package graph is the job graph pane (Flink: the ExecutionGraph) with the
// queue strips of the subtasks' input channels.
package graph

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"faultline/runtime/view"
	"faultline/tui/common"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// Model draws the job graph (Flink: the ExecutionGraph): one row per
// operator in spec order, which is topological, one cell per subtask with
// its status word, records/s, back-pressure and, for sources, the next
// offset of each partition; and under the cells of a subtask with input
// channels, one queue strip per channel with the barriers at their places,
// so that a barrier can be followed hop by hop and alignment seen holding
// channels back.
//
// Strips show for every subtask with input channels when the pane is tall
// enough, else only for the row of the selected subtask; which rows show
// strips does not depend on what the job is doing, so the layout never
// jumps when an alignment starts or ends. Subtasks without strips still say
// "ALIGNING #14 38ms" in their cell.
type Model struct {
	ctx           *common.Context
	width, height int // the height counts the rule line
	focused       bool

	// The selection: operator name and subtask index, kept by name so that
	// it survives new samples; chosen is false until the first sample.
	selOp  string
	selIdx int
	chosen bool
}

// New returns the pane; it draws what ctx holds.
func New(ctx *common.Context) *Model { return &Model{ctx: ctx} }

// Every pane and overlay is a Component.
var _ common.Component = (*Model)(nil)

// Init implements tea.Model.
func (g *Model) Init() tea.Cmd { return nil }

// SetSize implements Component.
func (g *Model) SetSize(w, h int) { g.width, g.height = w, h }

// SetFocused tells the pane whether it has the focus.
func (g *Model) SetFocused(f bool) { g.focused = f }

// ShortHelp implements help.KeyMap.
func (g *Model) ShortHelp() []key.Binding { return []key.Binding{g.ctx.Keys.Select} }

// FullHelp implements help.KeyMap.
func (g *Model) FullHelp() [][]key.Binding {
	k := g.ctx.Keys
	return [][]key.Binding{{k.Up, k.Down, k.Left, k.Right, k.Fault}}
}

// Selected is the selected subtask, "operator/index", or "".
func (g *Model) Selected() string {
	if !g.chosen {
		return ""
	}
	return common.TaskName(g.selOp, g.selIdx)
}

// Update implements tea.Model: samples keep the selection valid, arrows
// and hjkl move it.
func (g *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case common.SnapshotMsg:
		g.keepSelection()
	case tea.KeyMsg:
		k := g.ctx.Keys
		switch {
		case key.Matches(msg, k.Up):
			g.moveOperator(-1)
		case key.Matches(msg, k.Down):
			g.moveOperator(+1)
		case key.Matches(msg, k.Left):
			g.moveSubtask(-1)
		case key.Matches(msg, k.Right):
			g.moveSubtask(+1)
		}
	}
	return g, nil
}

// keepSelection selects a subtask when there is none (the first one with
// several input channels, where alignment happens, else the first), and
// moves it into range when the job changed.
func (g *Model) keepSelection() {
	ops := g.ctx.Snap.Operators
	if len(ops) == 0 {
		return
	}
	if i := g.opIndex(); !g.chosen || i < 0 {
		g.selOp, g.selIdx, g.chosen = ops[0].Name, 0, true
		for _, name := range g.ctx.TaskNames() {
			if len(g.ctx.Snap.Tasks[name].Inputs) > 1 {
				t := g.ctx.Snap.Tasks[name]
				g.selOp, g.selIdx = t.Operator, t.Index
				break
			}
		}
		return
	}
	g.selIdx = min(g.selIdx, max(ops[g.opIndex()].Parallelism-1, 0))
}

func (g *Model) opIndex() int {
	return slices.IndexFunc(g.ctx.Snap.Operators, func(o view.Operator) bool { return o.Name == g.selOp })
}

// moveOperator selects the same subtask index (clamped) in the operator
// above or below, stopping at the first and last operator.
func (g *Model) moveOperator(d int) {
	ops := g.ctx.Snap.Operators
	i := g.opIndex()
	if i < 0 {
		return
	}
	j := min(max(i+d, 0), len(ops)-1)
	g.selOp = ops[j].Name
	g.selIdx = min(g.selIdx, max(ops[j].Parallelism-1, 0))
}

// moveSubtask selects the previous or next subtask in spec order, across
// operators, stopping at the first and last subtask.
func (g *Model) moveSubtask(d int) {
	names := g.ctx.TaskNames()
	i := slices.Index(names, g.Selected())
	if i < 0 {
		return
	}
	j := min(max(i+d, 0), len(names)-1)
	op, idx, _ := strings.Cut(names[j], "/")
	g.selOp = op
	g.selIdx, _ = strconv.Atoi(idx)
}

// channelLines is how many strip lines an operator's row needs: the most
// input channels of any of its subtasks, or what its edges imply before the
// subtasks report them (forward: one channel, any other edge: one per
// upstream subtask).
func (g *Model) channelLines(op view.Operator) int {
	n := 0
	for _, e := range op.Inputs {
		if e.Kind == "forward" {
			n++
			continue
		}
		if i := slices.IndexFunc(g.ctx.Snap.Operators, func(o view.Operator) bool { return o.Name == e.From }); i >= 0 {
			n += g.ctx.Snap.Operators[i].Parallelism
		}
	}
	for i := range op.Parallelism {
		n = max(n, len(g.ctx.Snap.Tasks[common.TaskName(op.Name, i)].Inputs))
	}
	return n
}

// Heights are the pane's body heights (rule line not counted): compact
// shows strips for the selected row only, roomy for every row.
func (g *Model) Heights() (compact, roomy int) {
	ops := g.ctx.Snap.Operators
	if len(ops) == 0 {
		return 1, 1
	}
	most, sum := 0, 0
	for _, op := range ops {
		n := g.channelLines(op)
		most, sum = max(most, n), sum+n
	}
	return len(ops) + most, len(ops) + sum
}

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
	if sel := g.Selected(); sel != "" {
		info = append(info, st.Focus.Render("▸"+sel))
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
	// The rule keeps its info only when it fits: the checkpoint's kind
	// goes first.
	text := strings.Join(info, sep)
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
	selEnd := 0
	for _, op := range ops {
		strips := len(op.Inputs) > 0 && (all || op.Name == stripped)
		lines = append(lines, g.row(op, geo, strips, pend)...)
		if op.Name == shown {
			selEnd = len(lines)
		}
	}
	if selEnd > h {
		lines = lines[selEnd-h:]
	}
	return lines
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

// coreLine is a subtask's first line: selection marker and index, status
// word, records/s, back-pressure, then the pending checkpoint's
// acknowledgement ("✓14" acked, "○14" waiting) or the alignment in
// progress ("ALIGNING #14 38ms"; "UNALIGNED #14 38ms" while it records
// the in-flight data of an unaligned checkpoint, "TIMED OUT → UNALIGNED"
// when the aligned-checkpoint timeout switched it), then a source's
// offsets.
func (g *Model) coreLine(op view.Operator, idx int, t view.Task, w int, pend *view.Checkpoint) string {
	st := g.ctx.Styles
	name := common.TaskName(op.Name, idx)
	sel := g.chosen && name == g.Selected()
	head := " " + strconv.Itoa(idx)
	headStyle := st.Bold
	switch hl := g.ctx.Highlight(); {
	case hl.Task == name && !hl.Inputs:
		// What the tour points at takes the selection's column.
		head, headStyle = common.HighlightMarker+strconv.Itoa(idx), st.Highlight
	case sel:
		head, headStyle = "▸"+strconv.Itoa(idx), st.Selected
	}
	if t.Name == "" {
		return layoutChips([]chip{{text: head, style: headStyle}, {text: "—", style: st.Muted}}, w)
	}
	word := g.statusWord(t)
	chips := []chip{{text: head, style: headStyle}, {text: word, style: st.TaskStatus(word)}}
	if slow, short := g.slowText(t); slow != "" {
		chips = append(chips, chip{text: slow, short: short, style: st.Warning})
	}
	if t.Status == "RUNNING" {
		// Rate and back-pressure only mean something while it runs. When the
		// line is short, "bp OK" goes first, then the rate.
		bp := t.BackPressure
		if bp == "" {
			bp = view.BackPressureOK
		}
		bpDrop := 0
		if bp == view.BackPressureOK {
			bpDrop = 2
		}
		chips = append(chips,
			// Always 6 cells wide, so that a changing rate never changes
			// what else fits.
			chip{text: common.PadLeft(common.HumanRate(t.RateIn), 6), style: st.Text, drop: 1},
			chip{text: "bp " + string(bp), style: st.BackPressure(bp), drop: bpDrop})
	}
	switch {
	case t.Alignment.Checkpoint != 0:
		id := strconv.FormatInt(t.Alignment.Checkpoint, 10)
		since, pad := "", 0
		if !t.Alignment.Since.IsZero() {
			d := common.HumanDuration(g.ctx.Snap.Now.Sub(t.Alignment.Since))
			since, pad = " "+d, max(5-common.Width(d), 0) // durations take up to 5 cells
		}
		switch a := t.Alignment; {
		case a.TimedOut:
			// The checkpoint was older than the aligned-checkpoint timeout
			// when it reached the subtask: it took its snapshot unaligned
			// and records in-flight data.
			chips = append(chips, chip{text: "TIMED OUT → UNALIGNED #" + id + since, short: "TIMED OUT→UNALIGNED #" + id,
				shorter: "→UNALIGNED #" + id, pad: pad, style: st.Warning})
		case a.Unaligned:
			chips = append(chips, chip{text: "UNALIGNED #" + id + since, short: "UNALIGNED #" + id, pad: pad, style: st.Info})
		case g.atLeastOnce(a.Checkpoint):
			// Nothing aligns: the subtask counts the checkpoint's
			// barriers and reads on from every channel (Flink's
			// CheckpointBarrierTracker).
			chips = append(chips, chip{text: "COUNTING #" + id + since, short: "COUNT #" + id + since, pad: pad, style: st.Muted})
		default:
			chips = append(chips, chip{text: "ALIGNING #" + id + since, short: "ALIGN #" + id + since, pad: pad, style: st.Warning})
		}
	case pend != nil:
		id := strconv.FormatInt(pend.ID, 10)
		switch done, waiting := acked(pend, name); {
		case done:
			chips = append(chips, chip{text: "✓" + id, style: st.Success})
		case waiting:
			chips = append(chips, chip{text: "○" + id, style: st.Muted})
		}
	case g.ctx.Snap.Checkpoints.LastCompleted > 0 && t.Status == "RUNNING":
		// Between checkpoints every subtask has acknowledged the last one;
		// saying so keeps the line as wide as while one is pending.
		chips = append(chips, chip{text: "✓" + strconv.FormatInt(g.ctx.Snap.Checkpoints.LastCompleted, 10), style: st.Muted})
	}
	if len(t.Offsets) > 0 {
		// The offsets are a source's state: they stay, cut at the end if
		// they must.
		chips = append(chips, chip{text: formatOffsets(t.Offsets), style: st.Muted})
	}
	return layoutChips(chips, w)
}

// slowText is "SLOW ×10 4s" while a slow fault holds the subtask (the
// factor and the seconds left), and its short form "SLOW ×10"; "" when it
// is not slowed.
func (g *Model) slowText(t view.Task) (text, short string) {
	if t.SlowFactor <= 0 {
		return "", ""
	}
	now := g.ctx.Snap.Now
	if !t.SlowUntil.IsZero() && !t.SlowUntil.After(now) {
		return "", ""
	}
	short = "SLOW ×" + strconv.FormatFloat(t.SlowFactor, 'f', -1, 64)
	if t.SlowUntil.IsZero() {
		return short, "SLOW"
	}
	left := (t.SlowUntil.Sub(now) + time.Second - 1).Truncate(time.Second)
	return short + " " + common.HumanDuration(left), short
}

// statusWord is the word a subtask's cell shows: its status (Flink's
// ExecutionState), "RUN" for RUNNING, and RESTARTING for a subtask the
// failover cancelled and will deploy again while the job waits to restart.
func (g *Model) statusWord(t view.Task) string {
	r := g.ctx.Snap.Restart
	if g.ctx.Snap.Job.Status == "RESTARTING" && t.Status != "FAILED" && t.Status != "RUNNING" &&
		(len(r.LastRestarted) == 0 || slices.Contains(r.LastRestarted, t.Name)) {
		return "RESTARTING"
	}
	switch t.Status {
	case "RUNNING":
		return "RUN"
	case "":
		return "—"
	}
	return t.Status
}

// stripLine is line c of a subtask's strips: the queue of its input
// channel c and what follows it. A subtask that takes its checkpoint
// unaligned blocks no channel: none is drawn blocked.
func (g *Model) stripLine(t view.Task, c, w, suffixW int, inline bool) string {
	if c >= len(t.Inputs) {
		return ""
	}
	st := g.ctx.Styles
	in := t.Inputs[c]
	if t.Alignment.Unaligned {
		in.Blocked = false
	}
	prefixW, stripW, scale, long := g.stripGeometry(t, w, suffixW, inline)
	prefix := " "
	if hl := g.ctx.Highlight(); hl.Inputs && hl.Task == t.Name {
		// The strips the tour points at, in the space before them.
		prefix = st.Highlight.Render(common.HighlightMarker)
	}
	if inline {
		_, from, _ := strings.Cut(in.From, "/")
		prefix += st.Muted.Render("/" + from + " ")
	}
	strip, scale := renderStrip(st, in, t.Alignment.Checkpoint, stripW, scale)
	return common.PadRight(prefix, prefixW) + common.PadRight(strip, stripW) + " " + stripSuffix(st, in, scale, long)
}

// minLongStrip is the narrowest strip the suffixes' long forms ("•3
// persisted") leave; narrower, they take their short forms ("•3").
const minLongStrip = 12

// stripGeometry lays out the strips of a subtask's channels in a cell w
// wide: the prefix's width (" /3 " for inline labels), the strip's width,
// one scale for all of them so that barrier positions can be compared
// across channels, and whether the suffixes take their long forms. The
// strips give way to the suffixes ("BLOCKED 1,206", "12,640 ·=512",
// "9 •3 persisted"), which always show whole, at least suffixW wide.
func (g *Model) stripGeometry(t view.Task, w, suffixW int, inline bool) (prefixW, stripW int, scale int64, long bool) {
	prefixW = 1
	var most int64
	// head is the most cells a strip's gate and an unaligned barrier at
	// its front take before the elements.
	head := 1 + len(strconv.FormatInt(t.Alignment.Checkpoint, 10))
	for _, in := range t.Inputs {
		if inline {
			_, from, _ := strings.Cut(in.From, "/")
			prefixW = max(prefixW, 3+common.Width(from))
		}
		most = max(most, in.Queue.Queued)
		if i := overtaking(in.Queue.Barriers); i >= 0 {
			head = max(head, 1+jumpWidth(in.Queue.Barriers[i].ID))
		}
	}
	for _, long = range []bool{true, false} {
		sw := suffixW
		for range 4 {
			stripW = w - prefixW - 1 - sw
			if stripW < 4 {
				break
			}
			scale = stripScale(most, stripW-head)
			need := sw
			for _, in := range t.Inputs {
				if t.Alignment.Unaligned {
					in.Blocked = false
				}
				need = max(need, common.Width(stripSuffix(g.ctx.Styles, in, scale, long)))
			}
			if need == sw {
				break
			}
			sw = need
		}
		if stripW = w - prefixW - 1 - sw; stripW >= minLongStrip || !long {
			suffixW = sw
			break
		}
	}
	if stripW < 4 {
		return prefixW, max(w-prefixW, 1), stripScale(most, max(w-prefixW, 1)-head), long
	}
	return prefixW, max(w-prefixW-1-suffixW, 1), scale, long
}

// formatOffsets writes a source's next offsets: "p0:1203 p1:1180".
func formatOffsets(offsets map[int32]int64) string {
	parts := make([]int32, 0, len(offsets))
	for p := range offsets {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("p" + strconv.Itoa(int(p)) + ":" + strconv.FormatInt(offsets[p], 10))
	}
	return b.String()
}

// acked reports whether task acknowledged cp, and whether cp still waits
// for it.
func acked(cp *view.Checkpoint, task string) (done, waiting bool) {
	if _, ok := cp.AckedTasks[task]; ok {
		return true, false
	}
	return false, slices.Contains(cp.WaitingFor, task)
}

// atLeastOnce reports whether checkpoint id is taken at-least-once (its
// mode as the history knows it, else the job's current mode).
func (g *Model) atLeastOnce(id int64) bool {
	if cp := g.ctx.CheckpointByID(id); cp != nil {
		return g.ctx.CheckpointMode(cp) == "at-least-once"
	}
	return g.ctx.Snap.Job.Mode == "at-least-once"
}
