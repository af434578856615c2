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

// The at-least-once lesson from the keyboard, as a trainer gives it: m m
// (at-least-once), a slow fault on join/0, which the graph marks, the join
// waiting for its barriers for over a second, then a panic in join/1: the
// verify line counts duplicates, as at-least-once duplicates.
func TestTUIAtLeastOnceContrastFromTheKeyboard(t *testing.T) {
	t.Parallel()
	s := startDemo(t, "--checkpoint-interval 1s")
	// m goes from aligned to unaligned, then to at-least-once.
	s.keys("m")
	s.waitFor("unaligned mode", 10*time.Second, contains("exactly-once · unaligned"))
	s.keys("m")
	s.waitFor("at-least-once mode", 10*time.Second, contains("at-least-once · no alignment"))
	// The selection starts on join/0.
	s.waitFor("join/0 selected", 5*time.Second, contains("▸join/0"))
	s.inject("3", "slow", "join/0")
	s.waitFor("join/0 marked slow", 15*time.Second, contains("SLOW"))
	aligning := regexp.MustCompile(`COUNT(?:ING)? #\d+ (\d+(?:\.\d+)?)(ms|s)\b`)
	s.waitFor("a barrier waited for over a second at the join", 60*time.Second, func(sc string) bool {
		for _, m := range aligning.FindAllStringSubmatch(sc, -1) {
			if v, _ := strconv.ParseFloat(m[1], 64); m[2] == "s" && v >= 1 {
				return true
			}
		}
		return false
	})
	completed := regexp.MustCompile(`checkpoint (\d+) completed in`)
	sc := s.screen()
	last := 0
	for _, m := range completed.FindAllStringSubmatch(sc, -1) {
		last = max(last, atoi(m[1]))
	}
	s.waitFor("a checkpoint completed while join/0 is slow", 60*time.Second, func(sc string) bool {
		for _, m := range completed.FindAllStringSubmatch(sc, -1) {
			if atoi(m[1]) > last {
				return true
			}
		}
		return false
	})
	s.keys("Right")
	s.waitFor("join/1 selected", 5*time.Second, contains("▸join/1"))
	s.inject("1", "panic", "join/1")
	dup := regexp.MustCompile(`dup ([\d,]+) \(at-least-once\)`)
	s.waitFor("duplicates on the verify line, as at-least-once's", 90*time.Second, func(sc string) bool {
		m := dup.FindStringSubmatch(sc)
		return m != nil && m[1] != "0"
	})
	s.keys("q")
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
