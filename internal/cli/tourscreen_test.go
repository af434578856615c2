package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui"
)

// What a tour's runs write while its screen is up waits, in order and each
// to its own stream, until the screen closes; from then on it goes straight
// through.
func TestTourScreenHoldsTheRunsOutputUntilItCloses(t *testing.T) {
	var stdout, stderr bytes.Buffer
	s := newTourScreen(context.Background(), &stdout, &stderr, tui.Options{})
	s.stdout.Write([]byte("faultline: stopping the job and checking its output…\n"))
	s.stderr.Write([]byte("faultline: port 9092 is taken"))
	s.stderr.Write([]byte("; using 9093\n"))
	s.stdout.Write([]byte("  verify: committed 10 of 10 expected\n"))
	if stdout.Len() != 0 || stderr.Len() != 0 {
		t.Fatalf("written while the screen was up: %q, %q", stdout.String(), stderr.String())
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if got, want := stdout.String(), "faultline: stopping the job and checking its output…\n  verify: committed 10 of 10 expected\n"; got != want {
		t.Errorf("stdout after the screen closed: %q, want %q", got, want)
	}
	if got, want := stderr.String(), "faultline: port 9092 is taken; using 9093\n"; got != want {
		t.Errorf("stderr after the screen closed: %q, want %q", got, want)
	}
	s.stderr.Write([]byte("faultline: stopped by SIGINT\n"))
	if got := stderr.String(); !bytes.HasSuffix([]byte(got), []byte("stopped by SIGINT\n")) {
		t.Errorf("written after the screen closed, not passed on: %q", got)
	}
	if _, ok := terminalOf(s.stdout); ok {
		t.Error("a buffer beneath the held output counts as a terminal")
	}
}

// guide is a tourGuide whose step asks for asked.
type guide struct{ asked string }

func (guide) Panel() *view.Tour        { return nil }
func (guide) Key(string) bool          { return false }
func (g guide) Asks(fault string) bool { return fault == g.asked }

// In a tour, the crash fault from the menu ends the tour's run: it is
// refused unless the tour's step asks for it.
func TestATourRefusesACrashItDidNotAskFor(t *testing.T) {
	u := &uiController{tour: guide{asked: "panic"}}
	err := u.Inject("crash", "")
	if err == nil || !strings.Contains(err.Error(), "only where the tour asks for it") {
		t.Fatalf("a crash the tour did not ask for: %v", err)
	}
}
