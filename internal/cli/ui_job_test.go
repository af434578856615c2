package cli

import (
	"context"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/barrier"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/verify"
	"github.com/faultline-dev/faultline/tui"
)

// screenLog is what the UI drew on its pseudo-terminal, as plain text.
type screenLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]`)

func (s *screenLog) read(r io.Reader) {
	b := make([]byte, 32<<10)
	for {
		n, err := r.Read(b)
		s.mu.Lock()
		s.buf.WriteString(ansi.ReplaceAllString(string(b[:n]), " "))
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// since is the text drawn from offset on, and the offset of its end.
func (s *screenLog) since(offset int) (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.buf.String()
	return all[min(offset, len(all)):], len(all)
}

// The terminal UI over a real job, the keys typed on a pseudo-terminal:
// a panic injected from the fault menu, the mode cycled, the world frozen,
// stepped and let go, a checkpoint triggered. Under the race detector this
// is the UI's sampling and commands against the job's own goroutines; the
// job recovers exactly. (The end-to-end tests in internal/e2e/tui drive
// the built program in tmux for what the screen says.)
func TestUIDrivesARealJobFromTheKeyboard(t *testing.T) {
	t.Setenv("TERM", "screen") // nobody answers the UI's colour query here
	term, screen, err := openPTY(120, 40)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer screen.Close()
	defer term.Close()
	drawn := &screenLog{}
	go drawn.read(screen)

	gen := orders.NewGenerator(1, 2_000_000, orders.GeneratorPartitions).WithRate(4000)
	out := runtime.NewMemoryOutput()
	env := &runtime.Env{Sources: map[string]runtime.Source{}, Outputs: map[string]runtime.TxnOutput{"revenue": out}}
	for _, topic := range []string{orders.TopicOrders, orders.TopicPayments} {
		if env.Sources[topic], err = gen.Source(topic); err != nil {
			t.Fatal(err)
		}
	}
	sp := orders.Default()
	j, err := runtime.New(runtime.Config{Job: sp, Env: env, Types: orders.Types{}, Checkpoint: checkpoint.Config{Interval: 200 * time.Millisecond},
		Observer: runtime.NewObserver(nil, 8192)})
	if err != nil {
		t.Fatal(err)
	}
	ctrl := newUIController(j, sp, tui.JobInfo{Name: sp.Name, Title: jobTitle(sp), Interval: 200 * time.Millisecond}, nil, nil, nil)
	// Both end before the pseudo-terminal closes, on a failure too.
	uiCtx, uiStop := context.WithCancel(context.Background())
	uiDone := make(chan error, 1)
	go func() { uiDone <- tui.Run(uiCtx, ctrl, j.Observer().Events(), tui.Options{Input: term, Output: term}) }()
	endUI := sync.OnceValue(func() error { uiStop(); return <-uiDone })
	defer endUI()
	jobCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	type ran struct {
		res *runtime.Result
		err error
	}
	jobDone := make(chan ran, 1)
	go func() {
		res, err := j.Run(jobCtx, runtime.RunOptions{})
		jobDone <- ran{res, err}
	}()
	endJob := sync.OnceValue(func() ran { cancel(); return <-jobDone })
	defer endJob()

	mark := 0
	press := func(keys, thenShows string) {
		t.Helper()
		if _, err := screen.WriteString(keys); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			s, end := drawn.since(mark)
			if strings.Contains(s, thenShows) {
				mark = end
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%q: waited a minute for the screen to show %q; it drew:\n%s", keys, thenShows, s[max(0, len(s)-3000):])
			}
		}
	}
	waitUntil(t, "a completed checkpoint", func() bool { return j.Coordinator().Stats().Completed >= 1 })
	press("x", "inject a fault") // into the subtask selected
	press("1", "inject panic into")
	press("y", "injected panic")
	waitUntil(t, "the restart", func() bool { return j.RestartView().Restarts >= 1 })
	from := j.Coordinator().NextID()
	waitUntil(t, "a checkpoint after the restart", func() bool { return j.Coordinator().Stats().LastCompleted > from })
	press("m", "unaligned")
	waitUntil(t, "unaligned mode", func() bool { return j.Unaligned() })
	press("m", "at-least-once")
	press("m", "aligned")
	waitUntil(t, "aligned exactly-once again", func() bool { return j.Mode() == barrier.ExactlyOnce && !j.Unaligned() })
	press(" ", "frozen: . steps")
	waitUntil(t, "the world frozen", func() bool { return j.Tempo() == runtime.TempoFrozen })
	press(".", "step: the world runs slowly")
	press(" ", "full speed")
	waitUntil(t, "full speed", func() bool { return j.Tempo() == runtime.TempoNormal })
	press("c", "triggered: barriers injected at the sources")
	after := j.Coordinator().NextID()
	waitUntil(t, "an exactly-once checkpoint after the keys", func() bool { return j.Coordinator().Stats().LastCompleted > after })
	r := endJob()
	j.Observer().Close()
	if _, err := screen.WriteString("q"); err != nil {
		t.Fatal(err)
	}
	if err := endUI(); err != nil {
		t.Fatalf("UI: %v", err)
	}
	if r.err != nil || r.res.Status != runtime.JobCanceled || r.res.Latest == nil {
		t.Fatalf("job: %v status %v", r.err, r.res)
	}
	v, err := verify.Verify(context.Background(), gen, verify.ExpectOf(sp), "exactly-once", r.res.Latest.SourceOffsets(), out.Committed())
	if err != nil || !v.OK || v.Expected == 0 {
		t.Fatalf("verify %+v %v: the job under the UI must recover exactly", v, err)
	}
}

// waitUntil polls cond for up to a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}
