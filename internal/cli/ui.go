package cli

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/barrier"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
	"github.com/faultline-dev/faultline/runtime/kafka/fill"
	"github.com/faultline-dev/faultline/runtime/kafka/live"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui"
)

// uiController is the running job as the terminal UI sees it
// (tui.Controller): it samples the job's counters into snapshots and turns
// the UI's commands into calls on the job, the input writer and the broker.
type uiController struct {
	job     *runtime.Job
	spec    *spec.Job
	started time.Time
	info    tui.JobInfo
	writer  *fill.Writer       // nil without a generator
	live    *live.LiveVerifier // nil when the output cannot be verified live
	broker  *broker.Embedded   // nil with --brokers

	// tour is the guided tour running on the job, nil outside a tour.
	tour tourGuide

	mu   sync.Mutex
	prev map[string]taskSample // the previous sample of each subtask
}

// tourGuide is a guided tour as the UI's controller sees it.
type tourGuide interface {
	// Panel is what the tour shows now.
	Panel() *view.Tour
	// Key takes n, b or r; it reports whether the key was the tour's.
	Key(k string) bool
	// Asks reports whether the step shown now asks for fault.
	Asks(fault string) bool
}

// taskSample is what rates and ratios are computed from.
type taskSample struct {
	at                  time.Time
	in, idle, pressured int64
	// busy and bp are the load shares last shown, held while frozen.
	busy, bp float64
	// The rate's window: from rateAt (wall) and rateJob (job clock),
	// with rateIn records then; rate is the last one measured.
	rateAt, rateJob time.Time
	rateIn          int64
	rate            float64
}

// rateWindow is the least wall time a rate is measured over: in slow
// motion a source reads a record every quarter second, and shorter
// windows read 0/s and 16/s by turns.
const rateWindow = time.Second

// minJobWindow is the least job time a rate is measured over: a quarter
// of rateWindow, what a second of wall time is in the slowest motion.
const minJobWindow = rateWindow / 4

func newUIController(job *runtime.Job, sp *spec.Job, info tui.JobInfo, w *fill.Writer, verifier *live.LiveVerifier, embedded *broker.Embedded) *uiController {
	return &uiController{job: job, spec: sp, started: time.Now(), info: info, writer: w, live: verifier, broker: embedded,
		prev: map[string]taskSample{}}
}

var _ tui.Controller = (*uiController)(nil)

// Snapshot implements tui.Controller.
func (u *uiController) Snapshot() tui.Snapshot {
	now, jobNow := time.Now(), u.job.Now()
	s := tui.Snapshot{Now: now, JobNow: jobNow, Started: u.started, Job: u.info, Tasks: map[string]tui.Task{}}
	s.Job.Status, s.Job.StatusSince = string(u.job.Status()), u.job.StatusSince()
	s.Job.Mode = u.job.ModeNameNow()
	s.Job.Attempt = u.job.Epoch()
	s.Operators = operatorsOf(u.spec)
	metrics := u.job.Metrics()
	frozen := u.job.Tempo() == runtime.TempoFrozen
	u.mu.Lock()
	for _, op := range u.spec.Operators {
		for i := 0; i < op.Parallelism; i++ {
			name := checkpoint.TaskID{Operator: op.Name, Index: i}.String()
			m := metrics[name]
			t := tui.Task{Name: name, Operator: op.Name, Index: i, Status: string(m.Status()),
				RecordsIn: m.RecordsIn.Load(), RecordsOut: m.RecordsOut.Load(), Offsets: m.Offsets(), Lag: m.Lag(), Watermark: m.Watermark.Load(),
				Restarts: int(max(m.Deploys.Load()-1, 0))}
			u.sampleLoad(&t, m, now, jobNow, frozen)
			if in, al, ok := u.job.Inputs(name); ok {
				t.Inputs, t.Alignment = in, al
			}
			if f, until, ok := m.Slowed(); ok && until.After(jobNow) {
				t.SlowFactor, t.SlowUntil = f, until
			}
			s.Tasks[name] = t
		}
	}
	u.mu.Unlock()
	s.Checkpoints = checkpointsView(u.job.Coordinator().Stats())
	rv := u.job.RestartView()
	s.Restart = tui.Restart{
		Strategy: rv.Strategy, Description: rv.Description, Status: view.RestartStatus(rv.Status), NextRestartAt: rv.NextRestartAt,
		Failover: string(rv.Failover), LastRestarted: rv.LastRestarted, LastFailed: rv.LastFailed,
		LastError: rv.LastError, Restarts: rv.Restarts, GaveUp: rv.GaveUp, LostRecords: rv.LostRecords,
		Failures: rv.Failures,
	}
	if u.live != nil {
		ls := u.live.Status()
		s.Verify = tui.Verify{Available: ls.Available, Committed: ls.Committed, Duplicates: ls.Duplicates,
			DuplicatesAtLeastOnce: ls.DuplicatesAtLeastOnce, Lost: ls.Lost, AsOf: ls.AsOf, Err: ls.Err, NotJoined: ls.NotJoined, InFlight: ls.InFlight}
	} else if u.spec.VerifyOff {
		s.Verify = tui.Verify{Off: "verify: false in the job spec"}
	} else {
		s.Verify = tui.Verify{Err: "live verification is off"}
	}
	s.Input = tui.Input{SourcesPaused: u.job.Paused(), Tempo: u.job.Tempo(), FrozenSince: u.job.FrozenSince(), Stepping: u.job.Stepping()}
	if u.writer != nil {
		s.Input.Generator = true
		s.Input.Rate = u.writer.Rate()
	}
	if u.tour != nil {
		s.Tour = u.tour.Panel()
	}
	return s
}

func clamp01(x float64) float64 { return min(max(x, 0), 1) }

// sampleLoad sets t's rate and load shares from m, measured since the
// previous sample (u.mu held). A frozen subtask is neither busy nor idle:
// its load stays what it was when the world froze, as the screen does, and
// is measured again from the next sample.
func (u *uiController) sampleLoad(t *tui.Task, m *runtime.TaskMetrics, now, jobNow time.Time, frozen bool) {
	cur := taskSample{at: now, in: t.RecordsIn, idle: m.Idle(now), pressured: m.BackPressured(now)}
	p, ok := u.prev[t.Name]
	switch {
	case ok && now.Sub(p.at) < loadWindow:
		// Sampled again too soon (the REST API's or the metrics' callers
		// sample besides the UI's ticks): the shares of the window before,
		// which goes on, so that no caller shrinks the UI's.
		t.Busy, t.BackPressureRatio, t.RateIn = p.busy, p.bp, p.rate
		t.BackPressure = view.BackPressureOf(t.BackPressureRatio)
		return
	case ok && frozen:
		t.Busy, t.BackPressureRatio = p.busy, p.bp
	case ok && now.Sub(p.at) > 0:
		dt := float64(now.Sub(p.at))
		t.BackPressureRatio = clamp01(float64(cur.pressured-p.pressured) / dt)
		t.Busy = clamp01(1 - float64(cur.idle-p.idle)/dt - t.BackPressureRatio)
	}
	cur.busy, cur.bp = t.Busy, t.BackPressureRatio
	rateOn(&cur, p, ok, jobNow)
	t.RateIn = cur.rate
	u.prev[t.Name] = cur
	t.BackPressure = view.BackPressureOf(t.BackPressureRatio)
}

// loadWindow is the least wall time a load share is measured over: most
// of the UI's sample period, whoever else samples between its ticks.
const loadWindow = tui.DefaultTickPeriod * 3 / 4

// rateOn sets cur's rate: records per second of the job's clock (at
// jobNow) over a window of at least rateWindow since p's window began
// (ok: there is a p), and of at least minJobWindow of the job's clock,
// else p's rate. In slow motion it is the rate the job runs at on its own
// clock; while the world stands frozen (its clock still) the last rate
// measured, and while it steps, a rate once the steps add up to
// minJobWindow (a step's few milliseconds read 1.6k/s beside 0/s).
func rateOn(cur *taskSample, p taskSample, ok bool, jobNow time.Time) {
	switch {
	case !ok:
		cur.rateAt, cur.rateJob, cur.rateIn = cur.at, jobNow, cur.in
	case cur.at.Sub(p.rateAt) < rateWindow || jobNow.Sub(p.rateJob) < minJobWindow:
		cur.rateAt, cur.rateJob, cur.rateIn, cur.rate = p.rateAt, p.rateJob, p.rateIn, p.rate
	default:
		cur.rate = float64(cur.in-p.rateIn) / jobNow.Sub(p.rateJob).Seconds()
		cur.rateAt, cur.rateJob, cur.rateIn = cur.at, jobNow, cur.in
	}
}

// statusView is a checkpoint's status as the UI's view names it.
func statusView(s checkpoint.Status) view.CheckpointStatus {
	switch s {
	case checkpoint.StatusCompleted:
		return view.StatusCompleted
	case checkpoint.StatusFailed:
		return view.StatusFailed
	}
	return view.StatusPending
}

// checkpointsView copies the coordinator's statistics into the UI's view.
func checkpointsView(st checkpoint.Stats) view.Checkpoints {
	v := view.Checkpoints{Completed: st.Completed, Failed: st.Failed, InProgress: st.InProgress,
		LastCompleted: st.LastCompleted, ConsecutiveFailures: st.ConsecutiveFailures, Restored: st.Restored, RestoredSavepoint: st.RestoredSavepoint,
		History: make([]view.Checkpoint, 0, len(st.History))}
	for _, c := range st.History {
		cv := view.Checkpoint{ID: c.ID, Savepoint: c.Kind == checkpoint.KindSavepoint, Status: statusView(c.Status),
			TriggerTime: c.TriggerTime, EndTime: c.EndTime, Duration: c.Duration, Frozen: c.Frozen, Acked: c.Acked, Total: c.Total,
			AckedTasks: make(map[string]view.SubtaskAck, len(c.AckedTasks)), FullBytes: c.FullBytes,
			IncrementalBytes: c.IncrementalBytes, MaxAlignment: c.MaxAlignment, Failure: c.Failure, Restored: c.Restored, Damaged: c.Damaged,
			InFlight: view.InFlight{PersistedInFlight: c.PersistedInFlight, ProcessedInFlight: c.ProcessedInFlight, Unaligned: c.Unaligned}}
		for _, id := range c.TimedOut {
			cv.TimedOut = append(cv.TimedOut, id.String())
		}
		for id, a := range c.AckedTasks {
			cv.AckedTasks[id.String()] = view.SubtaskAck{SyncDuration: a.SyncDuration, AsyncDuration: a.AsyncDuration,
				Alignment: a.Alignment, StartDelay: a.StartDelay, Bytes: a.Bytes, IncrementalBytes: a.IncrementalBytes,
				AfterBarrier: a.AfterBarrier, Finished: a.Finished, AckTime: a.AckTime, EndToEnd: a.EndToEnd,
				Unaligned: a.Unaligned, TimedOut: a.TimedOut, PersistedInFlight: a.PersistedInFlight,
				PersistedRecords: a.PersistedRecords, ProcessedInFlight: a.ProcessedInFlight}
		}
		for _, id := range c.WaitingFor {
			cv.WaitingFor = append(cv.WaitingFor, id.String())
		}
		v.History = append(v.History, cv)
	}
	return v
}

// Inject implements tui.Controller: the fault with the defaults the menu
// promises (runtime.MenuFault); poison goes into the partition the chosen
// subtask reads, or orders/0.
func (u *uiController) Inject(fault string, task string) error {
	if u.tour != nil && runtime.FaultKind(fault) == runtime.FaultCrash && !u.tour.Asks(fault) {
		// A tour's crash ends its run as the process's death would: only
		// where the tour goes on from it.
		return errors.New("in a tour, only where the tour asks for it (the state-backends tour does); faultline run takes it any time")
	}
	return u.InjectFor(fault, task, 0)
}

// InjectFor injects fault as the menu does, lasting d instead of the
// menu's time when d > 0 (a tour's slow input, a tour's broker outage).
func (u *uiController) InjectFor(fault string, task string, d time.Duration) error {
	topic, partition := u.poisonTarget(task)
	f := runtime.MenuFault(runtime.FaultKind(fault), task, topic, partition)
	if d > 0 && f.For > 0 {
		f.For = d
	}
	return u.job.Inject(f)
}

// poisonTarget is where a poison record aimed at task goes: the partition
// a source or parse subtask reads (its index), of the topic it reads.
func (u *uiController) poisonTarget(task string) (string, int32) {
	for _, op := range u.spec.Operators {
		for i := 0; i < op.Parallelism; i++ {
			if (checkpoint.TaskID{Operator: op.Name, Index: i}).String() != task {
				continue
			}
			switch op.Type {
			case spec.TypeSource:
				return op.Topic, int32(i)
			case orders.TypeParse:
				if op.Schema == orders.SchemaPayment {
					return orders.TopicPayments, int32(i)
				}
				return orders.TopicOrders, int32(i)
			}
		}
	}
	return orders.TopicOrders, 0
}

// TriggerCheckpoint implements tui.Controller.
func (u *uiController) TriggerCheckpoint() (int64, error) {
	return u.job.Coordinator().Trigger(checkpoint.KindCheckpoint)
}

// TriggerSavepoint implements tui.Controller.
func (u *uiController) TriggerSavepoint() (int64, error) {
	return u.job.Coordinator().Trigger(checkpoint.KindSavepoint)
}

// SetMode implements tui.Controller.
func (u *uiController) SetMode(mode string) error {
	switch mode {
	case runtime.ModeAligned:
		u.job.SetMode(barrier.ExactlyOnce, false)
	case runtime.ModeUnaligned:
		u.job.SetMode(barrier.ExactlyOnce, true)
	case runtime.ModeAtLeastOnce:
		u.job.SetMode(barrier.AtLeastOnce, false)
	default:
		return fmt.Errorf("mode %q: want %s, %s or %s", mode, runtime.ModeAligned, runtime.ModeUnaligned, runtime.ModeAtLeastOnce)
	}
	return nil
}

// SetSourcesPaused implements tui.Controller.
func (u *uiController) SetSourcesPaused(p bool) { u.job.Pause(p) }

// ResetRestarts implements tui.Controller.
func (u *uiController) ResetRestarts() { u.job.ResetRestarts() }

// Resubmit implements tui.Controller.
func (u *uiController) Resubmit() error { return u.job.Resubmit() }

// SetTempo implements tui.Controller.
func (u *uiController) SetTempo(t tui.Tempo) { u.job.SetTempo(t) }

// Step implements tui.Controller.
func (u *uiController) Step() { u.job.Step() }

// SetRate implements tui.Controller.
func (u *uiController) SetRate(r float64) error {
	if u.writer == nil {
		return errors.New("no generator writes the input of this run (--brokers without --generate)")
	}
	u.writer.SetRate(min(max(r, 1), 1e6))
	return nil
}

// TourKey implements tui.Controller.
func (u *uiController) TourKey(k string) bool { return u.tour != nil && u.tour.Key(k) }

// Faults implements tui.Controller: the fault catalogue in menu order.
func (u *uiController) Faults() []tui.FaultChoice {
	var out []tui.FaultChoice
	for _, e := range runtime.Catalogue {
		c := tui.FaultChoice{Kind: string(e.Kind), Description: e.Menu, JobLevel: e.Kind.JobLevel(), Available: true}
		if e.Kind == runtime.FaultBrokerDown && u.broker == nil {
			c.Available = false
			c.Why = "only the embedded broker can be taken down; with --brokers, stop your own"
		}
		out = append(out, c)
	}
	return out
}

// operatorsOf is the job graph as the UI draws it.
func operatorsOf(j *spec.Job) []view.Operator {
	var ops []view.Operator
	for _, op := range j.Operators {
		o := view.Operator{Name: op.Name, Type: op.Type, Parallelism: op.Parallelism, Topic: op.Topic}
		for _, in := range op.Inputs {
			o.Inputs = append(o.Inputs, view.Edge{From: in.From, Kind: string(in.Edge), Key: in.Key})
		}
		ops = append(ops, o)
	}
	return ops
}
