// Package e2e holds what faultline's end-to-end tests share. They run the
// real binary as a user would and read what it prints: JSON lines on
// stdout, one-line errors on stderr, exit codes. The program is built once
// per test package (Main), run to its end (Faultline) or watched while it
// runs (StartRun, Command), with a broker of its own (StartBroker) or in a
// terminal (StartTmux). Only tests import it; it imports nothing of
// faultline.
//
// The end-to-end tests live in the packages below it, grouped by what they
// exercise so that `go test` runs them side by side: runs (headless runs
// and the Kafka lane), faults (the fault catalogue, failover, unaligned
// checkpoints, brokers that fail), crash (kills and the checkpoints they
// leave), statedir (what a state dir carries from run to run), tour (the
// guided tours), tui (the terminal UI in tmux) and soak (the soaks).
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// binary is the program Main built; "" with -short. binaryRace says
// whether it was built with the race detector.
var (
	binary     string
	binaryRace bool
)

// Main is the TestMain of a package of end-to-end tests whose subject is
// the program's own concurrency (runs, tours): it builds the
// program once, with the race detector when the tests run with it, runs
// the tests and removes it; with -short it builds nothing.
func Main(m *testing.M) { mainWith(m, raceEnabled) }

// MainPlain is Main for the packages whose subject is what kills, faults
// and a damaged state dir leave behind (crash, faults, statedir, soak), and
// what the terminal UI shows (tui): the program is built without the race
// detector, which multiplies the work of every record about threefold, and
// of every frame drawn about fourfold, on the same code paths that the
// race-built packages and the unit tests (internal/cli's UI over a real
// job among them) check for races.
// make test-e2e-race runs them with the race-built program too
// (FAULTLINE_E2E_ALL_RACE).
func MainPlain(m *testing.M) { mainWith(m, raceEnabled && os.Getenv(allRaceEnv) != "") }

func mainWith(m *testing.M, race bool) {
	flag.Parse()
	if testing.Short() {
		// make test-short: the unit tests only; every test that needs the
		// program says so and is skipped (see NeedProgram).
		os.Exit(m.Run())
	}
	binaryRace = race
	env := prebuiltEnv
	if !race {
		env = prebuiltPlainEnv
	}
	if prebuilt := os.Getenv(env); prebuilt != "" {
		// make test builds the program once for every package of
		// end-to-end tests, with and without the race detector.
		if _, err := os.Stat(prebuilt); err != nil {
			panic(fmt.Sprintf("%s: %v", env, err))
		}
		binary = prebuilt
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "faultline-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "faultline")
	// The program itself, as a user builds it (the module's root package).
	args := []string{"build", "-o", binary, modulePath}
	if race {
		args = []string{"build", "-race", "-o", binary, modulePath}
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// prebuiltEnv and prebuiltPlainEnv name the programs make test built for
// every package of end-to-end tests, with the race detector (Main) and
// without (MainPlain); without them each package builds its own.
// allRaceEnv has MainPlain's packages run the race-built program as well.
const (
	prebuiltEnv      = "FAULTLINE_E2E_BINARY"
	prebuiltPlainEnv = "FAULTLINE_E2E_PLAIN_BINARY"
	allRaceEnv       = "FAULTLINE_E2E_ALL_RACE"
)

// RaceBuilt says whether the program under test was built with the race
// detector (make test-e2e-race), which multiplies its memory and its work.
func RaceBuilt() bool { return binaryRace }

// NeedProgram skips t in `make test-short`, which builds no program: the
// end-to-end tests run in `make test`.
func NeedProgram(t *testing.T) {
	t.Helper()
	if binary == "" {
		t.Skip("an end-to-end test: make test runs it (make test-short builds no program)")
	}
}

// Binary is the path of the program Main built, for a test that starts it
// itself (in a shell, in tmux); it skips t where there is none (see
// NeedProgram).
func Binary(t *testing.T) string {
	t.Helper()
	NeedProgram(t)
	return binary
}

// Result is what one run of the program left: its exit code, what it
// printed, and for `faultline run` the JSON lines of its stdout, the
// events apart from the report.
type Result struct {
	Code   int
	Stdout string
	Stderr string
	Events []map[string]any
	Report map[string]any
}

// Faultline runs the program with args to its end and returns what it
// left. Each `run` gets its own embedded broker on a free port, and its
// own state dir unless args name one.
func Faultline(t *testing.T, args ...string) Result {
	t.Helper()
	if len(args) > 0 && args[0] == "run" {
		// Each run gets its own embedded broker on a free port, and its
		// own state dir unless it names one.
		args = append(args, "--listen", "0")
		named := false
		for _, a := range args {
			named = named || a == "--state-dir"
		}
		if !named {
			args = append(args, "--state-dir", t.TempDir())
		}
	}
	cmd := Command(t, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(cmd.Env, "XDG_DATA_HOME="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A run that hangs would hold its package to the -timeout and say
	// nothing of where: past runLimit it gets SIGQUIT, which prints every
	// goroutine's stack on its stderr, and the test fails with that.
	var hung atomic.Bool
	watchdog := time.AfterFunc(runLimit, func() {
		hung.Store(true)
		cmd.Process.Signal(syscall.SIGQUIT)
	})
	err := cmd.Wait()
	watchdog.Stop()
	r := Result{Stdout: out.String(), Stderr: errb.String()}
	if hung.Load() {
		t.Fatalf("faultline %s had not ended after %s; its stderr after SIGQUIT:\n%s", strings.Join(args, " "), runLimit, lastBytes(r.Stderr, 64<<10))
	}
	if ee, ok := err.(*exec.ExitError); ok {
		r.Code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() && len(args) > 0 && args[0] == "run" {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", sc.Text())
		}
		if rep, ok := m["report"].(map[string]any); ok {
			r.Report = rep
		} else {
			r.Events = append(r.Events, m)
		}
	}
	return r
}

// runLimit is how long Faultline lets one run of the program take: far
// past what any test's run needs on a busy machine, well within a
// package's -timeout.
const runLimit = 4 * time.Minute

// lastBytes is the end of s, at most n bytes of it.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// EventsNamed returns the events named name.
func (r Result) EventsNamed(name string) []map[string]any {
	var out []map[string]any
	for _, e := range r.Events {
		if e["event"] == name {
			out = append(out, e)
		}
	}
	return out
}

// Num is the number at path in m (a JSON object, nested objects along the
// path), 0 when it is not a number.
func Num(m map[string]any, path ...string) float64 {
	var v any = m
	for _, p := range path {
		v = v.(map[string]any)[p]
	}
	f, _ := v.(float64)
	return f
}

// JSONNum is v as JSON: an id read from JSON, written back as the
// commands take it.
func JSONNum(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// modulePath is the module's path: its root package is the program.
const modulePath = "github.com/faultline-dev/faultline"
