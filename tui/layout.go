package tui

import "github.com/faultline-dev/faultline/tui/components/tour"

// layoutSizes are the heights and widths the panes get.
type layoutSizes struct {
	graphH, midH, eventsH int // each counts its rule line; a tour's panel gets eventsH
	cpW, restartsW        int
	// tourHelpRow is set when the short help's line went to the tour's
	// panel (counted in eventsH).
	tourHelpRow bool
}

// Heights the lower panes keep at least (rule line included), what they
// get before the graph shows every strip, and what the events get before
// the checkpoints get more than wantMidH (a restart's story is a dozen
// lines).
const (
	minMidH, minEventsH     = 5, 4
	roomyMidH, roomyEventsH = 7, 5
	wantMidH, wantEventsH   = 6, 13
)

// sizes splits the terminal: header, job graph, checkpoints beside
// restarts, events, the status line and the help line. The graph gets what
// it needs to show the strips of every subtask when that leaves the lower
// panes room enough, else what it needs for the selected row's strips;
// the rest is shared by the checkpoints and the events, the events first
// up to wantEventsH; while the checkpoints are focused they take all but
// the events' least.
func (m *model) sizes() layoutSizes {
	avail := m.height - 3 // header, status, help
	compact, roomy := m.graph.Heights()
	g := compact + 1
	if roomy+1+roomyMidH+roomyEventsH <= avail {
		g = roomy + 1
	}
	g = max(min(g, avail-minMidH-minEventsH), 2)
	rest := avail - g
	mid := max(minMidH, (rest+1)/2)
	if ev := rest - mid; ev < wantEventsH {
		ev = max(ev, min(wantEventsH, rest-wantMidH))
		mid = rest - ev
	}
	if m.focus == paneCheckpoints && m.ctx.Tour() == nil {
		// Focused, the history takes the events' rows but their least:
		// more of it to scroll through, with the failed ones and why.
		mid = rest - minEventsH
	}
	cpW := m.width * 3 / 5
	s := layoutSizes{graphH: g, midH: mid, eventsH: rest - mid, cpW: cpW, restartsW: m.width - cpW - 1}
	if m.ctx.Tour() != nil {
		fitTour(&s)
	}
	return s
}

// tourMidH is the least the checkpoints and restarts keep (rule line
// included) to give a guided tour's panel its rows.
const tourMidH = 4

// fitTour lays out a guided tour: its panel takes the events' place, and
// when that is shorter than tour.MinHeight (80×24 gives the events four
// lines), it takes the short help's line (the panel lists the tour's
// keys), then lines of the checkpoints and restarts down to tourMidH (the
// history keeps its newest rows and the restarts pane its most urgent
// lines), then of the graph. The layout depends on the terminal and the
// job only, never on what a step says.
func fitTour(s *layoutSizes) {
	need := tour.MinHeight - s.eventsH
	if need <= 0 {
		return
	}
	s.tourHelpRow = true
	s.eventsH++
	need--
	take := min(need, max(s.midH-tourMidH, 0))
	s.midH -= take
	s.eventsH += take
	need -= take
	take = min(need, max(s.graphH-2, 0))
	s.graphH -= take
	s.eventsH += take
}

// layout hands every component its size.
func (m *model) layout() {
	if m.width < MinWidth || m.height < MinHeight {
		return
	}
	s := m.sizes()
	m.header.SetSize(m.width, 1)
	m.graph.SetSize(m.width, s.graphH)
	m.cps.SetSize(s.cpW, s.midH)
	m.restarts.SetSize(s.restartsW, s.midH)
	m.log.SetSize(m.width, s.eventsH)
	m.tour.SetSize(m.width, s.eventsH)
	m.status.SetSize(m.width, 1)
	body := m.height - 3
	m.detail.SetSize(m.width, body)
	m.helpView.SetSize(m.width, body)
	m.overview.SetSize(m.width, body)
	m.menu.SetSize(m.width, body)
}
