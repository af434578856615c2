package runtime

// Unaligned checkpoints (Flink: FLIP-76) and the aligned-checkpoint timeout:
// a subtask that takes an unaligned checkpoint's snapshot before all its
// input channels delivered the barrier stores, with the snapshot, the
// records that were in flight for it: on each channel, those queued before
// the barrier that the subtask had not processed at its snapshot. They are
// the records a barrier overtook (taken from the channel's queue when the
// barrier arrives) and those the subtask processes after its snapshot on a
// channel whose barrier has not come yet (recorded as they are processed).
// A restore replays them into their channels before any new record.
//
// Positions: a channel numbers the elements sent into it in order. Between
// two batches of processing, the receiver's next element, in.cur[in.pos],
// is at position in.ch.consumed.

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/faultline-dev/faultline/runtime/barrier"
	"github.com/faultline-dev/faultline/runtime/flatjson"
	"github.com/faultline-dev/faultline/runtime/spec"
)

// inFlight is the in-flight data a subtask records for its unaligned
// checkpoint id.
type inFlight struct {
	id       int64
	timedOut bool       // this subtask switched it from aligned (TimeOut)
	recs     [][]Record // per input channel
	// done hands the finished channel state to the snapshot's writer; it
	// is closed without a value when the checkpoint is given up.
	done chan channelState
}

// channelState is a subtask's in-flight data, encoded for its snapshot.
type channelState struct {
	channels       map[string][]byte // channelKey → encodeInFlight
	bytes, records int64
	ids            []string // the order ids of the records, each once
	err            error
}

// record adds rec, processed on channel i after the snapshot and before
// the channel's barrier, to the in-flight data. Its raw bytes are copied:
// the source may reuse them once the record was handled.
func (f *inFlight) record(i int, rec *Record) {
	r := *rec
	if r.Bytes != nil {
		r.Bytes = bytes.Clone(r.Bytes)
	}
	f.recs[i] = append(f.recs[i], r)
}

// startInFlight begins recording the in-flight data of unaligned
// checkpoint id, triggered now; it returns the channel the snapshot's
// writer waits on.
func (t *operatorTask) startInFlight(id int64, timedOut bool) <-chan channelState {
	t.dropInFlight() // an older one still recording was given up
	t.unal = &inFlight{id: id, timedOut: timedOut, recs: make([][]Record, len(t.inputs)), done: make(chan channelState, 1)}
	for _, in := range t.inputs {
		in.persisted.Store(0)
	}
	return t.unal.done
}

// dropInFlight gives up the in-flight data being recorded, if any: its
// checkpoint was aborted.
func (t *operatorTask) dropInFlight() {
	if t.unal == nil {
		return
	}
	close(t.unal.done)
	t.unal = nil
	for _, in := range t.inputs {
		in.recording.Store(false)
	}
}

// finishInFlight encodes the in-flight data of checkpoint id, now
// complete, and hands it to the snapshot's writer.
func (t *operatorTask) finishInFlight(id int64) {
	f := t.unal
	if f == nil || f.id != id {
		return
	}
	t.unal = nil
	cs := channelState{channels: map[string][]byte{}}
	seen := map[string]bool{}
	for i, recs := range f.recs {
		if len(recs) == 0 {
			continue
		}
		for k := range recs {
			if id, ok := recordID(&recs[k], t.ids); ok && !seen[id] {
				seen[id] = true
				cs.ids = append(cs.ids, id)
			}
		}
		b, err := encodeInFlight(nil, recs)
		if err != nil {
			cs.err = fmt.Errorf("%s: in-flight records of %s: %w", t.name, t.inputs[i].from, err)
			break
		}
		cs.channels[channelKey(t.inputs[i].logical, t.inputs[i].from)] = b
		cs.bytes += int64(len(b))
		cs.records += int64(len(recs))
	}
	f.done <- cs
}

// capture adds to the in-flight data of the recording checkpoint what
// channel i holds before position upTo and has not processed: the rest of
// its current batch, then its queue.
func (t *operatorTask) capture(i int, upTo int64) {
	in := t.inputs[i]
	if t.unal == nil {
		return
	}
	next := in.ch.consumed.Load()
	before := len(t.unal.recs[i])
	for k := in.pos; k < len(in.cur) && next < upTo; k++ {
		if in.cur[k].Kind == KindRecord {
			t.unal.record(i, &in.cur[k].Record)
		}
		next++
	}
	if next < upTo {
		t.unal.recs[i] = in.ch.inFlight(upTo, t.unal.recs[i])
		for k := before; k < len(t.unal.recs[i]); k++ {
			if r := &t.unal.recs[i][k]; r.Bytes != nil {
				r.Bytes = bytes.Clone(r.Bytes)
			}
		}
	}
	in.persisted.Add(int64(len(t.unal.recs[i]) - before))
}

// takePriority handles the unaligned barriers waiting in the subtask's
// input channels, ahead of everything queued.
func (t *operatorTask) takePriority(ctx context.Context) error {
	waiting := false
	for _, in := range t.inputs {
		waiting = waiting || !in.ended && in.ch.hasPrio.Load()
	}
	if !waiting {
		return nil
	}
	if d := t.paceAs(ctx, false); d > 0 {
		t.m.IdleNanos.Add(int64(d))
	}
	for i, in := range t.inputs {
		if in.ended || !in.ch.hasPrio.Load() {
			continue
		}
		for {
			e, seq, ok := in.ch.pollPriority()
			if !ok {
				break
			}
			if err := t.onPriority(ctx, i, &e, seq, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// onPriority handles barrier e of channel i at position seq as an
// unaligned barrier: one that overtook what was queued before it, or, when
// timedOut, an aligned one the subtask takes early because its checkpoint
// outlived the aligned-checkpoint timeout.
func (t *operatorTask) onPriority(ctx context.Context, i int, e *Element, seq int64, timedOut bool) error {
	if mode := modeOf(e); mode != t.handler.Mode() {
		if err := t.switchMode(ctx, mode, e.ID()); err != nil {
			return err
		}
	}
	id := e.ID()
	t.noteBarrier(e)
	was := t.handler.Pending() == id && t.handler.Recording(i)
	r := t.handler.OnPriorityBarrier(i, id)
	if r.Triggered == id && timedOut {
		r.TimedOut = true
	}
	return t.actOn(ctx, r, e.TriggerNanos(), func() {
		if was || r.Triggered == id {
			t.capture(i, seq)
		}
	})
}

// noteBarrier notes that a barrier of e's checkpoint reached the subtask.
func (t *operatorTask) noteBarrier(e *Element) {
	id := e.ID()
	if id > t.firstBarrier {
		t.firstBarrier = id
		t.stepSaw(t.a.job.steps.arrived(t.op.Name, id))
	}
	t.lastTrig[id] = barrierInfo{ns: e.TriggerNanos(), savepoint: e.Savepoint, atLeastOnce: e.AtLeastOnce,
		stayAligned: e.StayAligned || t.lastTrig[id].stayAligned}
}

// timeoutDue says how long until the aligned-checkpoint timeout may
// switch a checkpoint the subtask waits for (ok false: none to wait for).
func (t *operatorTask) timeoutDue() (time.Duration, bool) {
	d := t.a.job.cfg.AlignedTimeout
	if d <= 0 || t.handler == nil || t.handler.Mode() != barrier.ExactlyOnce || t.handler.Unaligned() {
		return 0, false
	}
	oldest := int64(0)
	if p := t.handler.Pending(); p != 0 {
		if info, ok := t.lastTrig[p]; ok && !info.stayAligned {
			oldest = info.ns
		}
	}
	for i, in := range t.inputs {
		if in.ended {
			continue
		}
		if e, _, ok := in.ch.queuedBarrier(in.ch.consumed.Load(), t.timesOut(i)); ok && (oldest == 0 || e.TriggerNanos() < oldest) {
			oldest = e.TriggerNanos()
		}
	}
	if oldest == 0 {
		return 0, false
	}
	return max(time.Unix(0, oldest).Add(d).Sub(t.clk().Now()), 0), true
}

// timesOut accepts the barriers of channel i the aligned-checkpoint
// timeout applies to: of an aligned exactly-once checkpoint, not one
// that stays aligned (Element.StayAligned), that the handler has not had
// from i.
func (t *operatorTask) timesOut(i int) func(*Element) bool {
	last := t.handler.LastBarrier(i)
	return func(e *Element) bool {
		return !e.AtLeastOnce && !e.StayAligned && e.ID() > last && e.TriggerNanos() != 0
	}
}

// checkTimeout switches to unaligned what outlived the aligned-checkpoint
// timeout: the checkpoint the subtask aligns (its blocked channels
// released, the others recorded), and barriers still queued behind records
// in its channels, which it takes out early as if they had overtaken them.
func (t *operatorTask) checkTimeout(ctx context.Context) error {
	if err := t.takeEarly(ctx); err != nil {
		return err
	}
	d := t.a.job.cfg.AlignedTimeout
	if d <= 0 || t.handler.Mode() != barrier.ExactlyOnce {
		return nil
	}
	now := t.clk().Now()
	due := func(ns int64) bool { return ns != 0 && now.Sub(time.Unix(0, ns)) >= d }
	if p := t.handler.Pending(); p != 0 && !t.handler.Unaligned() {
		if info, ok := t.lastTrig[p]; ok && !info.stayAligned && due(info.ns) {
			if err := t.actOn(ctx, t.handler.TimeOut(p), info.ns, nil); err != nil {
				return err
			}
		}
	}
	for i, in := range t.inputs {
		if in.ended {
			continue
		}
		accept := t.timesOut(i)
		e, seq, ok := in.ch.queuedBarrier(in.ch.consumed.Load(), func(e *Element) bool { return accept(e) && due(e.TriggerNanos()) })
		if !ok {
			continue
		}
		if p := t.handler.Pending(); p != 0 && e.ID() < p {
			continue // an older one: the handler would ignore it
		}
		if err := t.onPriority(ctx, i, &e, seq, true); err != nil {
			return err
		}
	}
	return nil
}

// takeEarly takes out the barriers of the unaligned checkpoint being
// recorded that are still queued in order behind records (sent by an
// upstream subtask that took it aligned): what is queued before them is
// in flight anyway, so the recording of their channels can end now.
func (t *operatorTask) takeEarly(ctx context.Context) error {
	if t.unal == nil || !t.handler.Unaligned() {
		return nil
	}
	id := t.unal.id
	for i, in := range t.inputs {
		if in.ended || !t.handler.Recording(i) {
			continue
		}
		e, seq, ok := in.ch.queuedBarrier(in.ch.consumed.Load(), func(e *Element) bool { return e.ID() == id })
		if !ok {
			continue
		}
		if err := t.onPriority(ctx, i, &e, seq, false); err != nil {
			return err
		}
		if t.unal == nil {
			return nil
		}
	}
	return nil
}

// recordID is the id (the job spec's id field) a record in flight
// carries: decoded values have it as a field, raw input in its JSON.
func recordID(rec *Record, id flatjson.Field) (string, bool) {
	if f, ok := rec.Value.(Fielder); ok {
		return f.Field(id.Name())
	}
	if v, ok := id.Of(rec.Bytes); ok {
		return string(v), true
	}
	return "", false
}

// idField reads job's id (spec.Job.ID) from raw records: the zero Field,
// which reads nothing, when the job names none.
func idField(job *spec.Job) flatjson.Field {
	f, _ := flatjson.NewField(job.ID)
	return f
}
