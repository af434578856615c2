package tour

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
	"github.com/faultline-dev/faultline/internal/tour"
)

// Every tour passes headless: each step held and the last line says ok.
// The tours run all at once: they wait on the job far more than they
// work, so the machine's two cores carry them together.
func TestEveryTourPassesHeadless(t *testing.T) {
	e2e.NeedProgram(t)
	t.Parallel()
	all, err := tour.LoadDir("../../../fixtures/tours")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 12 {
		t.Fatalf("%d tours", len(all))
	}
	// Four at a time: a dozen race-built jobs at once starved each other
	// (and the tests beside them) of the CPU their timings assume.
	var wg sync.WaitGroup
	slots := make(chan struct{}, 4)
	results := make([]e2e.Result, len(all))
	for i, tr := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			results[i] = e2e.Faultline(t, "tour", tr.Name, "--headless")
		}()
	}
	wg.Wait()
	for i, tr := range all {
		r := results[i]
		var steps int
		var last map[string]any
		sc := bufio.NewScanner(strings.NewReader(r.Stdout))
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("tour %s: a line that is not JSON: %q", tr.Name, sc.Text())
			}
			if _, ok := m["step"]; ok {
				steps++
				if m["ok"] != true {
					t.Errorf("tour %s: step %v (%v) did not hold: %v", tr.Name, m["step"], m["kind"], m["detail"])
				}
			}
			last = m
		}
		if r.Code != 0 || last == nil || last["ok"] != true || steps != len(tr.Steps)-countRuns(tr.Steps) {
			t.Errorf("tour %s: exit %d, %d step lines of %d, last line %v: %s", tr.Name, r.Code, steps, len(tr.Steps), last, r.Stderr)
		}
		t.Logf("tour %s: %v ms", tr.Name, last["elapsed_ms"])
	}
}

func countRuns[S ~[]E, E interface{ Kind() string }](steps S) int {
	n := 0
	for _, s := range steps {
		if s.Kind() == "run" {
			n++
		}
	}
	return n
}

// faultline tour lists every tour with its length; an unknown one and a
// malformed tour file are refused with exit 2, the latter in one line
// with its file, line and field.
func TestTourCommandListsAndRefuses(t *testing.T) {
	e2e.NeedProgram(t)
	t.Parallel()
	list := e2e.Faultline(t, "tour")
	all, err := tour.LoadDir("../../../fixtures/tours")
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range all {
		if list.Code != 0 || !strings.Contains(list.Stdout, tr.Name) || !strings.Contains(list.Stdout, tr.Summary) {
			t.Fatalf("faultline tour: exit %d, does not list %s: %s", list.Code, tr.Name, list.Stdout)
		}
	}
	unknown := e2e.Faultline(t, "tour", "nosuch")
	if unknown.Code != 2 || !strings.Contains(unknown.Stderr, `no tour called "nosuch"`) {
		t.Fatalf("unknown tour: exit %d: %s", unknown.Code, unknown.Stderr)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("title: T\nsummary: S\nminutes: 2\nsteps:\n  - say: hello\n  - wait: {event: checkpoint_completed, timeout: soon}\n"), 0o644)
	r := e2e.Faultline(t, "tour", bad, "--headless")
	want := bad + ":6: steps[1].wait.timeout: must be a duration"
	if r.Code != 2 || !strings.Contains(r.Stderr, want) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Fatalf("malformed tour: exit %d, stderr %q, want one line with %q", r.Code, r.Stderr, want)
	}
}

// A tour carries the job's verdict: a run of its job that FAILED where no
// check said it would ends the tour with exit 3 and the job's error and
// report in its last line; where a check claims it, the tour passes.
func TestTourCarriesTheJobsVerdict(t *testing.T) {
	e2e.NeedProgram(t)
	t.Parallel()
	const body = `title: T
summary: S
minutes: 1
run: [--checkpoint-interval, 300ms, --rate, "400", --restart-strategy, none]
steps:
  - wait: {checkpoints: 1, timeout: 30s}
  - do: {inject: panic, task: join/1}
  - wait: {job_status: FAILED, timeout: 30s}
`
	for _, tc := range []struct {
		name, extra string
		code        int
	}{
		{"failed unclaimed", "", 3},
		{"failed as claimed", "  - check: {claim: the job fails, job_status: FAILED}\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "verdict.yaml")
			os.WriteFile(file, []byte(body+tc.extra), 0o644)
			r := e2e.Faultline(t, "tour", file, "--headless")
			lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
			var end map[string]any
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &end); err != nil {
				t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
			}
			report, _ := end["report"].(map[string]any)
			if r.Code != tc.code || end["ok"] != (tc.code == 0) || report == nil || report["status"] != "FAILED" {
				t.Fatalf("exit %d (want %d), last line %v\nstderr %s", r.Code, tc.code, end, r.Stderr)
			}
			if tc.code != 0 && (e2e.Num(end, "job_exit") != 3 || !strings.Contains(r.Stderr, "the job FAILED")) {
				t.Fatalf("last line %v, stderr %q: want the job's exit 3 and its error", end, r.Stderr)
			}
		})
	}
}

// A tour file given on the command line is read as a job file is: a named
// pipe, a folder or a file of more than 1 MiB is refused at once, exit 2,
// in one line that names the file and says what it is; nothing waits on
// the pipe or reads the big file into memory.
func TestTourFileMustBeASmallRegularFile(t *testing.T) {
	e2e.NeedProgram(t)
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "folder.yaml")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, nil, 0o644); err != nil || os.Truncate(big, 200<<20) != nil {
		t.Fatal("cannot make a 200 MiB file: ", err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "not a regular file (a named pipe)"},
		{folder, "is a folder"},
		{big, "209715200 bytes, more than the 1048576 a tour may have"},
	} {
		cmd := e2e.Command(t, "tour", tc.path, "--headless")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("faultline tour %s still runs after 20 s", tc.path)
			continue
		}
		line := strings.TrimRight(stderr.String(), "\n")
		if code := cmd.ProcessState.ExitCode(); code != 2 || strings.Contains(line, "\n") ||
			!strings.Contains(line, "read tour "+tc.path+": ") || !strings.Contains(line, tc.want) {
			t.Errorf("faultline tour %s: exit %d, stderr %q; want exit 2 and one line naming the file and saying %q",
				tc.path, code, stderr.String(), tc.want)
		}
	}
}
