package statedir

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// A tour killed on the spot (SIGKILL, its embedded broker with it) leaves
// its state dir; the next tour removes it and says so, and when that one
// ends, nothing of either is left.
func TestTourKilledOnTheSpotLeavesNothingForLong(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	env := "TMPDIR=" + tmp
	steps := 0
	came := e2e.KillWhenWith(t, []string{env}, func(line map[string]any) bool {
		if _, ok := line["step"]; ok {
			steps++
		}
		return steps == 3
	}, "tour", "recovery", "--headless")
	if !came {
		t.Fatal("the tour ended before its third step")
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "faultline-tour-recovery-*"))
	if len(left) != 1 {
		t.Fatalf("the killed tour left %v, want its state dir", left)
	}
	// Past the grace a fresh folder gets before it counts as left behind
	// (five seconds, as docs/ARCHITECTURE.md says).
	time.Sleep(5*time.Second + time.Second)
	again := e2e.Command(t, "tour", "recovery", "--headless")
	again.Env = append(again.Env, env)
	var stderr strings.Builder
	again.Stderr = &stderr
	if err := again.Run(); err != nil {
		t.Fatalf("the next tour: %v; stderr %q", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "faultline: removed the state dir that a tour stopped on the spot left behind (") {
		t.Errorf("stderr %q does not say what it removed", stderr.String())
	}
	if rest, _ := filepath.Glob(filepath.Join(tmp, "faultline-tour-*")); len(rest) != 0 {
		t.Errorf("left in the temporary directory: %v", rest)
	}
}
