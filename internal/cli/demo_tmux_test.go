package cli

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startDemo starts the real binary's UI at 120×40 on a fresh state dir, at
// the UI's own input rate, and waits for a completed checkpoint.
func startDemo(t *testing.T, flags ...string) *tmuxSession {
	dir := t.TempDir()
	env := shellEnv(t)
	cmd := fmt.Sprintf("%s%s run --state-dir %s --listen 0 %s 2>%s; echo faultline exited $?; sleep 600",
		env, binary, dir, strings.Join(flags, " "), filepath.Join(dir, "stderr"))
	s := startTmux(t, 120, 40, cmd)
	completed := regexp.MustCompile(`checkpoint \d+ completed in`)
	s.waitFor("the job graph with a completed checkpoint", 60*time.Second, func(sc string) bool {
		return headerStatus(sc) == "RUNNING" && strings.Contains(sc, "join ⋈") && completed.MatchString(sc)
	})
	return s
}

// The at-least-once lesson from the keyboard, as a trainer gives it: a
// slow fault on join/0, which the graph marks, and while its aligned
// checkpoint is still pending, m m (at-least-once); that checkpoint
// completes, the join counts records past the barriers of the next ones,
// then a panic in join/1: the verify line counts duplicates, as
// at-least-once duplicates (the aligned checkpoint triggered before the
// switch does not end the at-least-once period), and q exits 0.
func TestTUIAtLeastOnceContrastFromTheKeyboard(t *testing.T) {
	t.Parallel()
	s := startDemo(t, "--checkpoint-interval 1s")
	// The selection starts on join/0.
	s.waitFor("join/0 selected", 5*time.Second, contains("▸join/0"))
	s.inject("3", "slow", "join/0")
	s.waitFor("join/0 marked slow", 15*time.Second, contains("SLOW"))
	aligning := regexp.MustCompile(`ALIGN(?:ING)? #(\d+)`)
	sc := s.waitFor("an aligned checkpoint pending at the join", 60*time.Second, aligning.MatchString)
	pending := atoi(aligning.FindStringSubmatch(sc)[1])
	// m goes from aligned to unaligned, then to at-least-once: pressed
	// fast, as a trainer does.
	s.keys("m")
	s.keys("m")
	s.waitFor("at-least-once mode", 10*time.Second, contains("at-least-once · no alignment"))
	completedNo := func(id int) func(string) bool {
		return contains(fmt.Sprintf("checkpoint %d completed in", id))
	}
	s.waitFor(fmt.Sprintf("the aligned checkpoint %d to complete", pending), 60*time.Second, completedNo(pending))
	counting := regexp.MustCompile(`COUNT(?:ING)? #(\d+) (\d+(?:\.\d+)?)(ms|s)\b`)
	var after int
	s.waitFor("a barrier waited for over a second at the join", 60*time.Second, func(sc string) bool {
		for _, m := range counting.FindAllStringSubmatch(sc, -1) {
			if v, _ := strconv.ParseFloat(m[2], 64); m[3] == "s" && v >= 1 {
				after = atoi(m[1])
				return true
			}
		}
		return false
	})
	s.waitFor(fmt.Sprintf("at-least-once checkpoint %d to complete", after), 60*time.Second, completedNo(after))
	s.keys("Right")
	s.waitFor("join/1 selected", 5*time.Second, contains("▸join/1"))
	s.inject("1", "panic", "join/1")
	dup := regexp.MustCompile(`dup ([\d,]+) \(at-least-once\)`)
	sc = s.waitFor("duplicates on the verify line, as at-least-once's", 90*time.Second, func(sc string) bool {
		m := dup.FindStringSubmatch(sc)
		return m != nil && m[1] != "0" || strings.Contains(sc, "✗ DUPLICATES")
	})
	if strings.Contains(sc, "✗ DUPLICATES") {
		t.Fatalf("the verify line calls at-least-once's duplicates a failure:\n%s", sc)
	}
	s.keys("q")
	sc = s.waitFor("the summary", 60*time.Second, contains("faultline exited"))
	if !strings.Contains(sc, "faultline exited 0") {
		t.Fatalf("q after the at-least-once lesson:\n%s", sc)
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(strings.ReplaceAll(s, ",", "")); return n }

// Keys that arrive in one read all count: "zz" in one write slows the world
// twice (SLOWER), "x1" in one write opens the panic confirmation.
func TestTUIKeysInOneWriteAllCount(t *testing.T) {
	t.Parallel()
	s := startDemo(t)
	s.tmux("send-keys", "-t", "ui", "-l", "zz")
	s.waitFor("SLOWER after zz in one write", 10*time.Second, contains("SLOWER"))
	s.tmux("send-keys", "-t", "ui", "-l", "x1")
	s.waitFor("the panic confirmation after x1 in one write", 10*time.Second, contains("inject panic into"))
	s.keys("n")
	s.keys("q")
}
