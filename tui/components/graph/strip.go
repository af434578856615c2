package graph

import (
	"slices"
	"strconv"
	"strings"

	"faultline/runtime/view"
	"faultline/tui/common"
)

// Glyphs of a queue strip.
const (
	glyphGate    = "◂" // the receiving end of an open channel
	glyphBarrier = "▌" // a barrier (Flink: CheckpointBarrier), followed by its id
	glyphElement = "·" // an element (or a bucket of elements) in the queue
)

type stripCell uint8

const (
	cellEmpty stripCell = iota
	cellElement
	cellBarrier // the barrier glyph or a digit of its id
)

// renderStrip draws one input channel of a subtask (Flink: an input
// channel's queue of buffers) in w cells, receiver on the left, so it reads
// like the queue of a shop: the next element the subtask will handle
// (position 0) is leftmost, and barriers move left as the elements ahead of
// them are handled.
//
// The first cell is the gate: "◂" when the channel is open, "▌14" when
// barrier alignment blocks it (barrier 14 arrived on this channel and the
// elements behind it wait until every other channel has delivered 14 too).
// Then one "·" per element, or per bucket of elements when the queue is
// longer than the strip, and "▌<id>" where a barrier sits. scale is how
// many elements one cell stands for (0: as many as the queue needs); the
// scale used is returned.
func renderStrip(st *common.Styles, in view.InputView, aligning int64, w int, scale int64) (string, int64) {
	if w <= 0 {
		return "", 1
	}
	var b strings.Builder
	body := w
	switch {
	case in.Blocked:
		gate := glyphBarrier
		if aligning != 0 {
			gate += strconv.FormatInt(aligning, 10)
		}
		gate = common.Truncate(gate, w)
		b.WriteString(st.Blocked.Render(gate))
		body -= common.Width(gate)
	default:
		b.WriteString(st.Muted.Render(glyphGate))
		body--
	}
	if body <= 0 {
		return b.String(), 1
	}

	queued := max(in.Queue.Queued, 0)
	if scale <= 0 {
		scale = stripScale(queued, body)
	}
	cells := make([]stripCell, body)
	text := make([]string, body)
	for i := range min(int((queued+scale-1)/scale), body) {
		cells[i], text[i] = cellElement, glyphElement
	}
	barriers := slices.Clone(in.Queue.Barriers)
	slices.SortFunc(barriers, func(a, b view.BarrierPos) int { return int(a.Pos - b.Pos) })
	cols := make([]int, len(barriers))
	for i, br := range barriers {
		col := int(max(br.Pos, 0) / scale)
		col = min(col, body-1)
		cols[i] = col
		cells[col], text[col] = cellBarrier, glyphBarrier
	}
	// The ids go after their glyphs, over the elements behind the barrier,
	// never over another barrier's glyph.
	for i, br := range barriers {
		for j, d := range strconv.FormatInt(br.ID, 10) {
			c := cols[i] + 1 + j
			if c >= body || text[c] == glyphBarrier {
				break
			}
			cells[c], text[c] = cellBarrier, string(d)
		}
	}

	// Write runs of one kind with one style.
	for i := 0; i < body; {
		j := i
		var run strings.Builder
		for j < body && cells[j] == cells[i] {
			if cells[j] == cellEmpty {
				run.WriteByte(' ')
			} else {
				run.WriteString(text[j])
			}
			j++
		}
		switch cells[i] {
		case cellBarrier:
			b.WriteString(st.Barrier.Render(run.String()))
		case cellElement:
			b.WriteString(st.Element.Render(run.String()))
		default:
			b.WriteString(run.String())
		}
		i = j
	}
	return b.String(), scale
}

// stripSuffix is what follows a strip: "BLOCKED 6" (the elements alignment
// holds back) for a blocked channel, else how many elements are queued.
func stripSuffix(st *common.Styles, in view.InputView, scale int64) string {
	if in.Blocked {
		return st.Blocked.Render("BLOCKED " + common.Thousands(in.HeldBack))
	}
	s := common.Thousands(max(in.Queue.Queued, 0))
	if scale > 1 {
		s += " ·=" + strconv.FormatInt(scale, 10)
	}
	return st.Muted.Render(s)
}

// stripScale is how many elements a cell must stand for so that queued
// elements fit in body cells.
func stripScale(queued int64, body int) int64 {
	if body <= 0 || queued <= int64(body) {
		return 1
	}
	return (queued + int64(body) - 1) / int64(body)
}
