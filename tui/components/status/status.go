// Package status is the line above the help: the live verification of the
// committed output, and the flash that answers the last command.
package status

import (
	"strconv"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/tui/common"

	tea "github.com/charmbracelet/bubbletea"
)

// flashFor is how long a flash stays, in the job's time (Snapshot.Now).
const flashFor = 8 * time.Second

// Model is the line above the help: on the left the live
// verification of the committed output (what a read_committed consumer
// sees, checked against the input: duplicates and lost records), on the
// right the flash, the answer to the last command ("checkpoint 15
// triggered", "savepoint: <error>").
type Model struct {
	common.NoKeys
	ctx   *common.Context
	width int

	flash      string
	flashLevel common.Level
	flashAt    time.Time // Snapshot.Now when it was set; zero before the first sample
	flashSet   bool
}

// New returns the line; it draws what ctx holds.
func New(ctx *common.Context) *Model { return &Model{ctx: ctx} }

// Every pane and overlay is a Component.
var _ common.Component = (*Model)(nil)

// Init implements tea.Model.
func (s *Model) Init() tea.Cmd { return nil }

// SetSize implements Component.
func (s *Model) SetSize(w, _ int) { s.width = w }

// Update implements tea.Model: it takes flashes.
func (s *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case common.FlashMsg:
		s.flash, s.flashLevel, s.flashSet = msg.Text, msg.Level, true
		s.flashAt = s.ctx.Snap.Now
	case common.SnapshotMsg:
		if s.flashSet && s.flashAt.IsZero() {
			s.flashAt = s.ctx.Snap.Now
		}
	}
	return s, nil
}

// Flash is the flash shown now, "" when there is none.
func (s *Model) Flash() string {
	if !s.flashSet || (!s.flashAt.IsZero() && s.ctx.Snap.Now.Sub(s.flashAt) > flashFor) {
		return ""
	}
	return s.flash
}

// View implements tea.Model.
func (s *Model) View() string {
	st := s.ctx.Styles
	lead := " "
	if s.ctx.Highlight().Verify {
		// A guided tour points at the line: "»verify".
		lead = st.Highlight.Render(common.HighlightMarker)
	}
	left := lead + s.verifyText(true)
	flash := s.Flash()
	if flash == "" {
		return common.PadRight(left, s.width)
	}
	if s.width-common.Width(left)-3 < common.Width(flash) {
		left = lead + s.verifyText(false)
	}
	room := s.width - common.Width(left) - 3
	if room < 12 {
		// A flash matters more than the verification for a moment.
		return common.PadRight(" "+st.Level(s.flashLevel).Render(flash), s.width)
	}
	right := st.Level(s.flashLevel).Render(common.TruncateWords(flash, room))
	return common.PadRight(left, s.width-common.Width(right)-1) + right + " "
}

// verifyText is "verify  committed 18,204  dup 0  lost 0 ✓" ("dup 23
// (at-least-once)" for duplicates that at-least-once mode made, "dup 5 ✗
// DUPLICATES" for any beyond them), then the checkpoint it covers when
// asOf is set.
func (s *Model) verifyText(asOf bool) string {
	st := s.ctx.Styles
	v := s.ctx.Snap.Verify
	label := st.Bold.Render("verify")
	if s.ctx.Highlight().Verify {
		label = st.Highlight.Render("verify")
	}
	switch {
	case v.Off != "":
		return label + "  " + st.Muted.Render("off: "+v.Off)
	case v.Err != "":
		return label + "  " + st.Warning.Render("cannot check: "+v.Err)
	case !v.Available:
		return label + "  " + st.Muted.Render("waiting for the first check")
	}
	parts := []string{label, "committed " + common.Thousands(int64(v.Committed))}
	// Duplicates with a copy committed while the job ran at-least-once
	// are what that mode promises, not a fault; only those beyond them
	// are.
	alo := min(max(v.DuplicatesAtLeastOnce, 0), v.Duplicates)
	beyond := v.Duplicates - alo
	switch {
	case beyond > 0 && alo > 0:
		parts = append(parts, st.Error.Render("dup "+common.Thousands(int64(beyond))+" ✗ DUPLICATES")+
			" "+st.Warning.Render("+ "+common.Thousands(int64(alo))+" (at-least-once)"))
	case beyond > 0:
		parts = append(parts, st.Error.Render("dup "+common.Thousands(int64(beyond))+" ✗ DUPLICATES"))
	case alo > 0:
		parts = append(parts, st.Warning.Render("dup "+common.Thousands(int64(alo))+" (at-least-once)"))
	default:
		parts = append(parts, "dup 0")
	}
	if v.Lost > 0 {
		parts = append(parts, st.Error.Render("lost "+common.Thousands(int64(v.Lost))+" ✗ LOST"))
	} else {
		parts = append(parts, "lost 0")
	}
	text := strings.Join(parts, "  ")
	if beyond == 0 && v.Lost == 0 {
		text += " " + st.Success.Render("✓")
	}
	if asOf && v.AsOf > 0 {
		text += st.Muted.Render("  as of #" + strconv.FormatInt(v.AsOf, 10))
		if v.InFlight > 0 {
			// An unaligned checkpoint's in-flight records: processed after
			// it, so not in its output yet.
			text += st.Muted.Render(" (" + common.Thousands(int64(v.InFlight)) + " in flight)")
		}
	}
	if ttl := s.ctx.Snap.Job.StateTTL; asOf && ttl > 0 {
		t := "  state TTL " + common.RoundDuration(ttl)
		if v.NotJoined > 0 {
			t += ": " + common.Thousands(int64(v.NotJoined)) + " paid orders too far apart to join"
		}
		text += st.Muted.Render(t)
	}
	return text
}
