package runtime

import (
	"bytes"
	"encoding/json"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"faultline/internal/clock"
)

// Event is one lifecycle event: its name (snake_case), when it happened
// since the run started, and its own fields.
type Event struct {
	Name   string
	At     time.Duration
	Fields map[string]any
}

// MarshalJSON writes {"event":…,"at_ms":…, fields in name order}.
func (e Event) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"event":`)
	name, _ := json.Marshal(e.Name)
	b.Write(name)
	b.WriteString(`,"at_ms":`)
	at, _ := json.Marshal(e.At.Milliseconds())
	b.Write(at)
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := json.Marshal(e.Fields[k])
		if err != nil {
			return nil, err
		}
		kb, _ := json.Marshal(k)
		b.WriteByte(',')
		b.Write(kb)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Observer carries lifecycle events from the job to whoever shows them,
// through a bounded channel whose sends never block: when the reader falls
// behind, events are dropped and counted, and the job never waits for the UI.
type Observer struct {
	clk     clock.Clock
	start   time.Time
	ch      chan Event
	dropped atomic.Int64
	mu      sync.RWMutex // Emit holds it shared, Close exclusively
	closed  bool
}

// NewObserver returns an observer whose event times count from now on clk
// (the wall clock when nil).
func NewObserver(clk clock.Clock, capacity int) *Observer {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Observer{clk: clk, start: clk.Now(), ch: make(chan Event, capacity)}
}

// Since is the time since the observer started.
func (o *Observer) Since() time.Duration { return o.clk.Now().Sub(o.start) }

// Emit sends an event without blocking.
func (o *Observer) Emit(name string, fields map[string]any) {
	if o == nil {
		return
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.closed {
		return
	}
	select {
	case o.ch <- Event{Name: name, At: o.Since(), Fields: fields}:
	default:
		o.dropped.Add(1)
	}
}

// Events is the stream to read; it is closed by Close.
func (o *Observer) Events() <-chan Event { return o.ch }

// Dropped is how many events were dropped because the reader was behind.
func (o *Observer) Dropped() int64 { return o.dropped.Load() }

// Close ends the stream; call it once the job has stopped emitting.
func (o *Observer) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.closed = true
		close(o.ch)
	}
}
