package graph

import (
	"slices"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
)

// Glyphs of a queue strip.
const (
	glyphGate      = "◂" // the receiving end of an open channel
	glyphRecording = "●" // the receiving end of a channel whose records are stored as in-flight data
	glyphBarrier   = "▌" // a barrier (Flink: CheckpointBarrier), followed by its id
	glyphJump      = "«" // after an unaligned barrier's id: it jumped to the front
	glyphElement   = "·" // an element (or a bucket of elements) in the queue
	glyphPersisted = "•" // an element an unaligned barrier overtook, stored as channel state
)

type stripCell uint8

const (
	cellEmpty stripCell = iota
	cellElement
	cellPersisted
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
// elements behind it wait until every other channel has delivered 14 too),
// "●" while what it delivers is recorded as in-flight data of an unaligned
// checkpoint. An unaligned barrier that overtook the queue (Flink: a
// priority barrier) comes next, "▌14«": it jumped to the front. Then one
// "·" per element, or per bucket of elements when the queue is longer than
// the strip, "•" for the elements at the front that an unaligned barrier
// overtook (persisted as channel state, processed after the snapshot), and
// "▌<id>" where a barrier sits. scale is how many elements one cell stands
// for (0: as many as the queue needs); the scale used is returned.
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
	case in.Recording:
		b.WriteString(st.Recording.Render(glyphRecording))
		body--
	default:
		b.WriteString(st.Muted.Render(glyphGate))
		body--
	}
	if body <= 0 {
		return b.String(), 1
	}

	barriers := slices.Clone(in.Queue.Barriers)
	if i := overtaking(barriers); i >= 0 {
		jump := jumpText(barriers[i].ID, body)
		b.WriteString(st.Barrier.Render(jump))
		body -= common.Width(jump)
		barriers = slices.Delete(barriers, i, i+1)
		if body <= 0 {
			return b.String(), 1
		}
	}

	queued := max(in.Queue.Queued, 0)
	if scale <= 0 {
		scale = stripScale(queued, body)
	}
	persisted := int((min(max(in.Queue.Overtaken, 0), queued) + scale - 1) / scale)
	slices.SortFunc(barriers, func(a, b view.BarrierPos) int { return int(a.Pos - b.Pos) })
	cells, text := stripCells(int((queued+scale-1)/scale), persisted, barriers, scale, body)

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
		case cellPersisted:
			b.WriteString(st.Persisted.Render(run.String()))
		default:
			b.WriteString(run.String())
		}
		i = j
	}
	return b.String(), scale
}

// overtaking is the index of the unaligned barrier at the front of a
// queue, the one that overtook elements (Flink: a priority barrier), or
// -1.
func overtaking(barriers []view.BarrierPos) int {
	return slices.IndexFunc(barriers, func(b view.BarrierPos) bool { return b.Pos <= 0 && b.Overtook > 0 })
}

// jumpText is an unaligned barrier at the front of a strip with body
// cells left: "▌14«", its id and the jump mark whole, or "▌«", or "▌",
// leaving at least one cell for the elements when it can.
func jumpText(id int64, body int) string {
	for _, s := range []string{glyphBarrier + strconv.FormatInt(id, 10) + glyphJump, glyphBarrier + glyphJump} {
		if common.Width(s) < body {
			return s
		}
	}
	return glyphBarrier
}

// jumpWidth is the most cells an unaligned barrier at the front of a
// strip takes.
func jumpWidth(id int64) int { return 2 + len(strconv.FormatInt(id, 10)) }

// stripCells lays out n element cells, the first persisted overtaken, and
// the barriers in body cells: each id after its barrier (insertBarriers),
// or, with no room for that, over the elements behind it.
func stripCells(n, persisted int, barriers []view.BarrierPos, scale int64, body int) ([]stripCell, []string) {
	if cells, text := insertBarriers(n, persisted, barriers, scale, body); cells != nil {
		return cells, text
	}
	cells, text := make([]stripCell, body), make([]string, body)
	for i := range min(n, body) {
		cells[i], text[i] = cellElement, glyphElement
		if i < persisted {
			cells[i], text[i] = cellPersisted, glyphPersisted
		}
	}
	placeBarriers(barriers, scale, cells, text)
	return cells, text
}

// insertBarriers lays out n element cells (the first persisted of them
// overtaken), with each barrier (sorted by position) in place of the
// element cell it sits in and its id put in after it, so that no id hides
// an element: "◂··▌14·····". It returns nil when that does not fit in
// body cells.
func insertBarriers(n, persisted int, barriers []view.BarrierPos, scale int64, body int) ([]stripCell, []string) {
	cells, text := make([]stripCell, 0, body), make([]string, 0, body)
	put := func(c stripCell, t string) {
		cells, text = append(cells, c), append(text, t)
	}
	b := 0
	for k := 0; k < n || b < len(barriers); k++ {
		atK := false
		for b < len(barriers) && int(max(barriers[b].Pos, 0)/scale) <= k {
			put(cellBarrier, glyphBarrier)
			for _, d := range strconv.FormatInt(barriers[b].ID, 10) {
				put(cellBarrier, string(d))
			}
			b, atK = b+1, true
		}
		switch {
		case k >= n || atK && scale == 1:
			// The barrier is the element of this cell.
		case k < persisted:
			put(cellPersisted, glyphPersisted)
		default:
			put(cellElement, glyphElement)
		}
		if len(cells) > body {
			return nil, nil
		}
	}
	for len(cells) < body {
		put(cellEmpty, "")
	}
	return cells, text
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
// holds back) for a blocked channel, else how many elements are queued,
// then, for an unaligned checkpoint, how many of them an unaligned barrier
// overtook ("•3 persisted") or, on a channel being recorded, how many of
// its records were stored so far ("REC 5 persisted"). long is false for
// the short forms ("•3", "REC 5").
func stripSuffix(st *common.Styles, in view.InputView, scale int64, long bool) string {
	if in.Blocked {
		return st.Blocked.Render("BLOCKED " + common.Thousands(in.HeldBack))
	}
	s := common.Thousands(max(in.Queue.Queued, 0))
	if scale > 1 && in.Queue.Queued > 0 {
		// An empty queue needs no scale.
		s += " ·=" + strconv.FormatInt(scale, 10)
	}
	s = st.Muted.Render(s)
	word := ""
	if long {
		word = " persisted"
	}
	if n := min(in.Queue.Overtaken, max(in.Queue.Queued, 0)); n > 0 {
		// The overtaken elements still queued: those the strip draws •.
		s += " " + st.Persisted.Render(glyphPersisted+common.Thousands(n)+word)
	}
	if in.Recording {
		s += " " + st.Recording.Render("REC "+common.Thousands(max(in.Persisted, 0))+word)
	}
	return s
}

// stripScale is how many elements a cell must stand for so that queued
// elements fit in body cells.
func stripScale(queued int64, body int) int64 {
	if body <= 0 || queued <= int64(body) {
		return 1
	}
	return (queued + int64(body) - 1) / int64(body)
}

// stripLine is line c of a subtask's strips: the queue of its input
// channel c and what follows it. A subtask that takes its checkpoint
// unaligned blocks no channel: none is drawn blocked.
func (g *Model) stripLine(t view.Task, c, w, suffixW int, inline bool) string {
	if c == 0 && len(t.Inputs) == 0 && g.ctx.Snap.Job.Remote != "" {
		return " " + g.ctx.Styles.Muted.Render(common.Truncate("queues: not in the REST API", w-2))
	}
	if c >= len(t.Inputs) {
		return ""
	}
	st := g.ctx.Styles
	in := t.Inputs[c]
	if t.Alignment.Unaligned {
		in.Blocked = false
	}
	in.Queue.Barriers = g.liveBarriers(in.Queue.Barriers, t.Alignment.Checkpoint)
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

// liveBarriers are the barriers of a queue that still mean something: of
// a pending checkpoint, of the one the subtask aligns, or newer than any
// the history knows. A barrier of a checkpoint that completed or failed
// is still an element of the queue, passed over when its turn comes; it
// is drawn as one, not as a barrier.
func (g *Model) liveBarriers(barriers []view.BarrierPos, aligning int64) []view.BarrierPos {
	h := g.ctx.Snap.Checkpoints.History
	if len(barriers) == 0 || len(h) == 0 {
		return barriers
	}
	newest := h[0].ID
	ended := map[int64]bool{}
	for _, c := range h {
		if c.Status != view.StatusPending {
			ended[c.ID] = true
		}
	}
	out := barriers[:0:0]
	for _, b := range barriers {
		if b.ID == aligning || b.ID > newest || !ended[b.ID] && b.ID >= h[len(h)-1].ID {
			out = append(out, b)
		}
	}
	return out
}
