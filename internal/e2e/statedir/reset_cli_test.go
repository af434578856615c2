package statedir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
	"github.com/faultline-dev/faultline/internal/e2e"
)

// stateDirEntries names what dir holds, sorted.
func stateDirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// reset empties the state dir of everything a run keeps (without a
// terminal only with --yes), and the next run starts from nothing: no
// checkpoint restored, its output one run's worth.
func TestResetEmptiesTheStateDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"run", "--headless", "--records", "6000", "--checkpoint-interval", "100ms", "--state-dir", dir}
	first := e2e.Faultline(t, args...)
	if first.Code != 0 {
		t.Fatalf("first run: exit %d, stderr %q", first.Code, first.Stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad-record.json"), []byte(`{"records":[{"topic":"orders","partition":0,"offset":1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	before := stateDirEntries(t, dir)

	oneLine(t, e2e.Faultline(t, "reset", "--state-dir", dir), "checkpoints of job orders", "the embedded broker's log", "bad-record.json", "nothing deleted", "--yes")
	if got := stateDirEntries(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("a refused reset left %v of %v", got, before)
	}

	r := e2e.Faultline(t, "reset", "--yes", "--state-dir", dir)
	if r.Code != 0 || !strings.Contains(r.Stdout, "reset "+dir+": deleted checkpoints of job orders") {
		t.Fatalf("reset --yes: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	if got := stateDirEntries(t, dir); fmt.Sprint(got) != "[faultline.log]" {
		t.Fatalf("after reset the state dir holds %v; want the log file alone", got)
	}
	r = e2e.Faultline(t, "reset", "--yes", "--state-dir", dir)
	if r.Code != 0 || !strings.Contains(r.Stdout, "nothing to reset") {
		t.Fatalf("reset of an empty state dir: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}

	// The same command as the first run is not refused: it starts anew.
	again := e2e.Faultline(t, args...)
	if again.Code != 0 || again.Stderr != "" {
		t.Fatalf("run after reset: exit %d, stderr %q", again.Code, again.Stderr)
	}
	for _, e := range again.EventsNamed("restored") {
		if e2e.Num(e, "checkpoint") != 0 {
			t.Fatalf("the run after reset restored %v", e)
		}
	}
	if from := again.Report["checkpoints"].(map[string]any)["restored_from"].([]any); len(from) != 0 {
		t.Fatalf("the run after reset restored from %v", from)
	}
	if done := again.EventsNamed("checkpoint_completed"); len(done) == 0 || e2e.Num(done[0], "id") != 1 {
		t.Fatalf("the run after reset completed checkpoints %v; want ids from 1", done)
	}
	for _, f := range []string{"expected", "committed"} {
		if e2e.Num(again.Report, "verify", f) != e2e.Num(first.Report, "verify", f) || e2e.Num(again.Report, "verify", "duplicates") != 0 {
			t.Fatalf("verify after reset %v; the first run's %v", again.Report["verify"], first.Report["verify"])
		}
	}
}

// reset leaves a state dir that a running faultline holds as it is, and
// names the process; a state dir that is not there is nothing to reset.
func TestResetLeavesAHeldStateDirAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := badgerstore.Open(filepath.Join(dir, "checkpoints"), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.WriteFile(filepath.Join(dir, "input.json"), []byte(`{"job":"orders","seed":1,"records":0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e2e.Faultline(t, "reset", "--yes", "--state-dir", dir)
	if r.Code != 1 || !strings.Contains(r.Stderr, fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(r.Stderr, "nothing deleted") {
		t.Fatalf("reset of a held state dir: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "input.json")); err != nil {
		t.Fatalf("reset of a held state dir deleted input.json: %v", err)
	}
	gone := filepath.Join(dir, "not-there")
	r = e2e.Faultline(t, "reset", "--state-dir", gone)
	if r.Code != 0 || !strings.Contains(r.Stdout, "nothing to reset") {
		t.Fatalf("reset of a missing state dir: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Fatalf("reset created the missing state dir: %v", err)
	}
}

// On a terminal reset says what it deletes and asks: anything but y keeps
// everything (exit 1), y deletes it.
func TestResetAsksOnATerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input := filepath.Join(dir, "input.json")
	if err := os.WriteFile(input, []byte(`{"job":"orders","seed":1,"records":0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := e2e.ShellEnv(t)
	for _, answer := range []string{"n", "y"} {
		s := e2e.StartTmux(t, 200, 10, fmt.Sprintf("%s%s reset --state-dir %s; echo faultline exited $?; sleep 600", env, e2e.Binary(t), dir))
		s.WaitFor("the question", 15*time.Second, e2e.Contains("delete the record of its input (input.json) in "+dir+"? [y/N]"))
		s.Keys(answer, "Enter")
		sc := s.WaitFor("the summary of reset", 15*time.Second, e2e.Contains("faultline exited"))
		_, err := os.Stat(input)
		switch answer {
		case "n":
			if !strings.Contains(sc, "nothing deleted") || !strings.Contains(sc, "faultline exited 1") || err != nil {
				t.Fatalf("answered n: %v; the screen shows:\n%s", err, sc)
			}
		case "y":
			if !strings.Contains(sc, "deleted the record of its input") || !strings.Contains(sc, "faultline exited 0") || !os.IsNotExist(err) {
				t.Fatalf("answered y: %v; the screen shows:\n%s", err, sc)
			}
		}
	}
}

// A run that fails on a poison record with --on-bad-record fail says that
// every such run will (on stderr: stdout stays JSON lines), and so does
// the next one before it starts, until a run with skip gets past the
// record.
func TestPoisonWithFailWarnsTheNextRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"run", "--headless", "--records", "20000", "--rate", "10000", "--checkpoint-interval", "100ms",
		"--restart-strategy", "none", "--state-dir", dir}
	first := e2e.Faultline(t, append(args, "--inject", "after=500ms,fault=poison")...)
	if first.Code != 3 {
		t.Fatalf("poisoned run: exit %d, stderr %q", first.Code, first.Stderr)
	}
	poison := first.EventsNamed("poison_written")
	if len(poison) != 1 {
		t.Fatalf("poison_written events %v", poison)
	}
	at := fmt.Sprintf("the input holds a bad record at orders/%d@%d", int(e2e.Num(poison[0], "partition")), int64(e2e.Num(poison[0], "offset")))
	const again = "every run with --on-bad-record fail stops at it again; go on with --on-bad-record skip or dead-letter, or start over with `faultline reset --state-dir "
	lines := strings.Split(strings.TrimSpace(first.Stderr), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "faultline: the job FAILED") || !strings.Contains(lines[1], at) || !strings.Contains(lines[1], again) {
		t.Fatalf("poisoned run's stderr:\n%s\nwant the failure, then %q … %q", first.Stderr, at, again)
	}

	second := e2e.Faultline(t, append(args, "--resume")...)
	lines = strings.Split(strings.TrimSpace(second.Stderr), "\n")
	if second.Code != 3 || !strings.Contains(lines[0], at) || !strings.Contains(lines[0], again) {
		t.Fatalf("next run with fail: exit %d, stderr:\n%s\nwant the warning first", second.Code, second.Stderr)
	}
	// The same words as an event, which the terminal UI shows.
	if n := second.EventsNamed("notice"); len(n) != 1 || !strings.Contains(n[0]["text"].(string), at) {
		t.Fatalf("next run's notice events %v, want one saying %q", n, at)
	}

	skip := e2e.Faultline(t, append(args, "--resume", "--on-bad-record", "skip")...)
	if skip.Code != 0 || strings.Contains(skip.Stderr, "bad record") || e2e.Num(skip.Report, "bad_records", "skipped") != 1 {
		t.Fatalf("run with skip: exit %d, bad_records %v, stderr %q", skip.Code, skip.Report["bad_records"], skip.Stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad-record.json")); !os.IsNotExist(err) {
		t.Fatalf("the note of the bad record stays after a run got past it: %v", err)
	}
}
