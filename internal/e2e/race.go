package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Command is the faultline binary with args, as the tests run it. Built
// with the race detector (make test), its race reports go to files that
// are read when the test ends: a race in faultline's own code fails the
// test; one wholly inside a dependency is logged, not failed, because it is
// not ours to fix. (IBM/sarama issue #2913: its transaction manager reads
// its state without the lock that writes take, which a transactional
// producer meets when a broker goes away — the broker-down fault.)
func Command(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	NeedProgram(t)
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), raceEnv(t)...)
	return cmd
}

// raceEnv is the environment that sends the race detector's reports of
// one run of the binary to files checked at the end of the test (nothing
// without the race detector).
func raceEnv(t *testing.T) []string {
	t.Helper()
	if !binaryRace {
		return nil
	}
	dir := t.TempDir()
	t.Cleanup(func() { checkRaceReports(t, dir) })
	return []string{"GORACE=exitcode=0 atexit_sleep_ms=0 log_path=" + filepath.Join(dir, "race")}
}

// checkRaceReports fails t for every race report in dir whose racing
// accesses touch faultline's code.
func checkRaceReports(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "race*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, report := range strings.Split(string(b), "WARNING: DATA RACE")[1:] {
			if racesInOurCode(report) {
				t.Errorf("data race in faultline's code:\n%s", report)
			} else {
				t.Logf("data race inside a dependency, not faultline's (see internal/e2e/race.go):\n%s", firstLines(report, 6))
			}
		}
	}
}

// racesInOurCode reports whether one of the two racing accesses of a race
// report has a faultline frame (the goroutines' creation stacks do not
// count: our code starts Sarama's goroutines).
func racesInOurCode(report string) bool {
	inAccess := false
	for _, line := range strings.Split(report, "\n") {
		l := strings.TrimSpace(line)
		switch {
		case l == "":
			inAccess = false
		case strings.HasSuffix(l, ":") && (strings.HasPrefix(l, "Read at") || strings.HasPrefix(l, "Write at") ||
			strings.HasPrefix(l, "Previous read at") || strings.HasPrefix(l, "Previous write at")):
			inAccess = true
		case inAccess && strings.HasPrefix(l, "github.com/faultline-dev/faultline/") || inAccess && strings.HasPrefix(l, "main."):
			return true
		}
	}
	return false
}

// firstLines is the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
