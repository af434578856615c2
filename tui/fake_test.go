package tui

import (
	"fmt"
	"sync"
)

// fakeController is a Controller for tests: it returns the Snapshot it is
// given and records every command it receives.
type fakeController struct {
	mu     sync.Mutex
	snap   Snapshot
	faults []FaultChoice
	calls  []string
	nextID int64

	injectErr, checkpointErr, savepointErr, modeErr, rateErr error
	snapshots                                                int
}

func newFake(s Snapshot) *fakeController {
	return &fakeController{snap: s, faults: defaultFaults(), nextID: 15}
}

func (f *fakeController) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

// Calls returns the commands received so far.
func (f *fakeController) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeController) SetSnapshot(s Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap = s
}

func (f *fakeController) Snapshot() Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snapshots++
	return f.snap
}

func (f *fakeController) Inject(fault string, task string) error {
	f.record("Inject(%s,%s)", fault, task)
	return f.injectErr
}

func (f *fakeController) TriggerCheckpoint() (int64, error) {
	f.record("TriggerCheckpoint")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.checkpointErr != nil {
		return 0, f.checkpointErr
	}
	f.nextID++
	return f.nextID - 1, nil
}

func (f *fakeController) TriggerSavepoint() (int64, error) {
	f.record("TriggerSavepoint")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.savepointErr != nil {
		return 0, f.savepointErr
	}
	f.nextID++
	return f.nextID - 1, nil
}

func (f *fakeController) SetMode(mode string) error {
	f.record("SetMode(%s)", mode)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.modeErr == nil {
		f.snap.Job.Mode = mode
	}
	return f.modeErr
}

// The settings apply to the Snapshot the fake returns, as the job's would.

func (f *fakeController) SetSourcesPaused(paused bool) {
	f.record("SetSourcesPaused(%v)", paused)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap.Input.SourcesPaused = paused
}

func (f *fakeController) SetTempo(t Tempo) {
	f.record("SetTempo(%s)", t)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap.Input.Tempo = t
}

func (f *fakeController) Step()           { f.record("Step") }
func (f *fakeController) ResetRestarts()  { f.record("ResetRestarts") }
func (f *fakeController) Resubmit() error { f.record("Resubmit"); return nil }

func (f *fakeController) SetRate(r float64) error {
	f.record("SetRate(%.0f)", r)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rateErr == nil {
		f.snap.Input.Rate = r
	}
	return f.rateErr
}

func (f *fakeController) TourKey(k string) bool {
	f.mu.Lock()
	touring := f.snap.Tour != nil
	f.mu.Unlock()
	if touring {
		f.record("TourKey(%s)", k)
	}
	return touring
}

func (f *fakeController) Faults() []FaultChoice {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]FaultChoice(nil), f.faults...)
}

// defaultFaults is the catalogue of a run with an external Kafka: broker-down
// cannot happen.
func defaultFaults() []FaultChoice {
	return []FaultChoice{
		{Kind: "panic", Description: "the task panics", Available: true},
		{Kind: "error", Description: "the task's operator returns an error", Available: true},
		{Kind: "slow", Description: "the task falls to a tenth of its rate for 30 s", Available: true},
		{Kind: "broker-down", Description: "the Kafka broker stops for 5s", JobLevel: true, Available: false,
			Why: "the broker is external (--brokers)"},
		{Kind: "crash", Description: "the process dies as with SIGKILL (start faultline again to resume)", JobLevel: true, Available: true},
		{Kind: "storage-fail", Description: "the next 3 checkpoint writes fail", JobLevel: true, Available: true},
		{Kind: "corrupt-checkpoint", Description: "the newest checkpoint's state is damaged on disk", JobLevel: true, Available: true},
	}
}
