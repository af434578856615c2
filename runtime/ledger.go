package runtime

// The run's ledger of restarts: what the restarts pane shows, and the
// records individual failover lost, told as they are found and taken back
// when a restart of the whole job replays them.

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/internal/clock"
	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/view"
)

// ledger is the run's record of its restarts and of what they lost. The
// master writes it; the UI reads it (Job.RestartView) and subtasks add
// the losses they find.
type ledger struct {
	restarts restartState
	losses   lossLog
	obs      *Observer
	wall     clock.Clock
}

// RestartView is what the UI shows of restarts (see Job.RestartView).
type RestartView struct {
	Strategy      string
	Description   string
	Status        restart.Status
	Failover      restart.FailoverStrategy
	NextRestartAt time.Time // zero when no restart is scheduled
	LastRestarted []string
	LastFailed    string
	LastError     string
	Restarts      int
	GaveUp        string
	LostRecords   int64
	Failures      []view.Failure // newest first, at most view.FailureHistory
}

// restartState is the master's record behind RestartView.
type restartState struct {
	mu sync.Mutex
	v  RestartView
	// lostFrom holds the records individual failover lost, by the
	// checkpoint its restore went back to: the input they came from lies
	// after that checkpoint's offsets.
	lostFrom map[int64]int64
}

func (r *restartState) update(f func(v *RestartView)) {
	r.mu.Lock()
	f(&r.v)
	r.mu.Unlock()
}

// RestartView returns the restart and failover strategies' state.
func (j *Job) RestartView() RestartView { return j.ledger.view() }

// view is a copy of the restart view.
func (r *ledger) view() RestartView {
	r.restarts.mu.Lock()
	defer r.restarts.mu.Unlock()
	v := r.restarts.v
	v.LastRestarted = slices.Clone(v.LastRestarted)
	v.Failures = slices.Clone(v.Failures)
	return v
}

// reportLost counts records an individual failover lost.
// Losses found one record at a time (a join side whose partner arrives)
// are told at most every lossEventEvery per subtask: the first at once, the
// ones after it summed up.
func (r *ledger) reportLost(task string, n, from int64, what string) {
	var total int64
	r.restarts.mu.Lock()
	r.restarts.v.LostRecords += n
	total = r.restarts.v.LostRecords
	if r.restarts.lostFrom == nil {
		r.restarts.lostFrom = map[int64]int64{}
	}
	r.restarts.lostFrom[from] += n
	r.restarts.mu.Unlock()
	l := &r.losses
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending = map[string]*pendingLoss{}
	}
	p := l.pending[task]
	now := r.wall.Now()
	if p == nil || now.Sub(p.last) >= lossEventEvery {
		if p != nil && p.n > 0 {
			r.emitLoss(task, p)
		}
		r.obs.Emit(view.RecordsLost{Task: task, Records: n, Total: total, Checkpoint: from, What: what})
		l.pending[task] = &pendingLoss{last: now, from: from}
		return
	}
	p.n += n
	p.what = what
	p.total = total
	if l.timer == nil {
		l.timer = r.wall.AfterFunc(lossEventEvery, r.flushLosses)
	}
}

const lossEventEvery = 250 * time.Millisecond

// takeBackLosses is called on a restart of the whole job from checkpoint
// id (0: from the beginning): every source reads again from there, so the
// losses of individual failovers that went back to id or to a later
// checkpoint are made good by the replay. It takes them off the count and
// says so (records_replayed), so that lost_by_failover agrees with what
// the verification finds missing.
func (r *ledger) takeBackLosses(id int64) {
	r.flushLosses()
	var n, total int64
	r.restarts.mu.Lock()
	for from, lost := range r.restarts.lostFrom {
		if from >= id {
			n += lost
			delete(r.restarts.lostFrom, from)
		}
	}
	r.restarts.v.LostRecords -= n
	total = r.restarts.v.LostRecords
	r.restarts.mu.Unlock()
	if n > 0 {
		from := fmt.Sprintf("checkpoint %d", id)
		if id == 0 {
			from = "the beginning"
		}
		r.obs.Emit(view.RecordsReplayed{Records: n, TotalLost: total, Checkpoint: id,
			What: fmt.Sprintf("the whole job restarts from %s and reads its input again from there, so the records individual failover lost after it are made again", from)})
	}
}

// lossLog holds the losses not told yet.
type lossLog struct {
	mu      sync.Mutex
	pending map[string]*pendingLoss
	timer   clock.Timer
}

type pendingLoss struct {
	last     time.Time // when the last event was emitted
	n, total int64
	from     int64
	what     string
}

func (r *ledger) emitLoss(task string, p *pendingLoss) {
	what := p.what
	if p.n > 1 {
		what = fmt.Sprintf("%d more like the last one: %s", p.n, p.what)
	}
	r.obs.Emit(view.RecordsLost{Task: task, Records: p.n, Total: p.total, Checkpoint: p.from, What: what})
	p.n, p.last = 0, r.wall.Now()
}

// flushLosses tells the losses summed up since the last events; the end of
// a run calls it too.
func (r *ledger) flushLosses() {
	l := &r.losses
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	for task, p := range l.pending {
		if p.n > 0 {
			r.emitLoss(task, p)
		}
	}
}
