package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultline-dev/faultline/internal/atomicfile"
)

// PeriodsFile is the name of the file in a state dir that keeps the
// at-least-once periods of the runs on it.
const PeriodsFile = "at-least-once.json"

// Periods are the spans of wall-clock time in which a job's output may hold
// duplicates by design: from the moment the job switched to at-least-once
// checkpoints to the completion of the first exactly-once checkpoint after
// it switched back (until then a failure restores an at-least-once
// checkpoint, whose output holds records its snapshot does not cover). An
// output record written inside a period is committed under at-least-once;
// a duplicate with a copy among those is counted apart
// (Verification.DuplicatesAtLeastOnce) and never fails an exactly-once
// verdict, however many runs later it is read.
//
// Periods are kept in a small file of the state dir, rewritten whole at
// each change, whole or not at all. A nil *Periods has none.
// Safe for concurrent use.
type Periods struct {
	// any is set once a period exists: Holds, called for every committed
	// output record, takes no lock before.
	any   atomic.Bool
	mu    sync.Mutex
	path  string
	spans []Span
}

// Span is one period, in Unix milliseconds; To is 0 while it lasts.
type Span struct {
	From int64 `json:"from_ms"`
	To   int64 `json:"to_ms,omitempty"`
}

type periodsFile struct {
	Spans []Span `json:"at_least_once"`
}

// LoadPeriods reads the periods kept at path; a file that is not there
// holds none. Changes are saved to path ("" keeps them in memory).
func LoadPeriods(path string) (*Periods, error) {
	p := &Periods{path: path}
	if path == "" {
		return p, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return nil, err
	}
	var f periodsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s is damaged (%v)", path, err)
	}
	p.spans = f.Spans
	p.any.Store(len(p.spans) > 0)
	return p, nil
}

// Open starts a period at t, unless one lasts already.
func (p *Periods) Open(t time.Time) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.spans); n > 0 && p.spans[n-1].To == 0 {
		return nil
	}
	p.spans = append(p.spans, Span{From: t.UnixMilli()})
	p.any.Store(true)
	return p.saveLocked()
}

// Close ends the period that lasts, at t; without one it does nothing.
func (p *Periods) Close(t time.Time) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.spans)
	if n == 0 || p.spans[n-1].To != 0 {
		return nil
	}
	p.spans[n-1].To = max(t.UnixMilli(), p.spans[n-1].From)
	return p.saveLocked()
}

// Holds reports whether a record written at Unix millisecond ms was
// written in a period (ms 0, not known: never).
func (p *Periods) Holds(ms int64) bool {
	if p == nil || ms == 0 || !p.any.Load() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.spans {
		if ms >= s.From && (s.To == 0 || ms <= s.To) {
			return true
		}
	}
	return false
}

// Spans returns a copy of the periods.
func (p *Periods) Spans() []Span {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Span(nil), p.spans...)
}

func (p *Periods) saveLocked() error {
	if p.path == "" {
		return nil
	}
	b, err := json.Marshal(periodsFile{Spans: p.spans})
	if err != nil {
		return err
	}
	return atomicfile.Write(p.path, append(b, '\n'))
}
