package tour

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// Driver is the running job as a tour drives it: what the terminal UI's
// keys do, and the snapshot the UI draws.
type Driver interface {
	view.JobControls
	// InjectFor injects a fault of the catalogue as the UI's menu does,
	// lasting d instead of the menu's time when d > 0.
	InjectFor(fault, task string, d time.Duration) error
}

// Mode is how a tour is run.
type Mode int

const (
	// Interactive waits for the learner: n after each narration, the key
	// a step asks for.
	Interactive Mode = iota
	// Autoplay runs unattended in front of the screen: it reads each
	// narration for a while and presses the keys itself.
	Autoplay
	// Headless runs without a screen, as fast as the job allows.
	Headless
)

// ErrRestart is returned by Run when the learner asked to start the tour
// again (r).
var ErrRestart = errors.New("the tour starts again")

// StepResult is one step as it ended: a headless tour prints each as a
// JSON line.
type StepResult struct {
	Tour  string `json:"tour"`
	Step  int    `json:"step"`
	Of    int    `json:"of"`
	Kind  string `json:"kind"`
	Text  string `json:"text,omitempty"`
	OK    bool   `json:"ok"`
	Claim string `json:"claim,omitempty"`
	// Detail says what was seen: the event waited for, why a check did
	// not hold.
	Detail string `json:"detail,omitempty"`
	Ms     int64  `json:"ms"`
}

// Runner runs a tour's steps on a job, one run (segment) of the job at a
// time. Feed it the job's events; the UI reads Panel and hands it keys.
type Runner struct {
	t      *Tour
	mode   Mode
	report func(StepResult)
	// ReadTime is how long autoplay shows a narration of n words.
	ReadTime func(words int) time.Duration
	// Seen, when set, lists what the snapshot's tour points at and the
	// screen would not show: a narration said while the tour points at
	// something it does not show fails, as a check that did not hold.
	Seen func(view.Snapshot) []string

	keys    chan string
	changed chan struct{}

	mu       sync.Mutex
	panel    view.Tour
	current  int // the step whose narration is shown, from 0
	back     int // how many narrations back b went
	said     []int
	failed   int
	seq      int64
	recent   []seenEvent // the newest events, oldest first
	done     []int64     // completed checkpoint ids, in order
	restores []restore
	savepnt  int64
	// savepntFailed is why the newest savepoint the job tried failed ("":
	// it completed, or none failed after it).
	savepntFailed string
	// mark is the event a wait for an event counts from (see Run);
	// runFrom the first of this run of the job, which a check's event
	// counts from.
	mark, runFrom int64
	// failedAsClaimed: a check held that this run of the job FAILED.
	failedAsClaimed bool
}

type seenEvent struct {
	seq  int64
	name string
	ev   view.Event
}

type restore struct {
	from, newest int64 // the checkpoint restored, the newest completed before
	seq          int64
}

const recentEvents = 4096

// NewRunner runs t in mode; report (may be nil) gets every step's result.
func NewRunner(t *Tour, mode Mode, report func(StepResult)) *Runner {
	r := &Runner{t: t, mode: mode, report: report, keys: make(chan string, 16), changed: make(chan struct{}, 1)}
	r.ReadTime = func(words int) time.Duration {
		return min(max(time.Duration(words)*300*time.Millisecond, 4*time.Second), 14*time.Second)
	}
	r.panel = view.Tour{Title: t.Title, Steps: len(t.Steps), Autoplay: mode != Interactive}
	return r
}

// Failed is how many checks did not hold and waits ran out so far.
func (r *Runner) Failed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// Panel is what the tour shows now.
func (r *Runner) Panel() *view.Tour {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.panel
	if r.back > 0 && r.back <= len(r.said) {
		i := r.said[len(r.said)-r.back]
		s := r.t.Steps[i]
		p.Step, p.Text, p.Link, p.Earlier = i+1, s.Say, s.Link, true
	}
	return &p
}

// Asks reports whether the step shown now asks for fault, by a press or a
// do: a fault the tour's run does not outlive (the crash) is the tour's to
// ask for.
func (r *Runner) Asks(fault string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current >= len(r.t.Steps) {
		return false
	}
	s := r.t.Steps[r.current]
	return s.Press != nil && s.Press.Do.Inject == fault || s.Do != nil && s.Do.Inject == fault
}

// Key takes n (next), b (back to the previous narration) and r (restart);
// it reports whether the key was the tour's.
func (r *Runner) Key(k string) bool {
	switch k {
	case "b":
		r.mu.Lock()
		// On a narration the current one is on screen already: b starts
		// with the one before it.
		first := 1
		if r.showsSay() {
			first = 2
		}
		if back := max(r.back+1, first); back <= len(r.said) {
			r.back = back
		}
		r.mu.Unlock()
		return true
	case "n":
		r.mu.Lock()
		if r.back > 0 {
			r.back = 0 // back to the current step first
			r.mu.Unlock()
			return true
		}
		r.mu.Unlock()
	case "r":
	default:
		return false
	}
	select {
	case r.keys <- k:
	default:
	}
	return true
}

// showsSay reports whether the current step is a narration (r.mu held).
func (r *Runner) showsSay() bool {
	return len(r.said) > 0 && r.said[len(r.said)-1] == r.current
}

// Feed hands the runner one of the job's events. It never blocks long.
func (r *Runner) Feed(e view.Stamped) {
	name := e.Event.Name()
	r.mu.Lock()
	r.seq++
	r.recent = append(r.recent, seenEvent{seq: r.seq, name: name, ev: e.Event})
	if len(r.recent) > recentEvents {
		r.recent = append(r.recent[:0], r.recent[len(r.recent)-recentEvents/2:]...)
	}
	switch ev := e.Event.(type) {
	case view.CheckpointCompleted:
		r.done = append(r.done, ev.ID)
	case view.SavepointCompleted:
		r.done = append(r.done, ev.ID)
		r.savepnt, r.savepntFailed = ev.ID, ""
	case view.SavepointFailed:
		r.savepntFailed = ev.Error
	case view.Restored:
		if len(ev.Tasks) == 0 {
			var newest int64
			for _, id := range r.done {
				newest = max(newest, id)
			}
			r.restores = append(r.restores, restore{from: ev.Checkpoint, newest: newest, seq: r.seq})
		}
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// Savepoint is the id of the newest savepoint the tour's job took.
func (r *Runner) Savepoint() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.savepnt
}

// Run runs the steps from index from on d until the tour ends (next is
// len(steps)) or a step asks for another run of the job (next is the step
// after it, flags its run flags, to Expand once this run stopped). It returns ErrRestart when the learner
// pressed r, and ctx's error when ctx ended.
func (r *Runner) Run(ctx context.Context, d Driver, from int) (next int, flags []string, err error) {
	for i := from; i < len(r.t.Steps); i++ {
		s := r.t.Steps[i]
		if s.Run != nil {
			return i + 1, s.Run, nil
		}
		start := time.Now()
		r.mu.Lock()
		// A wait for an event counts from the start of the newest key or
		// action of this run of the job: its first consequences may come
		// while a narration is read, before the wait begins.
		if s.Press != nil || s.Do != nil || s.Tempo != "" || s.StepTo > 0 {
			r.mark = r.seq
		}
		r.current, r.back = i, 0
		r.panel.Step = i + 1
		r.panel.Waiting, r.panel.Key, r.panel.Next = "", "", false
		r.mu.Unlock()
		res := StepResult{Tour: r.t.Name, Step: i + 1, Of: len(r.t.Steps), Kind: s.Kind(), OK: true}
		if err := r.do(ctx, d, s, &res); err != nil {
			return i, nil, err
		}
		res.Ms = time.Since(start).Milliseconds()
		if !res.OK {
			r.mu.Lock()
			r.failed++
			r.mu.Unlock()
		}
		if r.report != nil {
			r.report(res)
		}
	}
	r.mu.Lock()
	r.panel.Done, r.panel.Passed = true, r.failed == 0
	r.panel.Waiting, r.panel.Key, r.panel.Next = "", "", false
	r.mu.Unlock()
	return len(r.t.Steps), nil, nil
}

// NewRun tells the runner that another run of the job starts: waits for
// events count from here until the next key or action, and nothing is
// pointed at. Call it before the run's first event is fed.
func (r *Runner) NewRun() {
	r.mu.Lock()
	r.mark, r.runFrom = r.seq, r.seq
	// What the tour pointed at was the run before's: the new run's
	// screen starts afresh.
	r.panel.Highlight = view.Highlight{}
	r.failedAsClaimed = false
	r.mu.Unlock()
}

// FailedAsClaimed reports whether a check held that the current run of the
// job FAILED (its restart strategy gave up): the tour meant it to.
func (r *Runner) FailedAsClaimed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failedAsClaimed
}

// Expand puts the newest savepoint's id in for {savepoint}: call it once
// the run before has stopped (it may take a savepoint as it stops). When
// the newest savepoint the job tried failed (the one of a stop, say), it
// refuses: a run from an older savepoint would write again what the job
// committed after it.
func (r *Runner) Expand(flags []string) ([]string, error) {
	r.mu.Lock()
	id, failed := r.savepnt, r.savepntFailed
	r.mu.Unlock()
	out := make([]string, len(flags))
	for i, f := range flags {
		if strings.Contains(f, "{savepoint}") && failed != "" {
			return nil, fmt.Errorf("the job's last savepoint failed (%s): a run from an older one would write again what was committed after it", failed)
		}
		out[i] = strings.ReplaceAll(f, "{savepoint}", strconv.FormatInt(id, 10))
	}
	return out, nil
}

// do runs one step.
func (r *Runner) do(ctx context.Context, d Driver, s Step, res *StepResult) error {
	switch {
	case s.Say != "":
		res.Text = s.Say
		r.mu.Lock()
		r.said = append(r.said, r.current)
		r.panel.Text, r.panel.Link = s.Say, s.Link
		r.mu.Unlock()
		r.lookAt(d, res)
		switch {
		case r.mode == Headless:
		case r.mode == Autoplay || s.Auto:
			return r.pause(ctx, r.ReadTime(len(strings.Fields(s.Say))))
		default:
			r.setPanel(func(p *view.Tour) { p.Next = true })
			return r.waitKey(ctx, "n")
		}
	case s.Wait != nil:
		return r.wait(ctx, d, s.Wait, res)
	case s.Tempo != "":
		d.SetTempo(map[string]view.Tempo{"normal": view.TempoNormal, "slow": view.TempoSlow, "slower": view.TempoSlower, "frozen": view.TempoFrozen}[s.Tempo])
		res.Detail = s.Tempo
	case s.StepTo > 0:
		for range s.StepTo {
			if err := r.step(ctx, d); err != nil {
				return err
			}
		}
	case s.Highlight != nil:
		h := *s.Highlight
		if s.CheckpointLatest {
			r.mu.Lock()
			for _, id := range r.done {
				h.Checkpoint = max(h.Checkpoint, id)
			}
			r.mu.Unlock()
		}
		r.setPanel(func(p *view.Tour) { p.Highlight = h })
	case s.Press != nil:
		r.forgetCheck()
		return r.press(ctx, d, s.Press, res)
	case s.Do != nil:
		r.forgetCheck()
		_, err := r.actOnceRunning(ctx, d, *s.Do, res)
		return err
	case s.Check != nil:
		return r.check(ctx, d, s.Check, res)
	}
	return nil
}

// lookAt fails res, a narration's, when the tour points at something the
// screen does not show as it is said (see Seen).
func (r *Runner) lookAt(d Driver, res *StepResult) {
	p := r.Panel()
	if r.Seen == nil || !p.Highlight.Any() {
		return
	}
	snap := d.Snapshot()
	snap.Tour = p
	if missing := r.Seen(snap); len(missing) > 0 {
		res.OK, res.Detail = false, "pointed at and not on screen: "+strings.Join(missing, "; ")
	}
}

// forgetCheck takes the last check's result off the panel as the tour
// acts on the job: what it said held before the act ("nothing
// duplicated") and need not after it (a switch to at-least-once).
func (r *Runner) forgetCheck() {
	r.setPanel(func(p *view.Tour) { p.Check = nil })
}

func (r *Runner) setPanel(f func(p *view.Tour)) {
	r.mu.Lock()
	f(&r.panel)
	r.mu.Unlock()
}

// pause waits for d, or for n or r.
func (r *Runner) pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		case k := <-r.keys:
			if k == "r" {
				return ErrRestart
			}
			return nil
		}
	}
}

// waitKey waits for key (or r).
func (r *Runner) waitKey(ctx context.Context, key string) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case k := <-r.keys:
			if k == "r" {
				return ErrRestart
			}
			if k == key {
				return nil
			}
		}
	}
}

// AwaitRestart waits, once the tour is complete, for the learner's r (it
// reports true) or the end of ctx.
func (r *Runner) AwaitRestart(ctx context.Context) bool {
	return errors.Is(r.waitKey(ctx, ""), ErrRestart)
}

// step steps the frozen world once and waits until the step ended.
func (r *Runner) step(ctx context.Context, d Driver) error {
	d.Step()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := r.pause(ctx, 50*time.Millisecond); err != nil {
			return err
		}
		if !d.Snapshot().Input.Stepping {
			return nil
		}
	}
	return nil
}

const defaultTimeout = 30 * time.Second

// Steps are the tour's steps.
func (r *Runner) Steps() []Step { return r.t.Steps }
