package tui

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// The at-least-once lesson from the keyboard, as a trainer gives it: a
// slow fault on join/0, which the graph marks, and while the aligned
// checkpoint it holds back is still pending, m m (at-least-once); that checkpoint
// completes, revenue counts records past the barriers of the next ones,
// then a panic in join/1: the verify line counts duplicates, as
// at-least-once duplicates (the aligned checkpoint triggered before the
// switch does not end the at-least-once period), and q exits 0.
func TestTUIAtLeastOnceContrastFromTheKeyboard(t *testing.T) {
	t.Parallel()
	// Eight seconds from the end of one checkpoint to the start of the
	// next: the checkpoint revenue counted past completes once slowed
	// join/0 has caught up, often as its slow fault runs out, and the
	// next one, with nothing past its barriers, must not complete before
	// the panic (a restore goes back to the newest checkpoint).
	//
	// 1000 records/s: join/0 slowed tenfold then falls behind its input
	// for certain (at the UI's 400/s it about keeps up, and its
	// alignments may stay too short to see).
	s := e2e.StartDemo(t, "--checkpoint-interval 1s --min-pause 8s --rate 1000")
	// The selection starts on join/0.
	s.WaitFor("join/0 selected", 5*time.Second, e2e.Contains("▸join/0"))
	s.Inject("3", "slow", "join/0")
	s.WaitFor("join/0 marked slow", 15*time.Second, e2e.Contains("SLOW"))
	// An aligned checkpoint pending for over a second in the checkpoints
	// table ("2 pending 4/13 1.9s… 111B — aligned"): slowed join/0 holds
	// it for many seconds more. Its alignments need not be on the screen
	// when it is captured: while the sources wait on join/0's full
	// channels, its barriers wait with them.
	pending := pendingAligned(t, s)
	// m goes from aligned to unaligned, then to at-least-once: pressed
	// fast, as a trainer does.
	s.Keys("m")
	s.Keys("m")
	s.WaitFor("at-least-once mode", 10*time.Second, e2e.Contains("at-least-once · no alignment"))
	completedNo := func(id int) func(string) bool {
		return e2e.Contains(fmt.Sprintf("checkpoint %d completed in", id))
	}
	s.WaitFor(fmt.Sprintf("the aligned checkpoint %d to complete", pending), 60*time.Second, completedNo(pending))
	// The duplicates are the records processed past a barrier whose
	// output the sink committed with that checkpoint's transaction: after
	// a restore from it the job makes them again. Revenue counting past a
	// barrier for over a second makes them certain; a checkpoint whose
	// after column counts records makes them likely (they may not have
	// reached the sink before its barrier). Which comes, and when, depends
	// on the machine's pace, so the lesson goes as a trainer would: slow
	// join/0 again when its slow fault (30 s) ran out, panic join/1 once
	// one of them shows, and again, up to three times, until the verify
	// line counts duplicates.
	last, sc := pending, ""
	for attempt := 1; ; attempt++ {
		after := pastABarrier(t, s, last)
		s.Keys("Right")
		s.WaitFor("join/1 selected", 5*time.Second, e2e.Contains("▸join/1"))
		// The panic comes as soon as that checkpoint completes, well
		// within the pause before the next one: the restore goes back to it.
		s.WaitFor(fmt.Sprintf("at-least-once checkpoint %d to complete", after), 60*time.Second, completedNo(after))
		s.Inject("1", "panic", "join/1")
		s.WaitFor("the panic injected", 10*time.Second, e2e.Contains("injected panic into join/1"))
		s.Keys("Left")
		s.WaitFor("join/0 selected", 5*time.Second, e2e.Contains("▸join/0"))
		if sc = waitDuplicates(s, 60*time.Second); sc != "" {
			break
		}
		if attempt == 3 {
			t.Fatalf("no duplicates on the verify line after three panics past at-least-once checkpoints; the screen shows:\n%s", s.Screen())
		}
		t.Logf("no duplicates after the panic past checkpoint %d: again", after)
		last = after
	}
	if strings.Contains(sc, "✗ DUPLICATES") {
		t.Fatalf("the verify line calls at-least-once's duplicates a failure:\n%s", sc)
	}
	s.Keys("q")
	sc = s.WaitFor("the summary", 60*time.Second, e2e.Contains("faultline exited"))
	if !strings.Contains(sc, "faultline exited 0") {
		t.Fatalf("q after the at-least-once lesson:\n%s", sc)
	}
}

// pendingAligned waits for an aligned checkpoint pending for over a
// second in the checkpoints table ("2 pending 4/13 1.9s… 111B —
// aligned"), slowing join/0 again when its slow fault ran out first, and
// returns its id.
func pendingAligned(t *testing.T, s *e2e.Session) int {
	t.Helper()
	pendingRow := regexp.MustCompile(`(?m)^\s*(\d+) pending\s+\d+/\d+\s+(\d+(?:\.\d+)?)s….*\baligned\b`)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		sc := s.Screen()
		if m := pendingRow.FindStringSubmatch(sc); m != nil {
			return e2e.Atoi(m[1])
		}
		if time.Now().After(deadline) {
			t.Fatalf("no aligned checkpoint pending for a second; the screen shows:\n%s", sc)
		}
		reslow(s, sc)
	}
}

// pastABarrier waits for an at-least-once checkpoint newer than last to
// have processed records past its barrier, and returns its id: revenue
// counting past a barrier for over a second, or a completed checkpoint
// whose after column counts records. join/0 is selected.
func pastABarrier(t *testing.T, s *e2e.Session, last int) int {
	t.Helper()
	counting := regexp.MustCompile(`COUNT(?:ING)? #(\d+) (\d+(?:\.\d+)?)(ms|s)\b`)
	completedRow := regexp.MustCompile(`(?m)^\s*▸?(\d+) completed\s+\d+/\d+\s+\S+\s+\S+\s+—\s+([\d,]+)\s`)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		sc := s.Screen()
		for _, line := range strings.Split(sc, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "revenue ") {
				continue
			}
			for _, m := range counting.FindAllStringSubmatch(line, -1) {
				if v, _ := strconv.ParseFloat(m[2], 64); m[3] == "s" && v >= 1 && e2e.Atoi(m[1]) > last {
					return e2e.Atoi(m[1])
				}
			}
		}
		if m := completedRow.FindStringSubmatch(sc); m != nil && e2e.Atoi(m[1]) > last && m[2] != "0" {
			return e2e.Atoi(m[1])
		}
		if time.Now().After(deadline) {
			t.Fatalf("no at-least-once checkpoint after %d processed records past its barrier; the screen shows:\n%s", last, sc)
		}
		reslow(s, sc)
	}
}

// waitDuplicates waits up to d for the verify line to count duplicates and
// returns the screen then ("": none came).
func waitDuplicates(s *e2e.Session, d time.Duration) string {
	dup := regexp.MustCompile(`dup ([\d,]+) \(at-least-once\)`)
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		sc := s.Screen()
		if m := dup.FindStringSubmatch(sc); m != nil && m[1] != "0" || strings.Contains(sc, "✗ DUPLICATES") {
			return sc
		}
	}
	return ""
}

// reslow slows join/0 again, as a trainer would, when its slow fault
// (30 s) has run out on screen sc before the lesson got where it goes.
func reslow(s *e2e.Session, sc string) {
	if !strings.Contains(sc, "SLOW") {
		s.Inject("3", "slow", "join/0")
		s.WaitFor("join/0 marked slow again", 15*time.Second, e2e.Contains("SLOW"))
	}
}

// Keys that arrive in one read all count: "zz" in one write slows the world
// twice (SLOWER), "x1" in one write opens the panic confirmation.
func TestTUIKeysInOneWriteAllCount(t *testing.T) {
	t.Parallel()
	s := e2e.StartDemo(t)
	s.Tmux("send-keys", "-t", "ui", "-l", "zz")
	s.WaitFor("SLOWER after zz in one write", 10*time.Second, e2e.Contains("SLOWER"))
	s.Tmux("send-keys", "-t", "ui", "-l", "x1")
	s.WaitFor("the panic confirmation after x1 in one write", 10*time.Second, e2e.Contains("inject panic into"))
	s.Keys("n")
	s.Keys("q")
}
