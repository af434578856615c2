package runtime

// Snapshots: a subtask's synchronous part at the barrier, the asynchronous
// write to the store, and incremental chains.

import (
	"context"
	"fmt"
	"time"

	"faultline/backend"
	"faultline/checkpoint"
	"faultline/internal/clock"
	"faultline/runtime/barrier"
)

// DefaultMaxChain is how many incremental snapshots may follow a full one
// before the next is full again, which bounds what a restore has to compose.
const DefaultMaxChain = 10

// incrementalBackend is a keyed backend that can snapshot only what changed
// (the Badger backend; Flink: incremental RocksDB checkpoints).
type incrementalBackend interface {
	SnapshotIncremental() backend.Snapshot
}

// persistAsync is the asynchronous part of a snapshot: encode, write to the
// store, acknowledge. It runs in its own goroutine, owned by the attempt,
// until ctx (the subtask's) ends.
// delta says the keyed snapshot holds only the changes since this task's
// previous snapshot; the chain it builds on is only known once the previous
// snapshot's writer has finished, so each writer waits for the one before
// it before it updates the chain and acknowledges.
//
// inFlight, for an unaligned checkpoint, hands over the subtask's channel
// state once every channel delivered the barrier; the writer waits for it
// and gives up, as the checkpoint was, when it is closed without a value.
func (t *task) persistAsync(ctx context.Context, id int64, state *backend.SubtaskState, keyed backend.Snapshot, ack checkpoint.SubtaskAck, delta bool, inFlight <-chan channelState) {
	a := t.a
	clk := t.clk()
	prev := t.lastPersist
	done := make(chan struct{})
	t.lastPersist = done
	a.wg.Add(1)
	t.done.Add(1)
	go func() {
		defer a.wg.Done()
		defer t.done.Done()
		defer close(done)
		start := clk.Now()
		if keyed != nil {
			if d, ok := keyed.(backend.DeltaSnapshot); ok {
				delta = delta && d.Incremental()
			}
			b, err := keyed.Encode()
			if err != nil {
				t.breakChain()
				a.job.coord.Decline(a.epoch.Load(), id, t.id, checkpoint.ReasonDeclined, fmt.Errorf("%s: encode state: %w", t.name, err))
				return
			}
			state.Keyed = b
		} else {
			delta = false
		}
		if inFlight != nil {
			var cs channelState
			var ok bool
			select {
			case cs, ok = <-inFlight:
			case <-ctx.Done():
			}
			if !ok {
				t.breakChain() // never stored: the next delta cannot build on it
				return
			}
			if cs.err != nil {
				t.breakChain()
				a.job.coord.Decline(a.epoch.Load(), id, t.id, checkpoint.ReasonDeclined, cs.err)
				return
			}
			state.Channels = cs.channels
			ack.PersistedInFlight, ack.PersistedRecords, ack.InFlightIDs = cs.bytes, cs.records, cs.ids
		}
		parts := state.Parts()
		h, err := a.job.store.PutStateParts(ctx, id, t.id, parts)
		if err != nil {
			t.breakChain()
			if ctx.Err() == nil {
				a.job.coord.Decline(a.epoch.Load(), id, t.id, checkpoint.ReasonStorage, fmt.Errorf("%s: write state: %w", t.name, err))
			}
			return
		}
		if prev != nil {
			select {
			case <-prev:
			case <-ctx.Done():
				return
			}
		}
		t.incMu.Lock()
		if delta && t.broken {
			t.incMu.Unlock()
			a.job.coord.Decline(a.epoch.Load(), id, t.id, checkpoint.ReasonDeclined,
				fmt.Errorf("%s: the incremental snapshot's base was lost; the next snapshot is full", t.name))
			return
		}
		ack.Bytes = h.Size
		if delta {
			ack.Chain = append([]checkpoint.Handle(nil), t.chain...)
			for _, c := range t.chain {
				ack.Bytes += c.Size
			}
			t.chain = append(t.chain, h)
		} else if keyed != nil {
			t.chain = []checkpoint.Handle{h}
			t.broken = false
		}
		t.incMu.Unlock()
		ack.Handle = h
		ack.AsyncDuration = clock.Since(clk, start)
		ack.IncrementalBytes = h.Size
		a.job.coord.Acknowledge(a.epoch.Load(), id, t.id, ack)
	}()
}

// breakChain makes the next keyed snapshot a full one: a snapshot whose
// changes were never stored cannot be built on.
func (t *task) breakChain() {
	t.incMu.Lock()
	t.broken = true
	t.incMu.Unlock()
}

// snapshot takes the synchronous part of checkpoint r.Triggered, forwards
// the barrier, and leaves the rest to persistAsync.
func (t *task) snapshot(ctx context.Context, r barrier.Result, info barrierInfo) error {
	triggerNs := info.ns
	id := r.Triggered
	start := t.clk().Now()
	state := &backend.SubtaskState{}
	if s, ok := t.oper.(StateSnapshotter); ok {
		opState, err := s.SnapshotState(id)
		if err != nil {
			t.a.job.coord.Decline(t.a.epoch.Load(), id, t.id, checkpoint.ReasonDeclined, fmt.Errorf("%s: snapshot: %w", t.name, err))
			t.broadcast(cancelElement(id))
			return nil
		}
		state.Operator = opState
	}
	var keyed backend.Snapshot
	delta := false
	if t.keyed != nil {
		ib, canDelta := t.keyed.(incrementalBackend)
		if canDelta && t.a.job.cfg.Incremental && !info.savepoint {
			t.incMu.Lock()
			full := t.broken || len(t.chain) == 0 || len(t.chain) > t.a.job.cfg.MaxChain
			t.incMu.Unlock()
			if !full {
				keyed, delta = ib.SnapshotIncremental(), true
			}
		}
		if keyed == nil {
			keyed = t.keyed.Snapshot()
		}
	}
	var inFlight <-chan channelState
	b := barrierElement(id, triggerNs, info.savepoint, info.atLeastOnce)
	b.StayAligned = info.stayAligned
	if r.Unaligned {
		t.broadcastPriority(b)
		inFlight = t.startInFlight(id, r.TimedOut)
	} else {
		t.broadcast(b)
	}
	t.stepSaw(t.a.job.steps.snapshotted(t.op.Name, id))
	ack := checkpoint.SubtaskAck{SyncDuration: clock.Since(t.clk(), start), Alignment: r.Alignment, AfterBarrier: t.afterBarrier,
		Unaligned: r.Unaligned, TimedOut: r.TimedOut, ProcessedInFlight: t.processedInFlight}
	t.afterBarrier, t.processedInFlight = 0, 0
	if p, ok := t.oper.(OutputPositioner); ok {
		ack.OutputFrom = p.OutputFrom()
	}
	if triggerNs != 0 && !r.FirstBarrier.IsZero() {
		ack.StartDelay = r.FirstBarrier.Sub(time.Unix(0, triggerNs))
	}
	t.persistAsync(ctx, id, state, keyed, ack, delta, inFlight)
	return nil
}
