package tui

import (
	"sync"
	"sync/atomic"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
)

// This file holds the commands: every call into the Controller runs in a
// tea.Cmd, off the event loop, and comes back as a message.

// maxEventBatch bounds how many events one EventsMsg carries.
const maxEventBatch = 256

// sampler takes Snapshots and numbers them, so that a command's result can
// tell which samples were taken after it returned.
type sampler struct {
	ctrl  Controller
	count *atomic.Int64
	// done is closed when Run returns, gone when a Session's next run
	// replaces the one sampled: a tick waiting then takes no sample.
	done, gone <-chan struct{}
	run        int // the Session's run sampled (SnapshotMsg.Run)
	// settings puts the setters of one setting in the order of their
	// requests (see newest).
	settings *newest
}

// newest applies each setting's requests in the order they were made.
// Bubble Tea runs every command in a goroutine of its own, so the commands
// of two keys pressed fast (m m: unaligned, then at-least-once) may reach
// the job in either order; a request older than one already applied is
// dropped, so that the job ends with the last one asked for.
type newest struct {
	mu      sync.Mutex
	applied map[string]int // the generation applied last, per setting
}

// apply runs set for generation gen of setting, unless a newer one has been
// applied; it reports whether it ran.
func (n *newest) apply(setting string, gen int, set func()) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if gen <= n.applied[setting] {
		return false
	}
	if n.applied == nil {
		n.applied = map[string]int{}
	}
	n.applied[setting] = gen
	set()
	return true
}

// sample is a command that takes one Snapshot now.
func (s sampler) sample() tea.Msg {
	seq := s.count.Add(1)
	return SnapshotMsg{Snapshot: s.ctrl.Snapshot(), Seq: seq, Run: s.run}
}

// tick is a command that takes one Snapshot after period, unless Run has
// returned by then.
func (s sampler) tick(period time.Duration) tea.Cmd {
	return func() tea.Msg {
		t := time.NewTimer(period)
		defer t.Stop()
		select {
		case <-t.C:
			return s.sample()
		case <-s.done:
			return nil
		case <-s.gone:
			return nil
		}
	}
}

// taken is how many samples were started so far: a sample numbered above
// it was taken after now.
func (s sampler) taken() int64 { return s.count.Load() }

// waitEvents is a command that waits for the next lifecycle event, then
// takes up to maxEventBatch more without waiting, and returns them as one
// EventsMsg (bubbletea's examples/realtime). It is issued again once the
// batch is handled, unless the channel was closed. It returns nil when the
// sampler's done or gone is closed first, so that it never outlives Run or
// its run of a Session; its batches carry the sampler's run.
func waitEvents(events <-chan view.Stamped, s sampler) tea.Cmd {
	return func() tea.Msg {
		var first view.Stamped
		var ok bool
		select {
		case first, ok = <-events:
		case <-s.done:
			return nil
		case <-s.gone:
			return nil
		}
		if !ok {
			return EventsMsg{Closed: true, Run: s.run}
		}
		batch := []view.Stamped{first}
		for len(batch) <= maxEventBatch {
			select {
			case e, ok := <-events:
				if !ok {
					return EventsMsg{Events: batch, Closed: true, Run: s.run}
				}
				batch = append(batch, e)
			default:
				return EventsMsg{Events: batch, Run: s.run}
			}
		}
		return EventsMsg{Events: batch, Run: s.run}
	}
}

func fetchFaults(ctrl Controller, task string) tea.Cmd {
	return func() tea.Msg { return FaultsMsg{Task: task, Faults: ctrl.Faults()} }
}

func inject(ctrl Controller, fault string, task string) tea.Cmd {
	return func() tea.Msg {
		return FaultInjectedMsg{Fault: fault, Task: task, Err: ctrl.Inject(fault, task)}
	}
}

func triggerCheckpoint(ctrl Controller) tea.Cmd {
	return func() tea.Msg {
		id, err := ctrl.TriggerCheckpoint()
		return CheckpointTriggeredMsg{ID: id, Err: err}
	}
}

func triggerSavepoint(ctrl Controller) tea.Cmd {
	return func() tea.Msg {
		id, err := ctrl.TriggerSavepoint()
		return SavepointTriggeredMsg{ID: id, Err: err}
	}
}

// triggeredText is the flash of a checkpoint or savepoint triggered: with
// its id when the job gave it (an attached job learns it later).
func triggeredText(kind string, id int64) string {
	if id == 0 {
		return kind + " triggered"
	}
	return kind + " " + common.Itoa(id) + " triggered"
}

// endJob asks an attached job to stop with a savepoint (stop) or to
// cancel.
func endJob(l Lifecycle, stop bool) tea.Cmd {
	return func() tea.Msg {
		if stop {
			return JobEndRequestedMsg{What: "stop with a savepoint", Err: l.StopWithSavepoint()}
		}
		return JobEndRequestedMsg{What: "cancel", Err: l.Cancel()}
	}
}

func setMode(s sampler, mode string, gen int) tea.Cmd {
	return func() tea.Msg {
		var err error
		s.settings.apply("mode", gen, func() { err = s.ctrl.SetMode(mode) })
		return ModeSetMsg{Mode: mode, Err: err, done: intentDone{gen, s.taken()}}
	}
}

func setRate(s sampler, rate float64, gen int) tea.Cmd {
	return func() tea.Msg {
		var err error
		s.settings.apply("rate", gen, func() { err = s.ctrl.SetRate(rate) })
		return RateSetMsg{Rate: rate, Err: err, done: intentDone{gen, s.taken()}}
	}
}

func setPaused(s sampler, paused bool, gen int) tea.Cmd {
	return func() tea.Msg {
		s.settings.apply("paused", gen, func() { s.ctrl.SetSourcesPaused(paused) })
		return SourcesPausedMsg{Paused: paused, done: intentDone{gen, s.taken()}}
	}
}

// setTempo sets the tempo and, with step, lets every task handle one batch
// after it (the "." key while not frozen: freeze, then step).
func setTempo(s sampler, t Tempo, step bool, gen int) tea.Cmd {
	return func() tea.Msg {
		s.settings.apply("tempo", gen, func() {
			s.ctrl.SetTempo(t)
			if step {
				s.ctrl.Step()
			}
		})
		return TempoSetMsg{Tempo: t, Stepped: step, done: intentDone{gen, s.taken()}}
	}
}

func step(ctrl Controller) tea.Cmd {
	return func() tea.Msg {
		ctrl.Step()
		return SteppedMsg{}
	}
}

// tourKey hands a guided tour's key to the tour: "n", "b" or "r", as
// Controller.TourKey names them.
func tourKey(ctrl Controller, k string) tea.Cmd {
	return func() tea.Msg { return TourKeyMsg{Key: k, Handled: ctrl.TourKey(k)} }
}

func resubmit(ctrl Controller) tea.Cmd {
	return func() tea.Msg { return ResubmittedMsg{Err: ctrl.Resubmit()} }
}

func resetRestarts(ctrl Controller) tea.Cmd {
	return func() tea.Msg {
		ctrl.ResetRestarts()
		return RestartsResetMsg{}
	}
}

// graceSamples is how many samples taken after a command returned may still
// show the old value before the UI believes the job did not take it.
const graceSamples = 5

// intent is a setting the user asked for (sources paused, tempo, mode,
// rate). The UI shows what was asked at once, and the job's own value again
// once a Snapshot taken after the command returned shows it, or, when the
// job still shows otherwise graceSamples samples later, once it is clear the
// job did not take it.
type intent[T comparable] struct {
	want     T
	active   bool
	gen      int   // bumped by every request
	returned bool  // the command of generation gen returned
	after    int64 // samples taken when it returned
}

// request records a new wish and returns its generation.
func (i *intent[T]) request(v T) int {
	i.want, i.active, i.returned, i.after = v, true, false, 0
	i.gen++
	return i.gen
}

// done records that the command of generation gen returned.
func (i *intent[T]) done(d intentDone) {
	if d.gen == i.gen {
		i.returned, i.after = true, d.seq
	}
}

// failed forgets the wish of generation gen: the command said no.
func (i *intent[T]) failed(d intentDone) {
	if d.gen == i.gen {
		i.active = false
	}
}

// observe is told of every sample applied and whether it shows the wish;
// refused reports that the job did not take it.
func (i *intent[T]) observe(seq int64, shows bool) (refused bool) {
	if !i.active || !i.returned || seq <= i.after {
		return false
	}
	if shows {
		i.active = false
		return false
	}
	if seq > i.after+graceSamples {
		i.active = false
		return true
	}
	return false
}

// value is what to show: the wish while it stands, else the job's value.
func (i *intent[T]) value(actual T) T {
	if i.active {
		return i.want
	}
	return actual
}
