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
	placeBarriers(barriers, scale, cells, text)

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

// placeBarriers writes barriers (sorted by position) into a strip's cells:
// a barrier's glyph where it sits, its id after it over the elements
// behind it. An id is written whole or not at all: a barrier too near the
// strip's end or the next barrier for its id moves left to make room when
// it can do so without passing the barrier before it, else shows its
// glyph alone; no barrier's glyph is ever covered.
func placeBarriers(barriers []view.BarrierPos, scale int64, cells []stripCell, text []string) {
	body := len(cells)
	natural := make([]int, len(barriers))
	for i, br := range barriers {
		natural[i] = min(int(max(br.Pos, 0)/scale), body-1)
	}
	limit := body // the cells from limit on belong to later barriers
	for i := len(barriers) - 1; i >= 0; i-- {
		col := min(natural[i], limit-1)
		if col < 0 {
			continue
		}
		id := strconv.FormatInt(barriers[i].ID, 10)
		withID := true
		if need := 1 + len(id); col+need > limit {
			left := -1 // the glyph must stay right of the barrier before
			if i > 0 {
				left = natural[i-1]
			}
			if shifted := limit - need; shifted > left && shifted >= 0 {
				col = shifted
			} else {
				withID = false
			}
		}
		cells[col], text[col] = cellBarrier, glyphBarrier
		if withID {
			for j, d := range id {
				cells[col+1+j], text[col+1+j] = cellBarrier, string(d)
			}
		}
		limit = col
	}
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
