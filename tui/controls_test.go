package tui

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faultline-dev/faultline/tui/internal/fixture"
)

// m cycles exactly-once (aligned) → exactly-once unaligned →
// at-least-once → exactly-once, and the header says each at once.
func TestModeCycle(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	var want []string
	for _, tc := range []struct{ mode, header string }{
		{"exactly-once unaligned", "exactly-once · unaligned"},
		{"at-least-once", "at-least-once · no alignment"},
		{"exactly-once", "exactly-once · aligned"},
		{"exactly-once unaligned", "exactly-once · unaligned"},
	} {
		h.press("m")
		want = append(want, "SetMode("+tc.mode+")")
		assertCalls(t, h.ctrl, want...)
		if h.m.ctx.Mode != tc.mode {
			t.Fatalf("mode shown %q before the next sample, want %q", h.m.ctx.Mode, tc.mode)
		}
		if v := strings.SplitN(h.m.View(), "\n", 2)[0]; !strings.Contains(v, tc.header) {
			t.Fatalf("header does not show %q:\n%s", tc.header, v)
		}
		if got := h.m.status.Flash(); got != "mode "+tc.mode+" from the next checkpoint" {
			t.Fatalf("flash %q", got)
		}
	}
}

// A job that refuses unaligned checkpoints is not asked for them again
// on the next press: the cycle goes on from the mode it refused.
func TestModeCycleGoesOnAfterARefusal(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.ctrl.modeErr = errors.New(`mode "exactly-once unaligned": want exactly-once or at-least-once`)
	h.press("m")
	if h.m.ctx.Mode != "exactly-once" {
		t.Fatalf("mode shown %q after the switch failed", h.m.ctx.Mode)
	}
	h.ctrl.modeErr = nil
	h.press("m", "m")
	assertCalls(t, h.ctrl, "SetMode(exactly-once unaligned)", "SetMode(at-least-once)", "SetMode(exactly-once)")
}

// The header says how the mode handles barriers, and the
// aligned-checkpoint timeout in aligned mode.
func TestHeaderSaysTheAlignment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    string
		timeout time.Duration
		w       int
		want    string
	}{
		{"aligned", "exactly-once", 0, 120, "RUNNING  exactly-once · aligned  every 2s"},
		{"aligned with a timeout", "exactly-once", 100 * time.Millisecond, 120, "RUNNING  exactly-once · aligned, timeout 100ms  every 2s"},
		{"aligned with a timeout, narrow", "exactly-once", 100 * time.Millisecond, 80, "RUNNING  exactly-once · aligned  every 2s"},
		{"unaligned", "exactly-once unaligned", 100 * time.Millisecond, 120, "RUNNING  exactly-once · unaligned  every 2s"},
		{"unaligned, narrow", "exactly-once unaligned", 0, 80, "RUNNING  exactly-once · unaligned  every 2s"},
		{"at-least-once", "at-least-once", 100 * time.Millisecond, 120, "RUNNING  at-least-once · no alignment  every 2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fixture.Running()
			s.Job.Mode, s.Job.AlignedTimeout = tc.mode, tc.timeout
			h := newHarness(t, s, tc.w, 24)
			if v := strings.SplitN(h.m.View(), "\n", 2)[0]; !strings.Contains(v, tc.want) {
				t.Fatalf("header lacks %q:\n%s", tc.want, v)
			}
		})
	}
}

func TestModeSwitchRefused(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.ctrl.modeErr = errors.New("a checkpoint is pending")
	h.press("m")
	if h.m.ctx.Mode != "exactly-once" {
		t.Fatalf("mode shown %q after the switch failed", h.m.ctx.Mode)
	}
	if got := h.m.status.Flash(); got != "mode: a checkpoint is pending" {
		t.Fatalf("flash %q", got)
	}
}

func TestPause(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("p")
	assertCalls(t, h.ctrl, "SetSourcesPaused(true)")
	if !h.m.ctx.Paused || !strings.Contains(h.m.View(), "SOURCES PAUSED") {
		t.Fatal("the header does not say the sources are paused")
	}
	h.press("p")
	assertCalls(t, h.ctrl, "SetSourcesPaused(true)", "SetSourcesPaused(false)")
	if h.m.ctx.Paused {
		t.Fatal("still paused")
	}
}

func TestIntentIsShownUntilTheJobConfirmsIt(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("p") // the command returned with no sample taken yet
	if !h.m.ctx.Paused {
		t.Fatal("pause not shown at once")
	}
	// Samples that still show the sources running (taken before the
	// command returned, or lagging) do not undo it.
	for seq := int64(1); seq <= graceSamples; seq++ {
		h.send(SnapshotMsg{Snapshot: fixture.Running(), Seq: seq})
		if !h.m.ctx.Paused {
			t.Fatalf("sample %d undid the pause", seq)
		}
	}
	// The job confirms: from now on the UI shows the job's own state.
	s := fixture.Running()
	s.Input.SourcesPaused = true
	h.send(SnapshotMsg{Snapshot: s, Seq: graceSamples + 1})
	h.send(SnapshotMsg{Snapshot: fixture.Running(), Seq: graceSamples + 2})
	if h.m.ctx.Paused {
		t.Fatal("the job's own state is not shown once it confirmed")
	}
}

func TestIntentTheJobDidNotTake(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("z")
	for seq := int64(1); seq <= graceSamples+1; seq++ {
		h.send(SnapshotMsg{Snapshot: fixture.Running(), Seq: seq})
	}
	if h.m.ctx.Tempo != TempoNormal {
		t.Fatalf("tempo %s shown, the job runs normal", h.m.ctx.Tempo)
	}
	if got := h.m.status.Flash(); got != "tempo: the job still runs normal" {
		t.Fatalf("flash %q", got)
	}
}

// Keys pressed fast reach the UI as one message of several runes (Bubble
// Tea v1 reads them in one go): each one counts, in order.
func TestKeysPressedFastAllCount(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("zzmcs")})
	assertCalls(t, h.ctrl, "SetTempo(slow)", "SetTempo(slower)", "SetMode(exactly-once unaligned)", "TriggerCheckpoint", "TriggerSavepoint")
}

func TestTempo(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("z", "z", "z")
	assertCalls(t, h.ctrl, "SetTempo(slow)", "SetTempo(slower)", "SetTempo(normal)")

	h = newHarness(t, fixture.Running(), 120, 40)
	h.press("z", "space")
	if h.m.ctx.Tempo != TempoFrozen || !strings.Contains(h.m.View(), "FROZEN") {
		t.Fatal("space did not freeze")
	}
	h.press(".")
	h.press("space") // back to the tempo before the freeze
	assertCalls(t, h.ctrl, "SetTempo(slow)", "SetTempo(frozen)", "Step", "SetTempo(slow)")
	if h.m.ctx.Tempo != TempoSlow || !strings.Contains(h.m.View(), "SLOW") {
		t.Fatal("space did not go back to slow")
	}
}

func TestStepFreezesFirst(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press(".")
	assertCalls(t, h.ctrl, "SetTempo(frozen)", "Step")
	if h.m.ctx.Tempo != TempoFrozen {
		t.Fatal("not frozen after a step")
	}
	h.press(".")
	assertCalls(t, h.ctrl, "SetTempo(frozen)", "Step", "Step")
	h.press("space")
	assertCalls(t, h.ctrl, "SetTempo(frozen)", "Step", "Step", "SetTempo(normal)")
}

func TestSlowFromFrozen(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("space", "z")
	assertCalls(t, h.ctrl, "SetTempo(frozen)", "SetTempo(slow)")
}

func TestRate(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40) // 10,000 records/s
	h.press("+", "+", "-")
	assertCalls(t, h.ctrl, "SetRate(15000)", "SetRate(22500)", "SetRate(15000)")
	if h.m.ctx.Rate != 15000 {
		t.Fatalf("rate shown %v", h.m.ctx.Rate)
	}
	if got := h.m.status.Flash(); got != "generator rate 15,000 records/s" {
		t.Fatalf("flash %q", got)
	}
}

func TestRateBounds(t *testing.T) {
	s := fixture.Running()
	s.Input.Rate = 12
	h := newHarness(t, s, 120, 40)
	h.press("-", "-")
	assertCalls(t, h.ctrl, "SetRate(10)", "SetRate(10)")
	s.Input.Rate = 9_000_000
	h = newHarness(t, s, 120, 40)
	h.press("+")
	assertCalls(t, h.ctrl, "SetRate(10000000)")
}

func TestRateRefused(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.ctrl.rateErr = errors.New("no input generator: --brokers reads an existing topic")
	h.press("+")
	if h.m.ctx.Rate != 10000 {
		t.Fatalf("rate shown %v after the change failed", h.m.ctx.Rate)
	}
	if got := h.m.status.Flash(); !strings.HasPrefix(got, "rate: no input generator") {
		t.Fatalf("flash %q", got)
	}
}

func TestCheckpointAndSavepointCommands(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("c")
	if got := h.m.status.Flash(); got != "checkpoint 15 triggered" {
		t.Fatalf("flash %q", got)
	}
	h.ctrl.savepointErr = errors.New("storage failure")
	h.press("s")
	assertCalls(t, h.ctrl, "TriggerCheckpoint", "TriggerSavepoint")
	if got := h.m.status.Flash(); got != "savepoint: storage failure" {
		t.Fatalf("flash %q", got)
	}
	if v := h.m.View(); !strings.Contains(v, "savepoint: storage failure") {
		t.Fatalf("flash not on screen:\n%s", v)
	}
}

// Two keys pressed fast give two commands, which Bubble Tea runs in
// goroutines of their own: whichever reaches the job last, the job ends
// with the setting asked for last (m m: at-least-once, not unaligned).
func TestSettingsReachTheJobInTheOrderAsked(t *testing.T) {
	ctrl := newFake(fixture.Running())
	s := sampler{ctrl: ctrl, count: new(atomic.Int64), settings: &newest{}}
	first, second := setMode(s, "unaligned", 1), setMode(s, "at-least-once", 2)
	second()
	first()
	pauseFirst, pauseSecond := setPaused(s, true, 1), setPaused(s, false, 2)
	pauseSecond()
	pauseFirst()
	tempoFirst, tempoSecond := setTempo(s, TempoFrozen, false, 1), setTempo(s, TempoNormal, false, 2)
	tempoSecond()
	tempoFirst()
	rateFirst, rateSecond := setRate(s, 800, 1), setRate(s, 200, 2)
	rateSecond()
	rateFirst()
	snap := ctrl.Snapshot()
	if snap.Job.Mode != "at-least-once" || snap.Input.SourcesPaused || snap.Input.Tempo != TempoNormal || snap.Input.Rate != 200 {
		t.Fatalf("mode %s, paused %v, tempo %s, rate %v: the older requests overrode the newer", snap.Job.Mode, snap.Input.SourcesPaused, snap.Input.Tempo, snap.Input.Rate)
	}
}

// / from any pane moves to the event log and types a filter: the letters
// typed are the filter's, not commands (c takes no checkpoint), until
// enter.
func TestSlashFiltersTheEventsAndTakesTheKeys(t *testing.T) {
	h := newHarness(t, fixture.Running(), 120, 40)
	h.press("/")
	if h.m.focus != paneEvents || !h.m.log.Typing() {
		t.Fatalf("focus %v, typing %v after /", h.m.focus, h.m.log.Typing())
	}
	h.press("c")
	h.press("s")
	assertCalls(t, h.ctrl)
	h.press("enter")
	if h.m.log.Typing() || !strings.Contains(h.m.View(), "/cs: ") {
		t.Fatalf("typing %v after enter:\n%s", h.m.log.Typing(), h.m.View())
	}
	h.press("c")
	assertCalls(t, h.ctrl, "TriggerCheckpoint")
}
