package graph

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
)

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
		chips = append(chips, g.loadChips(t)...)
	}
	switch {
	case t.Alignment.Checkpoint != 0:
		id := strconv.FormatInt(t.Alignment.Checkpoint, 10)
		since, pad := "", 0
		if !t.Alignment.Since.IsZero() {
			d := common.HumanDuration(common.JobNow(&g.ctx.Snap).Sub(t.Alignment.Since))
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

// loadChips are a running subtask's rate, its busy share when it is the
// bottleneck, and its back-pressure: they only mean something while it
// runs. When the line is short, "bp OK" and "busy" go first, then the
// rate.
func (g *Model) loadChips(t view.Task) []chip {
	st := g.ctx.Styles
	bp := t.BackPressure
	if bp == "" {
		bp = view.BackPressureOK
	}
	bpDrop := 0
	if bp == view.BackPressureOK {
		bpDrop = 2
	}
	// The rate is always 6 cells wide, so that a changing rate never
	// changes what else fits.
	chips := []chip{{text: common.PadLeft(common.HumanRate(t.RateIn), 6), style: st.Text, drop: 1}}
	if t.Busy >= busyShown {
		// The bottleneck: busy most of the time (Flink colours such a
		// vertex red).
		chips = append(chips, chip{text: "busy " + strconv.Itoa(int(t.Busy*100+0.5)) + "%", style: st.Warning, drop: 2})
	}
	return append(chips, chip{text: "bp " + string(bp), style: st.BackPressure(bp), drop: bpDrop})
}

// busyShown is the busy share from which a cell says "busy 98%".
const busyShown = 0.5

// slowText is "SLOW ×10 4s" while a slow fault holds the subtask (the
// factor and the seconds left), and its short form "SLOW ×10"; "" when it
// is not slowed.
func (g *Model) slowText(t view.Task) (text, short string) {
	if t.SlowFactor <= 0 {
		return "", ""
	}
	now := common.JobNow(&g.ctx.Snap)
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
