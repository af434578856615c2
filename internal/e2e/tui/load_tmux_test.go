package tui

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// A subtask slowed tenfold, at the UI's own input rate, reads as the
// bottleneck: the selected join/0's rule says it is busy near 1000 ms of
// every second, and the subtasks upstream of it read back-pressured.
func TestTUISlowedSubtaskReadsAsTheBottleneck(t *testing.T) {
	e2e.NeedProgram(t)
	t.Parallel()
	s := e2e.StartDemo(t)
	s.WaitFor("join/0 selected", 5*time.Second, e2e.Contains("▸join/0"))
	s.Inject("3", "slow", "join/0")
	busy := regexp.MustCompile(`▸join/0 · busy (9[5-9]\d|1000) idle \d+ bp \d+ ms/s`)
	s.WaitFor("join/0 busy near 1000 ms/s and its upstreams back-pressured", 30*time.Second, func(sc string) bool {
		if !busy.MatchString(sc) {
			return false
		}
		pressured := 0
		for _, line := range strings.Split(sc, "\n") {
			if strings.HasPrefix(line, "parse-") {
				pressured += strings.Count(line, "bp HIGH")
			}
		}
		return pressured >= 2
	})
}
