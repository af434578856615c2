// Package header is the UI's top line: the job, its status and settings,
// and the badges of a world that is not running at full speed.
package header

import (
	"strconv"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"

	tea "github.com/charmbracelet/bubbletea"
)

// Model is the top line: the job, its status (with the restart
// countdown, and RESTARTED for a while after a restart), the checkpointing
// mode (aligned or unaligned, and the aligned-checkpoint timeout) and
// interval, the rate the sources read and the generator's, and
// the broker, and on the right the badges of a world that is not running
// at full speed: FROZEN, STEPPING, SLOW, SLOWER, SOURCES PAUSED. What does
// not fit goes, least important first; the badges stay.
type Model struct {
	common.NoKeys
	ctx   *common.Context
	width int
	rs    restartSeen
}

// A restart is over in about a second, even in slow motion: the header
// keeps saying RESTARTED for restartedFor after it, and then until the
// job has been RUNNING for runningFor, both in the job's time
// (Snapshot.Now), so that a frozen or slowed job that has not got going
// again still says so.
const (
	restartedFor = 5 * time.Second
	runningFor   = 2 * time.Second
)

// restartSeen follows the samples for restarts: a new attempt (every
// failover bumps it) or the end of RESTARTING.
type restartSeen struct {
	init         bool
	attempt      int64
	status       string
	at           time.Time // when the last restart was seen; zero: none to show
	runningSince time.Time // since when the job is RUNNING again; zero: not yet
}

// observe takes one sample.
func (r *restartSeen) observe(s *view.Snapshot) {
	job := s.Job
	defer func() { r.attempt, r.status = job.Attempt, job.Status }()
	if !r.init {
		r.init = true
		return
	}
	restarting := string(view.JobRestarting)
	if job.Attempt > r.attempt || (r.status == restarting && job.Status != restarting) {
		r.at, r.runningSince = s.Now, time.Time{}
	}
	switch view.JobState(job.Status) {
	case view.JobFailed, view.JobFinished, view.JobCanceled:
		r.at = time.Time{} // over: the status says what became of it
	}
	if r.at.IsZero() {
		return
	}
	switch {
	case job.Status != "RUNNING":
		r.runningSince = time.Time{}
	case r.runningSince.IsZero():
		r.runningSince = s.Now
	}
	if s.Now.Sub(r.at) >= restartedFor && !r.runningSince.IsZero() && s.Now.Sub(r.runningSince) >= runningFor {
		r.at = time.Time{}
	}
}

// shown reports whether RESTARTED is to be said.
func (r *restartSeen) shown() bool { return !r.at.IsZero() }

// New returns the bar; it draws what ctx holds.
func New(ctx *common.Context) *Model { return &Model{ctx: ctx} }

// Every pane and overlay is a Component.
var _ common.Component = (*Model)(nil)

// Init implements tea.Model.
func (h *Model) Init() tea.Cmd { return nil }

// Update implements tea.Model: samples tell it of restarts.
func (h *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if m, ok := msg.(common.SnapshotMsg); ok {
		h.rs.observe(&m.Snapshot)
	}
	return h, nil
}

// Restarted reports whether the header says RESTARTED now.
func (h *Model) Restarted() bool { return h.rs.shown() }

// SetSize implements Component.
func (h *Model) SetSize(w, _ int) { h.width = w }

// segment is one part of the header, already styled; when the line is too
// wide the segment with the lowest keep is shortened to short, or dropped
// when it has no short form. keep 100 never goes.
type segment struct {
	text, short string
	keep        int
	// marked is set on what a guided tour points at: the marker takes the
	// place of the space before it ("»RUNNING").
	marked bool
}

// View implements tea.Model.
func (h *Model) View() string {
	st := h.ctx.Styles
	app := st.AppName.Render(" faultline ")
	if !h.ctx.HasSnap {
		return common.PadRight(app+"  "+st.Muted.Render("waiting for the job…"), h.width)
	}
	segs := h.segments()
	right := strings.Join(h.badges(), " ")
	room := h.width - common.Width(app) - common.Width(right) - 1
	left, lead := h.fit(segs, room)
	line := app + lead + common.TruncateWords(left, max(room-2, 0))
	if right != "" {
		line = common.PadRight(line, h.width-common.Width(right)) + right
	}
	return common.PadRight(line, h.width)
}

// segments are the parts of the header left of the badges: the job's
// title, its status, the checkpointing mode, the interval, the input and
// the broker, with what the job does not have left empty.
func (h *Model) segments() []segment {
	st := h.ctx.Styles
	snap := &h.ctx.Snap
	job := snap.Job

	title := job.Title
	if title == "" {
		title = job.Name
	}
	interval := "manual checkpoints"
	if job.Interval > 0 {
		interval = "every " + common.HumanDuration(job.Interval)
	}
	kafka := brokerText(job)
	input, inputShort := h.inputTexts()

	segs := []segment{
		{text: st.Title.Render(title), keep: 80},
		{text: h.statusText(), keep: 100},
		h.modeSegment(),
		{text: st.Muted.Render(interval), keep: 50},
		{text: st.Muted.Render(input), short: st.Muted.Render(inputShort), keep: 35},
		{text: st.Muted.Render(kafka), keep: 30},
		// The classic name of a state backend and checkpoint storage
		// other than the default heap and filesystem (FsStateBackend),
		// before the input rates: the lesson of such a run.
		{text: st.Muted.Render(classicShown(job)), keep: 36},
	}
	if len(snap.Operators) == 0 {
		segs[4].text, segs[4].short = "", ""
	}
	if kafka == "" {
		segs[5].text = ""
	}
	if h.ctx.Highlight().Header {
		segs[1].marked, segs[2].marked = true, true // the status and the mode
	}
	return segs
}

// statusText is the job's status, styled: with the restart countdown while
// it is RESTARTING, and RESTARTED (attempt N) for a while after a restart.
func (h *Model) statusText() string {
	st := h.ctx.Styles
	snap := &h.ctx.Snap
	job := snap.Job
	status := job.Status
	if status == "" {
		status = "—"
	}
	if status == "RESTARTING" && !snap.Restart.NextRestartAt.IsZero() {
		status += " in " + common.Countdown(snap.Restart.NextRestartAt.Sub(common.JobNow(snap)))
	}
	statusText := st.JobStatus(job.Status).Render(status)
	if h.rs.shown() && job.Status != "RESTARTING" {
		statusText += " " + st.Warning.Render("RESTARTED (attempt "+common.Itoa(job.Attempt)+")")
	}
	return statusText
}

// modeSegment is the checkpointing mode as the header shows it, with a
// short form that keeps only whether barriers are aligned.
func (h *Model) modeSegment() segment {
	st := h.ctx.Styles
	job := h.ctx.Snap.Job
	mode := h.ctx.Mode
	if mode == "" {
		mode = "—"
	}
	// The mode and how its barriers are handled: "exactly-once ·
	// aligned" (", timeout 100ms" when an alignment that lasts longer
	// switches to unaligned), "exactly-once · unaligned", "at-least-once
	// · no alignment".
	var detail, short string
	switch {
	case strings.Contains(mode, "unaligned"):
		mode = strings.TrimSpace(strings.Replace(mode, "unaligned", "", 1))
		detail, short = "· unaligned", " unaligned"
	case mode == common.ExactlyOnce:
		detail, short = "· aligned", " · aligned"
		if t := job.AlignedTimeout; t > 0 {
			detail += ", timeout " + common.RoundDuration(t)
		}
	case mode == common.AtLeastOnce:
		detail = "· no alignment"
	}

	modeText := st.Text.Render(mode)
	modeShort := modeText
	if short != "" {
		modeShort += st.Muted.Render(short)
	}
	// The short form keeps what the mode is: unaligned, aligned; once
	// taken, it outlasts the interval on a narrow screen (see fit):
	// whether barriers align is what the lessons there are about.
	seg := segment{text: modeText + st.Muted.Render(" "+detail), short: modeShort, keep: 40}
	if detail == "" {
		seg.text, seg.short = modeText, ""
	}
	return seg
}

// brokerText is "kafka <address>", with "(embedded)" for the embedded
// broker, or "" when the job has no broker.
func brokerText(job view.JobInfo) string {
	kafka := ""
	if job.Broker != "" {
		kafka = "kafka " + job.Broker
		if job.Embedded {
			kafka += " (embedded)"
		}
	}
	return kafka
}

// inputTexts is the rate the sources read and, for a generated input, the
// rate the generator writes, in a long and a short form.
func (h *Model) inputTexts() (input, inputShort string) {
	snap := &h.ctx.Snap
	// What the sources read is not what the generator writes: a slowed
	// or frozen job reads less, and a paused one nothing.
	read := "sources read " + common.HumanRate(sourceRate(snap))
	input, inputShort = read, read
	if snap.Input.Generator {
		input += " · generator " + common.HumanRate(h.ctx.Rate)
		inputShort = "read " + common.HumanRate(sourceRate(snap)) + " · gen " + common.HumanRate(h.ctx.Rate)
	}
	return input, inputShort
}

// badges are the badges of a world that is not running at full speed,
// styled: the tempo (FROZEN with how long, STEPPING, SLOW, SLOWER) and
// SOURCES PAUSED.
func (h *Model) badges() []string {
	st := h.ctx.Styles
	snap := &h.ctx.Snap
	job := snap.Job
	var badges []string
	if t := h.ctx.Tempo; t != view.TempoNormal {
		label, style := strings.ToUpper(t.String()), st.Badge
		if t == view.TempoFrozen && snap.Input.Stepping {
			// A step runs: the world moves, slowly, to the next moment.
			label = "STEPPING"
		}
		if r := t.ClockRate(snap.Input.Stepping); r > 0 {
			label += " " + clockShare(r) // the job clock's rate (help: SLOW)
		} else if frozen, ok := common.FrozenFor(snap); ok && t == view.TempoFrozen {
			if frozen >= time.Second {
				label += " " + common.HumanDuration(frozen.Truncate(time.Second))
			}
			if job.FreezeLimit > 0 && frozen >= job.FreezeLimit/2 {
				label += " · FAILS OVER AT " + common.RoundDuration(job.FreezeLimit)
				style = st.BadgeAlert
			}
		}
		badges = append(badges, style.Render(" "+label+" "))
	}
	if h.ctx.Paused {
		badges = append(badges, st.Badge.Render(" SOURCES PAUSED "))
	}
	return badges
}

// fit joins the segments for room cells: while the line is too wide, the
// segment with the lowest keep takes its short form, or goes. lead goes
// before the first segment.
func (h *Model) fit(segs []segment, room int) (left, lead string) {
	mark := h.ctx.Styles.Highlight.Render(common.HighlightMarker)
	left, lead = joinSegments(segs, mark)
	for common.Width(left)+2 > room {
		worst := -1
		for i, s := range segs {
			if s.text != "" && s.keep < 100 && (worst < 0 || s.keep < segs[worst].keep) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		if segs[worst].short != "" {
			segs[worst].text, segs[worst].short = segs[worst].short, ""
			if worst == 2 {
				segs[worst].keep = 90 // the mode itself goes late
			}
		} else {
			segs[worst].text = ""
		}
		left, lead = joinSegments(segs, mark)
	}
	return left, lead
}

// joinSegments joins the segments two spaces apart, or a space and mark
// before a marked one; lead goes before the first.
func joinSegments(segs []segment, mark string) (left, lead string) {
	var b strings.Builder
	lead = "  "
	for _, s := range segs {
		switch {
		case s.text == "":
			continue
		case b.Len() == 0 && s.marked:
			lead = " " + mark
		case b.Len() == 0:
		case s.marked:
			b.WriteString(" " + mark)
		default:
			b.WriteString("  ")
		}
		b.WriteString(s.text)
	}
	return b.String(), lead
}

// sourceRate is the records/s the job's sources read: the sum over the
// subtasks of the operators without inputs.
func sourceRate(s *view.Snapshot) float64 {
	var r float64
	for _, op := range s.Operators {
		if len(op.Inputs) > 0 {
			continue
		}
		for i := range op.Parallelism {
			r += s.Tasks[common.TaskName(op.Name, i)].RateIn
		}
	}
	return r
}

// clockShare is the job clock's rate as a person reads it: "½×", "¼×".
func clockShare(r float64) string {
	switch r {
	case 0.5:
		return "½×"
	case 0.25:
		return "¼×"
	}
	return strconv.FormatFloat(r, 'g', 3, 64) + "×"
}

// classicShown is the classic name of job's state backend and checkpoint
// storage (common.ClassicBackend) when they are not the default ones,
// "" otherwise: MemoryStateBackend, RocksDBStateBackend, or the two
// parts when the pair had no name.
func classicShown(job view.JobInfo) string {
	if job.StateBackend == "heap" && job.CheckpointStorage != "jobmanager" || job.StateBackend == "" {
		return ""
	}
	if name := common.ClassicBackend(job.StateBackend, job.CheckpointStorage); name != "" {
		return name
	}
	return job.StateBackend + " · " + job.CheckpointStorage + " storage"
}
