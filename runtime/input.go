package runtime

// The operator subtask's loop: taking input batches channel by channel,
// handing barriers to the barrier handler and acting on its answers.

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/barrier"
	"github.com/faultline-dev/faultline/runtime/flatjson"
)

func modeOf(e *Element) barrier.Mode {
	if e.AtLeastOnce {
		return barrier.AtLeastOnce
	}
	return barrier.ExactlyOnce
}

// operatorTask is an operator subtask: the task core, and what only an
// operator has: its typed inputs, its alignment as the UI sees it, the
// batch it processes, and the unaligned checkpoint it records.
type operatorTask struct {
	*task
	one OneInput
	two TwoInput
	// ids reads the job's id from records in flight (see recordID)
	ids flatjson.Field
	// prefetch is keyed, when it can load a key's state ahead of use
	prefetch backend.Prefetcher
	// grouped is keyed, when it takes the key groups hash edges computed
	grouped backend.GroupedKeys
	// batchStart is when processInput began the batch it is processing
	// (OperatorContext.BatchStart).
	batchStart time.Time
	// channel is the input channel of that batch (OperatorContext.channel).
	channel int
	// published for the UI by the task goroutine
	aligning   atomic.Int64 // checkpoint being aligned, 0: none
	alignStart atomic.Int64 // unix ns of its first barrier
	// unal is the unaligned checkpoint whose in-flight data the subtask
	// records (nil: none); unalView mirrors it for the UI (1: unaligned,
	// 2: switched by the aligned-checkpoint timeout).
	unal     *inFlight
	unalView atomic.Int32
}

// switchMode gives the subtask a barrier handler of mode, before it handles
// the first barrier (of checkpoint id) triggered in that mode. A checkpoint
// still aligning in the old mode is given up as subsumed, as a newer
// barrier would subsume it anyway.
func (t *operatorTask) switchMode(ctx context.Context, mode barrier.Mode, id int64) error {
	if p := t.handler.Pending(); p != 0 {
		r := t.handler.Abort(p)
		if r.Aborted != 0 {
			r.AbortReason = barrier.Subsumed
		}
		if err := t.act(ctx, r, 0); err != nil {
			return err
		}
	}
	h := barrier.New(mode, len(t.inputs), t.clk().Now)
	if id > 1 {
		h.Abort(id - 1)
	}
	for i, in := range t.inputs {
		if in.ended {
			h.OnEndOfInput(i)
		}
	}
	t.handler = h
	for _, in := range t.inputs {
		in.blocked.Store(false)
	}
	return nil
}

// BufferTimeout is the longest a record waits in a partly filled output
// batch while its subtask is busy (Flink: execution.buffer-timeout, whose
// default is 100 ms; shorter here, so that a viewer sees records move).
const BufferTimeout = 10 * time.Millisecond

// runOperator takes elements from the unblocked input channels in turn and
// hands them to the operator and the barrier handler (Flink: StreamTask's
// input processor with its CheckpointedInputGate).
func (t *operatorTask) runOperator(ctx context.Context) error {
	next := 0
	for ctx.Err() == nil {
		finished, err := t.handleMail(ctx)
		if err != nil {
			return err
		}
		if finished {
			return nil
		}
		if err := t.takePriority(ctx); err != nil {
			return err
		}
		if err := t.checkTimeout(ctx); err != nil {
			return err
		}
		if t.outputsFull() {
			t.flushOutputs()
			t.flushCounters()
			t.backPressured(ctx)
			continue
		}
		progressed := false
		for k := 0; k < len(t.inputs); k++ {
			i := (next + k) % len(t.inputs)
			in := t.inputs[i]
			if in.ended || t.handler.Blocked(i) {
				continue
			}
			if in.pos >= len(in.cur) {
				b, ok := in.ch.poll()
				if !ok {
					continue
				}
				if in.cur != nil {
					putBatch(in.cur)
				}
				in.cur, in.pos = b, 0
			}
			if d := t.pace(ctx); d > 0 {
				t.m.IdleNanos.Add(int64(d))
			}
			progressed = true
			done, err := t.processInput(ctx, i)
			if err != nil {
				return err
			}
			if done {
				return t.finishOperator(ctx)
			}
			// Partly filled output batches go out after BufferTimeout even
			// while input keeps coming, and after every batch when the
			// tempo is slowed, so that records and barriers can be seen
			// moving on (Flink: execution.buffer-timeout).
			if now := t.wall().Now(); now.Sub(t.lastFlush) >= BufferTimeout || t.a.job.Tempo() != TempoNormal {
				t.flushOutputs()
				t.flushCounters()
				t.lastFlush = now
			}
			if t.outputsFull() || in.ch.hasPrio.Load() {
				break // back-pressure, or an unaligned barrier to take first
			}
		}
		next++
		if !progressed {
			t.flushOutputs()
			t.flushCounters()
			t.wait(ctx)
		}
	}
	return ctx.Err()
}

// prefetchAhead is how many records ahead of the one it processes a keyed
// task prefetches state (backend.Prefetcher): far enough for a memory load
// to arrive, near enough that it is still cached when used. 4 was the
// fastest of 0, 4 and 12 in the default job; 2 and 8 were no different
// (docs/PERFORMANCE.md).
const prefetchAhead = 4

// prefetchKey prefetches the state of e's key, if e is a record.
func (t *operatorTask) prefetchKey(e *Element) {
	if e.Kind == KindRecord {
		t.prefetch.Prefetch(e.Record.Key, e.keyGroup())
	}
}

// processInput handles the current batch of input i until it ends or the
// channel gets blocked by alignment. done reports that every input ended.
//
// An element counts as handled only once its handling succeeded: when the
// task fails on a record, in.pos still points at it, so that an instance
// that takes over these input channels (individual failover) handles it
// again instead of dropping it.
func (t *operatorTask) processInput(ctx context.Context, i int) (done bool, err error) {
	in := t.inputs[i]
	start := in.pos
	began := t.clk().Now()
	t.batchStart = began
	t.channel = i
	records := 0
	at := t.recordsAt(i)
	defer func() {
		in.ch.markConsumed(in.pos - start)
		t.measureRate(began)
		if herr := t.holdRecords(ctx, records); herr != nil && err == nil {
			err = herr
		}
	}()
	if t.prefetch != nil {
		for j := in.pos; j < min(in.pos+prefetchAhead, len(in.cur)); j++ {
			t.prefetchKey(&in.cur[j])
		}
	}
	for in.pos < len(in.cur) {
		e := &in.cur[in.pos]
		switch e.Kind {
		case KindRecord:
			if err := t.processRecord(in, i, e, at); err != nil {
				return false, err
			}
			records++
		case KindEndOfInput:
			in.pos++
			in.ended = true
			if err := t.act(ctx, t.handler.OnEndOfInput(i), 0); err != nil {
				return false, err
			}
			for _, x := range t.inputs {
				if !x.ended {
					return false, nil
				}
			}
			return true, nil
		default:
			if err := t.processControl(ctx, i, e); err != nil {
				return false, err
			}
			at = t.recordsAt(i)
		}
		in.pos++
		if t.handler.Blocked(i) {
			break
		}
	}
	return false, nil
}

// recordsAt says what channel i's next records count for: past the
// barrier of an at-least-once checkpoint (past), recorded as an unaligned
// checkpoint's in-flight data (rec), processed while an aligned one aligns
// (aligning). It changes only when a barrier or cancellation arrives.
type recordsAt struct{ past, rec, aligning bool }

func (t *operatorTask) recordsAt(i int) recordsAt {
	at := recordsAt{past: t.pastBarrier(i)}
	at.rec, at.aligning = t.inFlightOf(i)
	return at
}

// processRecord hands record e of channel i (input in) to the operator
// under its key, counting it for the checkpoint under way as at says and
// firing a fault due at it.
func (t *operatorTask) processRecord(in *inputChannel, i int, e *Element, at recordsAt) error {
	t.in++
	if at.past {
		t.afterBarrier++
	}
	if at.rec {
		t.unal.record(i, &e.Record)
	}
	if at.aligning {
		t.processedInFlight += int64(inFlightSize(&e.Record))
	}
	if t.in+t.m.RecordsIn.Load() >= t.faultAt {
		if err := t.checkFaults(); err != nil {
			return err
		}
	}
	if t.keyed != nil {
		if t.prefetch != nil && in.pos+prefetchAhead < len(in.cur) {
			t.prefetchKey(&in.cur[in.pos+prefetchAhead])
		}
		if kg := e.keyGroup(); kg >= 0 && t.grouped != nil {
			t.grouped.SetCurrentKeyInGroup(e.Record.Key, kg)
		} else {
			t.keyed.SetCurrentKey(e.Record.Key)
		}
	}
	var err error
	switch {
	case t.two != nil && in.logical == 0:
		err = t.two.Process1(&e.Record, t)
	case t.two != nil:
		err = t.two.Process2(&e.Record, t)
	default:
		err = t.one.Process(&e.Record, t)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	if t.emitErr != nil {
		return t.emitErr
	}
	e.Record = Record{}
	return nil
}

// processControl hands a barrier or a cancellation from channel i to the
// barrier handler, switching the handler first when a barrier comes in
// another checkpointing mode.
func (t *operatorTask) processControl(ctx context.Context, i int, e *Element) error {
	if e.Kind == KindCancel {
		return t.act(ctx, t.handler.OnCancel(i, e.ID()), 0)
	}
	if mode := modeOf(e); mode != t.handler.Mode() {
		if err := t.switchMode(ctx, mode, e.ID()); err != nil {
			return err
		}
	}
	t.noteBarrier(e)
	return t.act(ctx, t.handler.OnBarrier(i, e.ID()), e.TriggerNanos())
}

// pastBarrier reports whether channel i has delivered the barrier of the
// checkpoint the subtask waits for: its records then come after the
// barrier, into the snapshot (at-least-once; an aligned channel is blocked
// instead). It changes only when a barrier or cancellation arrives.
func (t *operatorTask) pastBarrier(i int) bool {
	if t.handler.Mode() != barrier.AtLeastOnce {
		return false // aligned: blocked; unaligned: after the snapshot
	}
	p := t.handler.Pending()
	return p != 0 && t.handler.LastBarrier(i) >= p
}

// inFlightOf says whether the records of channel i are in flight for the
// unaligned checkpoint being recorded, and whether an aligned checkpoint
// is aligning (its records count as processed in-flight data).
func (t *operatorTask) inFlightOf(i int) (recording, aligning bool) {
	p := t.handler.Pending()
	return t.unal != nil && t.handler.Recording(i), p != 0 && !t.handler.Unaligned()
}

// act carries out what the barrier handler decided.
func (t *operatorTask) act(ctx context.Context, r barrier.Result, triggerNs int64) error {
	return t.actOn(ctx, r, triggerNs, nil)
}

// actOn carries out what the barrier handler decided; delivered, if set,
// runs after the snapshot of a checkpoint triggered now, before its
// in-flight data may be complete (it adds what a barrier overtook).
func (t *operatorTask) actOn(ctx context.Context, r barrier.Result, triggerNs int64, delivered func()) error {
	for _, id := range r.OlderAborted {
		t.aborted(id, r.AbortReason)
	}
	if r.Aborted != 0 {
		t.aborted(r.Aborted, r.AbortReason)
	}
	if r.Triggered != 0 {
		info := barrierInfo{ns: triggerNs}
		if bi, ok := t.lastTrig[r.Triggered]; ok {
			info = bi
		}
		for id := range t.lastTrig {
			if id <= r.Triggered {
				delete(t.lastTrig, id)
			}
		}
		if err := t.snapshot(ctx, r, info); err != nil {
			return err
		}
	}
	if delivered != nil {
		delivered()
	}
	if r.InFlightDone != 0 {
		t.finishInFlight(r.InFlightDone)
	}
	t.publishHandler()
	return nil
}

// aborted gives up checkpoint id at this subtask: a cancellation marker
// goes downstream and, when a newer barrier subsumed it, the coordinator
// hears of it.
func (t *operatorTask) aborted(id int64, why barrier.Reason) {
	if t.unal != nil && t.unal.id <= id {
		t.dropInFlight()
	}
	t.processedInFlight = 0
	delete(t.lastTrig, id)
	t.broadcast(cancelElement(id))
	if why == barrier.Subsumed {
		t.a.job.coord.Decline(t.a.epoch.Load(), id, t.id, checkpoint.ReasonSubsumed, fmt.Errorf("%s: %s", t.name, why))
	}
}

// publishHandler mirrors the barrier handler's state for the UI.
func (t *operatorTask) publishHandler() {
	for i, in := range t.inputs {
		in.blocked.Store(t.handler.Blocked(i))
		in.recording.Store(t.unal != nil && t.handler.Recording(i))
	}
	t.aligning.Store(t.handler.Pending())
	if st := t.handler.AlignmentStart(); !st.IsZero() {
		t.alignStart.Store(st.UnixNano())
	} else {
		t.alignStart.Store(0)
	}
	switch {
	case t.unal == nil:
		t.unalView.Store(0)
	case t.unal.timedOut:
		t.unalView.Store(2)
	default:
		t.unalView.Store(1)
	}
}

// finishOperator ends the operator after every input ended: the operator
// flushes what it holds, and end of input travels on downstream.
func (t *operatorTask) finishOperator(ctx context.Context) error {
	if e, ok := t.oper.(InputEnder); ok {
		if err := e.EndInput(t); err != nil {
			return fmt.Errorf("%s: end of input: %w", t.name, err)
		}
		if t.emitErr != nil {
			return t.emitErr
		}
	}
	t.broadcast(Element{Kind: KindEndOfInput})
	return nil
}
