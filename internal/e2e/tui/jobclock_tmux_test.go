package tui

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// A trainer freezes the world in the middle of an alignment to explain it:
// while frozen, the slow fault's countdown and the ALIGNING timer stand
// still, and the checkpoint that completes afterwards reports the job's
// time, with the frozen time said beside it, not added to it.
func TestTUIFreezeLeavesReadingTimeOutOfTheFigures(t *testing.T) {
	t.Parallel()
	const freeze = 5 * time.Second
	dir := t.TempDir()
	cmd := fmt.Sprintf("%s%s run --state-dir %s --listen 0 --rate 2000 --checkpoint-interval 500ms --inject after=1s,task=join/0,fault=slow,factor=10,for=20s 2>%s; echo faultline exited $?; sleep 600",
		e2e.ShellEnv(t), e2e.Binary(t), dir, filepath.Join(dir, "stderr"))
	s := e2e.StartTmux(t, 120, 40, cmd)
	slow := regexp.MustCompile(`SLOW ×10 (\d+)s`)
	aligning := regexp.MustCompile(`ALIGNING #(\d+) ([0-9.]+m?s)`)
	// Freeze while a checkpoint is pending (between two, the next one's
	// trigger waits for the job's clock, which a freeze stops). An
	// alignment need not be on the screen: while the sources wait on
	// join/0's full channels, the barriers wait with them.
	pending := regexp.MustCompile(`(?m)^ +(\d+) pending`)
	s.WaitFor("join/0 slowed and a checkpoint held back", 60*time.Second, func(sc string) bool {
		return slow.MatchString(sc) && (aligning.MatchString(sc) || pending.MatchString(sc))
	})
	var id string
	var before string
	for try := 0; id == "" && try < 5; try++ {
		if try > 0 {
			s.Keys("Space")
			s.WaitFor("the world moving", 10*time.Second, func(sc string) bool { return !strings.Contains(sc, "FROZEN") })
			s.WaitFor("a checkpoint pending", 30*time.Second, func(sc string) bool {
				return aligning.MatchString(sc) || pending.MatchString(sc)
			})
		}
		s.Keys("Space")
		s.WaitFor("the world frozen", 10*time.Second, e2e.Contains("FROZEN"))
		time.Sleep(time.Second) // batches under way when it froze end
		before = s.Screen()
		if m := pending.FindStringSubmatch(before); m != nil {
			id = m[1]
		}
	}
	if id == "" {
		t.Fatalf("five freezes found no checkpoint pending:\n%s", before)
	}
	time.Sleep(freeze - time.Second)
	after := s.Screen()
	if a, b := slow.FindStringSubmatch(before), slow.FindStringSubmatch(after); a == nil || b == nil || a[1] != b[1] {
		t.Errorf("the slow fault's countdown moved (or went) while frozen: %q, then %q; the screen shows:\n%s", a, b, after)
	}
	if a, b := aligning.FindStringSubmatch(before), aligning.FindStringSubmatch(after); a != nil && (b == nil || a[0] != b[0]) {
		t.Errorf("the alignment timer moved while frozen: %q, then %q", a, b)
	}
	s.Keys("Space")
	done := regexp.MustCompile(`checkpoint ` + id + ` completed in ([0-9.]+m?s) \(\+(\d+)s frozen\)`)
	sc := s.WaitFor("checkpoint "+id+" to complete", 60*time.Second, done.MatchString)
	m := done.FindStringSubmatch(sc)
	frozen, _ := strconv.Atoi(m[2])
	t.Logf("checkpoint %s: %s of job time, %ds frozen", id, m[1], frozen)
	if frozen < 5 || frozen > 6 {
		t.Errorf("checkpoint %s says %ds frozen, want about %s", id, frozen, freeze)
	}
	s.Keys("q")
	s.WaitFor("the process to exit", 60*time.Second, e2e.Contains("faultline exited"))
}
