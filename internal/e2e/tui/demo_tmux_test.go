package tui

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"faultline/internal/e2e"
)

// The at-least-once lesson from the keyboard, as a trainer gives it: a
// slow fault on join/0, which the graph marks, and while its aligned
// checkpoint is still pending, m m (at-least-once); that checkpoint
// completes, the join counts records past the barriers of the next ones,
// then a panic in join/1: the verify line counts duplicates, as
// at-least-once duplicates (the aligned checkpoint triggered before the
// switch does not end the at-least-once period), and q exits 0.
func TestTUIAtLeastOnceContrastFromTheKeyboard(t *testing.T) {
	t.Parallel()
	s := e2e.StartDemo(t, "--checkpoint-interval 1s")
	// The selection starts on join/0.
	s.WaitFor("join/0 selected", 5*time.Second, e2e.Contains("▸join/0"))
	s.Inject("3", "slow", "join/0")
	s.WaitFor("join/0 marked slow", 15*time.Second, e2e.Contains("SLOW"))
	aligning := regexp.MustCompile(`ALIGN(?:ING)? #(\d+)`)
	sc := s.WaitFor("an aligned checkpoint pending at the join", 60*time.Second, aligning.MatchString)
	pending := e2e.Atoi(aligning.FindStringSubmatch(sc)[1])
	// m goes from aligned to unaligned, then to at-least-once: pressed
	// fast, as a trainer does.
	s.Keys("m")
	s.Keys("m")
	s.WaitFor("at-least-once mode", 10*time.Second, e2e.Contains("at-least-once · no alignment"))
	completedNo := func(id int) func(string) bool {
		return e2e.Contains(fmt.Sprintf("checkpoint %d completed in", id))
	}
	s.WaitFor(fmt.Sprintf("the aligned checkpoint %d to complete", pending), 60*time.Second, completedNo(pending))
	counting := regexp.MustCompile(`COUNT(?:ING)? #(\d+) (\d+(?:\.\d+)?)(ms|s)\b`)
	var after int
	s.WaitFor("a barrier waited for over a second at the join", 60*time.Second, func(sc string) bool {
		for _, m := range counting.FindAllStringSubmatch(sc, -1) {
			if v, _ := strconv.ParseFloat(m[2], 64); m[3] == "s" && v >= 1 {
				after = e2e.Atoi(m[1])
				return true
			}
		}
		return false
	})
	s.WaitFor(fmt.Sprintf("at-least-once checkpoint %d to complete", after), 60*time.Second, completedNo(after))
	s.Keys("Right")
	s.WaitFor("join/1 selected", 5*time.Second, e2e.Contains("▸join/1"))
	// A restore goes back to the newest completed checkpoint, and only
	// the records it counts past its barrier are read again: the panic
	// comes once the newest one counts some, before the next one (1 s
	// later) can complete, however busy the machine.
	completed := regexp.MustCompile(`checkpoint (\d+) completed in [^:\n]*: [^;\n]*(?:; ([\d,]+) records? processed after the barrier)?`)
	s.WaitFor("the newest checkpoint with records past its barrier", 60*time.Second, func(sc string) bool {
		newest, past := 0, 0
		for _, m := range completed.FindAllStringSubmatch(sc, -1) {
			if id := e2e.Atoi(m[1]); id > newest {
				newest, past = id, e2e.Atoi(m[2])
			}
		}
		return newest >= after && past >= 20
	})
	s.Inject("1", "panic", "join/1")
	dup := regexp.MustCompile(`dup ([\d,]+) \(at-least-once\)`)
	sc = s.WaitFor("duplicates on the verify line, as at-least-once's", 90*time.Second, func(sc string) bool {
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
