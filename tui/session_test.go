package tui

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/internal/fixture"
)

// A Session's second run replaces the first on the same screen: the new
// model keeps the terminal's size, samples the new controller only, and a
// sample or an event batch of the first run that arrives late is dropped
// without starting a second tick.
func TestAttachReplacesTheRunAndDropsTheOldOnesSamples(t *testing.T) {
	first, second := newFake(fixture.Running()), newFake(fixture.Running())
	second.snap.Job.Title = "second-run"
	done := make(chan struct{})
	defer close(done)
	m := newModel(first, nil, modelConfig{done: done})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(m.sampler.sample())

	events := make(chan view.Stamped, 1)
	m.Update(SnapshotMsg{Snapshot: fixture.Touring(fixture.Running(), fixture.TourStep())})
	got, cmd := m.Update(attachMsg{ctrl: second, events: events})
	next := got.(*model)
	if next == m || cmd == nil {
		t.Fatal("attach did not start a model of its own for the next run")
	}
	if v := next.View(); !strings.Contains(v, "tour · ") {
		t.Fatalf("before the next run's first sample the tour's panel is gone:\n%s", v)
	}
	select {
	case <-m.gone:
	default:
		t.Fatal("the first run's model still ticks")
	}
	if next.width != 120 || next.height != 40 {
		t.Fatalf("the next run's model is %dx%d, want the terminal's 120x40", next.width, next.height)
	}
	if msg := m.sampler.tick(time.Hour)(); msg != nil {
		t.Fatalf("the first run's tick took a sample after the attach: %#v", msg)
	}
	stale := SnapshotMsg{Snapshot: first.snap, Seq: 99, Run: 0}
	if _, cmd := next.Update(stale); cmd != nil {
		t.Fatal("a late sample of the first run started a tick in the second")
	}
	if _, cmd := next.Update(EventsMsg{Run: 0}); cmd != nil {
		t.Fatal("a late event batch of the first run started a wait in the second")
	}
	snap := next.sampler.sample().(SnapshotMsg)
	if snap.Run != 1 {
		t.Fatalf("the second run's sample is of run %d, want 1", snap.Run)
	}
	next.Update(snap)
	if v := next.View(); !strings.Contains(v, "second-run") {
		t.Fatalf("the screen does not show the second run:\n%s", v)
	}
}

// A Session stays up from one run to the next, notes what happens between
// them, and closes on Close.
func TestSessionShowsRunsInTurnOnOneScreen(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	out := &lockedBuffer{}
	first, second := newFake(fixture.Running()), newFake(fixture.Running())
	s := StartSession(context.Background(), first, make(chan view.Stamped), Options{Input: pr, Output: out, TickPeriod: 5 * time.Millisecond, NoAltScreen: true})
	s.prog.Send(tea.WindowSizeMsg{Width: 120, Height: 40}) // a pipe has no size
	waitSampled(t, first, 2)
	s.Note("the tour starts the job's next run")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		out.mu.Lock()
		shown := strings.Contains(out.b.String(), "the tour starts the job's next run")
		out.mu.Unlock()
		if shown {
			break
		}
		if time.Now().After(deadline) {
			out.mu.Lock()
			defer out.mu.Unlock()
			t.Fatalf("the note between runs never reached the screen:\n%s", out.b.String()[max(0, out.b.Len()-3000):])
		}
	}
	s.Attach(second, make(chan view.Stamped))
	waitSampled(t, second, 2)
	first.mu.Lock()
	before := first.snapshots
	first.mu.Unlock()
	time.Sleep(50 * time.Millisecond)
	first.mu.Lock()
	after := first.snapshots
	first.mu.Unlock()
	if after > before+1 {
		t.Fatalf("the first run is still sampled after the second was attached (%d, then %d)", before, after)
	}
	select {
	case <-s.Done():
		t.Fatal("the screen closed between runs")
	default:
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.Attach(first, nil) // after Close: does nothing, does not block
}
