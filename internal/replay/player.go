package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// ErrNoJob answers what the terminal UI asks of a job: a replay drives
// none.
var ErrNoJob = errors.New("a replay drives no job: it plays a recorded session")

// tickEvery is how often the player's clock moves.
const tickEvery = 20 * time.Millisecond

// Player plays a session to the terminal UI: it is the UI's controller
// (its snapshots are what the events released so far say) and the source
// of its events. The UI's tempo keys drive it: space pauses and goes on,
// . releases the next event, z plays at half and a quarter of the speed.
type Player struct {
	mu     sync.Mutex
	events []view.Stamped
	report json.RawMessage
	next   int           // the next event to release
	at     time.Duration // the session's time played so far
	speed  float64
	tempo  view.Tempo
	state  *State
	start  time.Time // the session's first wall-clock time
	out    chan view.Stamped
	ended  bool
}

// NewPlayer is a player of s at speed (1: as recorded).
func NewPlayer(s Session, speed float64) *Player {
	p := &Player{events: s.Events, report: s.Report, speed: speed, state: NewState(), out: make(chan view.Stamped, 8192)}
	for _, e := range s.Events {
		if !e.Wall.IsZero() {
			p.start = e.Wall.Add(-e.At)
			break
		}
	}
	if len(s.Events) > 0 {
		p.at = s.Events[0].At // the session's first moment, not its process's start
	}
	return p
}

// Events are the released events, for the UI's event list.
func (p *Player) Events() <-chan view.Stamped { return p.out }

// Run plays the session until ctx ends.
func (p *Player) Run(ctx context.Context) {
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			p.mu.Lock()
			p.at += time.Duration(float64(now.Sub(last)) * p.rate())
			p.releaseUntil(p.at)
			p.mu.Unlock()
			last = now
		}
	}
}

// rate is how fast the session's time goes, by the tempo (0: paused).
func (p *Player) rate() float64 {
	switch p.tempo {
	case view.TempoFrozen:
		return 0
	case view.TempoSlow:
		return p.speed * view.SlowClockRate
	case view.TempoSlower:
		return p.speed * view.SlowerClockRate
	}
	return p.speed
}

// releaseUntil releases the events up to at; at the end it says so once.
func (p *Player) releaseUntil(at time.Duration) {
	for p.next < len(p.events) && p.events[p.next].At <= at {
		p.release(p.events[p.next])
		p.next++
	}
	if p.next == len(p.events) && !p.ended {
		p.ended = true
		p.send(view.Stamped{At: at, Wall: p.start.Add(at), Event: view.Notice{Text: p.endText()}})
	}
}

func (p *Player) release(e view.Stamped) {
	p.state.Apply(e)
	p.send(e)
}

// send hands e to the UI; one it has no room for is dropped from its list.
func (p *Player) send(e view.Stamped) {
	select {
	case p.out <- e:
	default:
	}
}

// endText says that the session ends, with its report's verdict.
func (p *Player) endText() string {
	var r struct {
		Status string `json:"status"`
		Verify struct {
			Committed, Duplicates, Lost int
			OK                          bool
		} `json:"verify"`
	}
	if p.report == nil || json.Unmarshal(p.report, &r) != nil {
		return "end of the recorded session (it has no report: the run did not end cleanly)"
	}
	return fmt.Sprintf("end of the recorded session: job %s; its report: committed %d, %d duplicates, %d lost, ok %v",
		r.Status, r.Verify.Committed, r.Verify.Duplicates, r.Verify.Lost, r.Verify.OK)
}

// Snapshot implements view.JobControls: the state the released events say,
// at the session's time played.
func (p *Player) Snapshot() view.Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.state.Snapshot()
	s.Now = p.start.Add(p.at)
	s.JobNow = s.Now
	s.Input.Tempo = p.tempo
	return s
}

// SetTempo implements view.JobControls: the playback's pace.
func (p *Player) SetTempo(t view.Tempo) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tempo = t
}

// Step implements view.JobControls: the next event, now.
func (p *Player) Step() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next < len(p.events) {
		p.at = max(p.at, p.events[p.next].At)
	}
	p.releaseUntil(p.at)
}

// What a replay cannot do.
func (p *Player) TriggerCheckpoint() (int64, error) { return 0, ErrNoJob }
func (p *Player) TriggerSavepoint() (int64, error)  { return 0, ErrNoJob }
func (p *Player) SetMode(string) error              { return ErrNoJob }
func (p *Player) SetRate(float64) error             { return ErrNoJob }
func (p *Player) ResetRestarts()                    {}
func (p *Player) Inject(fault, task string) error   { return ErrNoJob }
func (p *Player) SetSourcesPaused(bool)             {}
func (p *Player) Resubmit() error                   { return ErrNoJob }
func (p *Player) Faults() []view.FaultChoice        { return nil }
func (p *Player) TourKey(string) bool               { return false }
