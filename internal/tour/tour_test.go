package tour

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// A malformed tour is refused in one line naming the file, the line and
// the field.
func TestMalformedToursAreRefusedWithFileLineAndField(t *testing.T) {
	head := "title: T\nsummary: S\nminutes: 2\n"
	for _, c := range []struct{ name, body, want string }{
		{"unknown step key", head + "steps:\n  - say: hi\n  - wiat: {event: x}\n", "t.yaml:6: steps[1].wiat: unknown key \"wiat\""},
		{"two actions", head + "steps:\n  - say: hi\n    tempo: slow\n", "t.yaml:6: steps[0].tempo: a step does one thing, but this one also has say"},
		{"bad duration", head + "steps:\n  - wait: {event: checkpoint_completed, timeout: soon}\n", "t.yaml:5: steps[0].wait.timeout: must be a duration"},
		{"unknown fault", head + "steps:\n  - do: {inject: meteor, task: join/1}\n", "t.yaml:5: steps[0].do.inject: unknown fault \"meteor\""},
		{"unknown event", head + "steps:\n  - wait: {event: checkpoint_complete}\n", "t.yaml:5: steps[0].wait.event: no event is called \"checkpoint_complete\" (events: bad_record, "},
		{"unknown event field", head + "steps:\n  - wait: {event: failover, where: {stratgy: full}}\n", "t.yaml:5: steps[0].wait.where.stratgy: failover events have no field \"stratgy\" (fields: failed, strategy, tasks)"},
		{"unknown event checked", head + "steps:\n  - check: {claim: c, event: restart}\n", "t.yaml:5: steps[0].check.event: no event is called \"restart\""},
		{"task fault without task", head + "steps:\n  - do: {inject: panic}\n", "steps[0].do.task: required"},
		{"bad comparison", head + "steps:\n  - check: {claim: c, duplicates: some}\n", "t.yaml:5: steps[0].check.duplicates: \"some\" is not a comparison"},
		{"no claim", head + "steps:\n  - check: {duplicates: \"0\"}\n", "t.yaml:5: steps[0].check.claim: required"},
		{"missing steps", head, "t.yaml:1: steps: required"},
		{"bad tempo", head + "steps:\n  - tempo: fast\n", "t.yaml:5: steps[0].tempo: \"fast\" is not one of normal, slow, slower, frozen"},
		{"syntax", head + "steps:\n  - say: [unclosed\n", "t.yaml:"},
		{"bad task", head + "steps:\n  - highlight: {task: join}\n", "t.yaml:5: steps[0].highlight.task: \"join\" is not a subtask"},
		{"run first", head + "steps:\n  - run: [--resume]\n", "t.yaml:5: steps[0].run: the first run's flags go in run at the top"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line with %q", err, c.want)
			}
		})
	}
}

func TestComparisons(t *testing.T) {
	for _, c := range []struct {
		n    int64
		cmp  string
		want bool
	}{{0, "0", true}, {1, "0", false}, {3, ">0", true}, {0, ">0", false}, {2, ">=2", true}, {4, "<5", true}, {5, "<5", false}, {5, "<=5", true}, {7, "=7", true}} {
		if got := compare(c.n, c.cmp); got != c.want {
			t.Errorf("compare(%d, %q) = %v", c.n, c.cmp, got)
		}
	}
}

// fakeDriver is a job that does what it is told and says so in events.
type fakeDriver struct {
	mu     sync.Mutex
	snap   view.Snapshot
	r      *Runner
	called []string
	// afterInject is the job's status once a fault was injected ("":
	// it stays RUNNING).
	afterInject string
}

func (f *fakeDriver) Snapshot() view.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.snap
	if s.Job.Status == "" {
		s.Job.Status = "RUNNING"
	}
	return s
}
func (f *fakeDriver) InjectFor(fault, task string, _ time.Duration) error {
	f.mu.Lock()
	f.called = append(f.called, "inject "+fault+" "+task)
	f.snap.Job.Status = f.afterInject
	f.mu.Unlock()
	f.r.Feed(view.Stamped{Event: view.FaultInjected{Task: task, Fault: fault}})
	return nil
}
func (f *fakeDriver) TriggerCheckpoint() (int64, error) { return 1, nil }
func (f *fakeDriver) TriggerSavepoint() (int64, error)  { return 1, nil }
func (f *fakeDriver) SetMode(string) error              { return nil }
func (f *fakeDriver) SetTempo(view.Tempo)               {}
func (f *fakeDriver) Step()                             {}
func (f *fakeDriver) ResetRestarts()                    {}
func (f *fakeDriver) SetRate(float64) error             { return nil }

// A headless tour presses its keys itself, waits for the events they set
// off, and judges its checks by the verification as of a checkpoint that
// completed after the newest restore.
func TestHeadlessRunnerWaitsAndChecks(t *testing.T) {
	tr, err := Parse("t.yaml", []byte(`title: T
summary: S
minutes: 2
steps:
  - press: {keys: x then 1, do: {inject: panic, task: join/1}}
  - wait: {event: restored, timeout: 5s}
  - check: {claim: exact, duplicates: "0", lost: "0", within: 5s}
  - check: {claim: restored from the newest, restored_from: newest}
`))
	if err != nil {
		t.Fatal(err)
	}
	var results []StepResult
	r := NewRunner(tr, Headless, func(s StepResult) { results = append(results, s) })
	d := &fakeDriver{r: r}
	d.snap.Verify = view.Verify{Available: true, AsOf: 1}
	r.Feed(view.Stamped{Event: view.CheckpointCompleted{ID: 1}})
	go func() {
		time.Sleep(50 * time.Millisecond)
		r.Feed(view.Stamped{Event: view.Restored{Checkpoint: 1}})
		time.Sleep(300 * time.Millisecond)
		// Until a checkpoint after the restore, the verification does not
		// cover the replay: the check waits for it.
		r.Feed(view.Stamped{Event: view.CheckpointCompleted{ID: 2}})
		d.mu.Lock()
		d.snap.Verify = view.Verify{Available: true, AsOf: 2}
		d.mu.Unlock()
	}()
	next, _, err := r.Run(context.Background(), d, 0)
	if err != nil || next != 4 || r.Failed() != 0 {
		t.Fatalf("run: next %d, %v, %d failed: %+v", next, err, r.Failed(), results)
	}
	if len(d.called) != 1 || d.called[0] != "inject panic join/1" {
		t.Fatalf("the tour did %v", d.called)
	}
	if results[2].Ms < 200 {
		t.Fatalf("the check held after %d ms, before the verification covered the restore", results[2].Ms)
	}
	if p := r.Panel(); !p.Done || !p.Passed || p.Check == nil || !p.Check.Held {
		t.Fatalf("panel %+v", p)
	}
}

// A check's result stays on the panel until the tour next acts on the job:
// "nothing duplicated" said before a switch to at-least-once does not
// stand beside that mode's duplicates.
func TestACheckIsForgottenWhenTheTourActs(t *testing.T) {
	tr, err := Parse("t.yaml", []byte(`title: T
summary: S
minutes: 2
steps:
  - check: {claim: exact, duplicates: "0", within: 1s}
  - say: read this beside the check
    auto: true
  - do: {mode: at-least-once}
`))
	if err != nil {
		t.Fatal(err)
	}
	var panels []*view.TourCheck
	var r *Runner
	r = NewRunner(tr, Headless, func(StepResult) { panels = append(panels, r.Panel().Check) })
	d := &fakeDriver{r: r}
	d.snap.Verify = view.Verify{Available: true, AsOf: 1}
	d.snap.Job.Status = "RUNNING"
	if _, _, err := r.Run(context.Background(), d, 0); err != nil {
		t.Fatal(err)
	}
	if len(panels) != 3 || panels[0] == nil || panels[1] == nil || panels[2] != nil {
		t.Fatalf("the check on the panel after each step: %v", panels)
	}
}

// A claim that does not hold fails its step and says what was seen.
func TestAFailedCheckSaysWhy(t *testing.T) {
	tr, err := Parse("t.yaml", []byte("title: T\nsummary: S\nminutes: 2\nsteps:\n  - check: {claim: no duplicates, duplicates: \"0\", within: 200ms, explain: because}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var res StepResult
	r := NewRunner(tr, Headless, func(s StepResult) { res = s })
	d := &fakeDriver{r: r}
	d.snap.Verify = view.Verify{Available: true, AsOf: 3, Duplicates: 12}
	if _, _, err := r.Run(context.Background(), d, 0); err != nil {
		t.Fatal(err)
	}
	if res.OK || r.Failed() != 1 || res.Detail != "duplicates 12 — because" {
		t.Fatalf("result %+v", res)
	}
	if p := r.Panel(); p.Passed || p.Check.Held {
		t.Fatalf("panel %+v", p)
	}
}

// In autoplay a narration takes its reading time: an event its key set
// off during it still ends the wait that follows.
func TestAWaitSeesWhatTheKeySetOffDuringTheNarration(t *testing.T) {
	tr, err := Parse("t.yaml", []byte(`title: T
summary: S
minutes: 2
steps:
  - press: {keys: x then 1, do: {inject: panic, task: join/1}}
  - wait: {job_status: RESTARTING, timeout: 5s}
  - say: the restart strategy waits
  - wait: {event: restored, timeout: 1s}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(tr, Autoplay, nil)
	r.ReadTime = func(int) time.Duration { return 300 * time.Millisecond }
	d := &fakeDriver{r: r, afterInject: "RESTARTING"}
	go func() {
		time.Sleep(2100 * time.Millisecond) // autoplay presses after 2 s
		r.Feed(view.Stamped{Event: view.Restored{Checkpoint: 1}})
	}()
	if _, _, err := r.Run(context.Background(), d, 0); err != nil || r.Failed() != 0 {
		t.Fatalf("run: %v, %d failed", err, r.Failed())
	}
}

// b shows the narration before the one on screen, and n returns: on a
// narration step that is the one before it, on a key step the last one.
func TestBackShowsTheEarlierNarrations(t *testing.T) {
	tr, err := Parse("t.yaml", []byte(`title: T
summary: S
minutes: 2
steps:
  - say: one
  - say: two
  - press: {keys: c, do: {checkpoint: true}}
  - say: three
`))
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(tr, Interactive, nil)
	d := &fakeDriver{r: r}
	done := make(chan error, 1)
	go func() { _, _, err := r.Run(context.Background(), d, 0); done <- err }()
	shows := func(step int, text string, earlier bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			p := r.Panel()
			if p.Step == step && p.Text == text && p.Earlier == earlier {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("panel shows step %d %q (earlier %v), want step %d %q (earlier %v)", p.Step, p.Text, p.Earlier, step, text, earlier)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	shows(1, "one", false)
	r.Key("b") // nothing before the first narration
	shows(1, "one", false)
	r.Key("n")
	shows(2, "two", false)
	r.Key("b")
	shows(1, "one", true)
	r.Key("b") // no further back
	shows(1, "one", true)
	r.Key("n") // returns to the current step, does not go on
	shows(2, "two", false)
	r.Key("n")
	shows(3, "two", false) // the key step keeps the narration before it
	r.Key("b")
	shows(2, "two", true)
	r.Key("b")
	shows(1, "one", true)
	r.Key("n")
	r.Feed(view.Stamped{Event: view.CheckpointTriggered{ID: 1}})
	shows(4, "three", false)
	r.Key("n")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A tour file is read as a job spec is: a named pipe or a file of more
// than MaxFileSize is refused at once with the file's name, never waited
// on or read into memory.
func TestLoadReadsOnlyRegularFilesOfASaneSize(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, nil, 0o644); err != nil || os.Truncate(big, 200<<20) != nil {
		t.Fatal("cannot make a 200 MiB file: ", err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "read tour " + fifo + ": not a regular file (a named pipe)"},
		{big, "read tour " + big + ": 209715200 bytes, more than the 1048576 a tour may have"},
	} {
		done := make(chan error, 1)
		go func() { _, err := Load(tc.path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Load(%s) = %v; want %q", tc.path, err, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Load(%s) still runs after 5s", tc.path)
		}
	}
}

// A run from {savepoint} after the job's last savepoint failed (the one
// taken as it stopped) is refused, not started from an older savepoint
// that would write the output after it twice.
func TestExpandRefusesAnOlderSavepoint(t *testing.T) {
	tr := &Tour{Name: "t", Steps: []Step{{Say: "x"}}}
	r := NewRunner(tr, Headless, nil)
	r.Feed(view.Stamped{Event: view.SavepointCompleted{ID: 2}})
	got, err := r.Expand([]string{"--from-savepoint", "{savepoint}"})
	if err != nil || got[1] != "2" {
		t.Fatalf("Expand = %v, %v; want savepoint 2", got, err)
	}
	r.Feed(view.Stamped{Event: view.SavepointFailed{Error: "timed out after 2s"}})
	if _, err := r.Expand([]string{"--from-savepoint", "{savepoint}"}); err == nil || !strings.Contains(err.Error(), "timed out after 2s") {
		t.Fatalf("Expand after a failed savepoint: %v, want a refusal that says why", err)
	}
	if got, err := r.Expand([]string{"--rate", "400"}); err != nil || got[1] != "400" {
		t.Fatalf("Expand without {savepoint} = %v, %v", got, err)
	}
	r.Feed(view.Stamped{Event: view.SavepointCompleted{ID: 3}})
	if got, err := r.Expand([]string{"{savepoint}"}); err != nil || got[0] != "3" {
		t.Fatalf("Expand after a newer savepoint = %v, %v", got, err)
	}
}

// A fault the learner sends into another subtask than the step asks for
// gets a hint, and the tour still waits for the right one.
func TestWrongFaultGetsAHint(t *testing.T) {
	tr, err := Parse("t.yaml", []byte(`title: T
summary: s
minutes: 1
concepts: [recovery]
steps:
  - press: {keys: x then 1, do: {inject: panic, task: join/1}}
  - say: done
`))
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(tr, Interactive, nil)
	d := &fakeDriver{r: r}
	done := make(chan error, 1)
	go func() { _, _, err := r.Run(context.Background(), d, 0); done <- err }()
	waitPanel := func(what string, ok func(p *view.Tour) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !ok(r.Panel()) {
			if time.Now().After(deadline) {
				t.Fatalf("the panel never showed %s: %+v", what, r.Panel())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitPanel("the key to press", func(p *view.Tour) bool { return p.Key != "" })
	r.Feed(view.Stamped{Event: view.FaultInjected{Task: "join/0", Fault: "panic"}})
	waitPanel("a hint", func(p *view.Tour) bool {
		return strings.Contains(p.Hint, "panic into join/0") && strings.Contains(p.Hint, "asks for panic into join/1")
	})
	r.Feed(view.Stamped{Event: view.FaultInjected{Task: "join/1", Fault: "panic"}})
	waitPanel("the next step", func(p *view.Tour) bool { return p.Text == "done" && p.Hint == "" })
	r.Key("n")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A narration said while the tour points at something the screen does not
// show fails, naming it; one said with nothing pointed at is not judged.
func TestANarrationPointingAtWhatIsNotOnScreenFails(t *testing.T) {
	tr, err := Parse("t.yaml", []byte(`title: T
summary: S
minutes: 2
steps:
  - say: before anything is pointed at
  - highlight: {checkpoint: 5}
  - say: look at checkpoint 5
`))
	if err != nil {
		t.Fatal(err)
	}
	var results []StepResult
	r := NewRunner(tr, Headless, func(s StepResult) { results = append(results, s) })
	var seen []view.Highlight
	r.Seen = func(s view.Snapshot) []string {
		seen = append(seen, s.Tour.Highlight)
		return []string{"checkpoint 5's row at 80x24"}
	}
	if _, _, err := r.Run(context.Background(), &fakeDriver{r: r}, 0); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0].Checkpoint != 5 {
		t.Fatalf("Seen was asked about %+v, want once, about checkpoint 5", seen)
	}
	if !results[0].OK || results[2].OK || results[2].Detail != "pointed at and not on screen: checkpoint 5's row at 80x24" || r.Failed() != 1 {
		t.Fatalf("results %+v, %d failed", results, r.Failed())
	}
}

// Asks tells which fault the step shown now asks for.
func TestAsksIsTheStepsFault(t *testing.T) {
	tr, err := Parse("t.yaml", []byte(`title: T
summary: S
minutes: 2
steps:
  - press: {keys: x 9 y, do: {inject: crash}}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(tr, Interactive, nil)
	if !r.Asks("crash") || r.Asks("panic") {
		t.Fatalf("Asks(crash) %v, Asks(panic) %v at a press of the crash fault", r.Asks("crash"), r.Asks("panic"))
	}
}

// A trainer pressing n fast does not skip a moment the tour needs: the
// wait goes on, the panel says why, and the tour moves once it comes.
func TestNDoesNotSkipAWait(t *testing.T) {
	tr, err := Parse("t.yaml", []byte(`title: T
summary: S
minutes: 2
steps:
  - wait: {event: restored, timeout: 5s}
`))
	if err != nil {
		t.Fatal(err)
	}
	var res StepResult
	r := NewRunner(tr, Interactive, func(s StepResult) { res = s })
	done := make(chan error, 1)
	go func() { _, _, err := r.Run(context.Background(), &fakeDriver{r: r}, 0); done <- err }()
	deadline := time.Now().Add(5 * time.Second)
	for r.Panel().Hint == "" {
		r.Key("n")
		if time.Now().After(deadline) {
			t.Fatal("n during a wait said nothing")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-done:
		t.Fatalf("n ended the wait: %+v", res)
	case <-time.After(200 * time.Millisecond):
	}
	r.Feed(view.Stamped{Event: view.Restored{Checkpoint: 3}})
	if err := <-done; err != nil || !res.OK || res.Detail == "skipped (n)" {
		t.Fatalf("the wait ended %+v, %v; want held by the restore", res, err)
	}
	if h := r.Panel().Hint; h != "" {
		t.Errorf("the hint outlived the wait: %q", h)
	}
}

// A where condition matches the event's typed field as the tour writes
// it: text, a named text type, whole numbers (and comparisons of them),
// booleans, and lists as the JSON shows them; a field the event lacks
// matches only "".
func TestFieldMatchesTypedFields(t *testing.T) {
	type status string
	for _, tc := range []struct {
		got  any
		want string
		ok   bool
	}{
		{"join/1", "join/1", true},
		{"join/1", "join/0", false},
		{status("RUNNING"), "RUNNING", true},
		{int64(12), "12", true},
		{int64(12), ">10", true},
		{int64(12), "<=11", false},
		{"12", ">10", false},
		{true, "true", true},
		{[]string{"a", "b"}, `["a","b"]`, true},
		{nil, "", true},
		{nil, "x", false},
	} {
		if got := fieldMatches(tc.got, tc.want); got != tc.ok {
			t.Errorf("fieldMatches(%#v, %q) = %v, want %v", tc.got, tc.want, got, tc.ok)
		}
	}
}
