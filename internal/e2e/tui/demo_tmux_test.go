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
	pendingRow := regexp.MustCompile(`(?m)^\s*(\d+) pending\s+\d+/\d+\s+(\d+(?:\.\d+)?)s….*\baligned\b`)
	pending := 0
	for deadline := time.Now().Add(2 * time.Minute); pending == 0; time.Sleep(100 * time.Millisecond) {
		sc := s.Screen()
		if m := pendingRow.FindStringSubmatch(sc); m != nil {
			pending = e2e.Atoi(m[1])
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no aligned checkpoint pending for a second; the screen shows:\n%s", sc)
		}
		reslow(s, sc)
	}
	// m goes from aligned to unaligned, then to at-least-once: pressed
	// fast, as a trainer does.
	s.Keys("m")
	s.Keys("m")
	s.WaitFor("at-least-once mode", 10*time.Second, e2e.Contains("at-least-once · no alignment"))
	completedNo := func(id int) func(string) bool {
		return e2e.Contains(fmt.Sprintf("checkpoint %d completed in", id))
	}
	s.WaitFor(fmt.Sprintf("the aligned checkpoint %d to complete", pending), 60*time.Second, completedNo(pending))
	// The duplicates are the records revenue reads past a barrier while
	// it counts, waiting for slowed join/0's: their output is in the
	// checkpoint's transaction, and after a restore the job makes it
	// again. So the lesson waits for revenue to count past a barrier for
	// over a second, slowing join/0 again, as a trainer would, if its
	// slow fault (30 s) ran out on a slow machine first.
	counting := regexp.MustCompile(`COUNT(?:ING)? #(\d+) (\d+(?:\.\d+)?)(ms|s)\b`)
	revenueCounts := func(sc string) int {
		for _, line := range strings.Split(sc, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "revenue ") {
				continue
			}
			for _, m := range counting.FindAllStringSubmatch(line, -1) {
				if v, _ := strconv.ParseFloat(m[2], 64); m[3] == "s" && v >= 1 {
					return e2e.Atoi(m[1])
				}
			}
		}
		return 0
	}
	after := 0
	for deadline := time.Now().Add(2 * time.Minute); after == 0; time.Sleep(100 * time.Millisecond) {
		sc := s.Screen()
		if after = revenueCounts(sc); after != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("revenue never counted past a barrier for a second; the screen shows:\n%s", sc)
		}
		reslow(s, sc)
	}
	s.Keys("Right")
	s.WaitFor("join/1 selected", 5*time.Second, e2e.Contains("▸join/1"))
	// The panic comes as soon as that checkpoint completes, well within
	// the pause before the next one: the restore goes back to it.
	s.WaitFor(fmt.Sprintf("at-least-once checkpoint %d to complete", after), 60*time.Second, completedNo(after))
	s.Inject("1", "panic", "join/1")
	dup := regexp.MustCompile(`dup ([\d,]+) \(at-least-once\)`)
	sc := s.WaitFor("duplicates on the verify line, as at-least-once's", 90*time.Second, func(sc string) bool {
		m := dup.FindStringSubmatch(sc)
		return m != nil && m[1] != "0" || strings.Contains(sc, "✗ DUPLICATES")
	})
	if strings.Contains(sc, "✗ DUPLICATES") {
		t.Fatalf("the verify line calls at-least-once's duplicates a failure:\n%s", sc)
	}
	s.Keys("q")
	sc = s.WaitFor("the summary", 60*time.Second, e2e.Contains("faultline exited"))
	if !strings.Contains(sc, "faultline exited 0") {
		t.Fatalf("q after the at-least-once lesson:\n%s", sc)
	}
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
