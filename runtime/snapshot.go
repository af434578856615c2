package runtime

// Snapshots: a subtask's synchronous part at the barrier, the asynchronous
// write to the store, and incremental chains.

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/clock"
	"github.com/faultline-dev/faultline/runtime/barrier"
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
	w := &snapshotWrite{t: t, id: id, state: state, keyed: keyed, ack: ack, delta: delta, inFlight: inFlight,
		prev: t.lastPersist, done: make(chan struct{}), clk: t.clk()}
	t.lastPersist = w.done
	a.wg.Add(1)
	t.done.Add(1)
	go func() {
		defer a.wg.Done()
		defer t.done.Done()
		defer close(w.done)
		w.run(ctx)
	}()
}

// snapshotWrite is one snapshot's asynchronous part: encoding the keyed
// state, waiting for the in-flight data of an unaligned checkpoint,
// storing it all, and acknowledging it once the subtask's previous
// snapshot is acknowledged (prev; done closes when this one ends).
type snapshotWrite struct {
	t          *task
	id         int64
	state      *backend.SubtaskState
	keyed      backend.Snapshot
	ack        checkpoint.SubtaskAck
	delta      bool
	inFlight   <-chan channelState
	prev, done chan struct{}
	clk        clock.Clock
}

// run stores the snapshot and acknowledges it, or declines it.
func (w *snapshotWrite) run(ctx context.Context) {
	t := w.t
	start := w.clk.Now()
	if err := w.encode(); err != nil {
		t.breakChain()
		w.decline(checkpoint.ReasonDeclined, fmt.Errorf("%s: encode state: %w", t.name, err))
		return
	}
	if w.inFlight != nil && !w.takeInFlight(ctx) {
		return
	}
	h, err := t.a.job.store.PutStateParts(ctx, w.id, t.id, w.state.Parts())
	if err != nil {
		t.breakChain()
		if ctx.Err() == nil {
			w.decline(checkpoint.ReasonStorage, fmt.Errorf("%s: write state: %w", t.name, err))
		}
		return
	}
	if w.prev != nil {
		select {
		case <-w.prev:
		case <-ctx.Done():
			return
		}
	}
	if !w.chainUp(h) {
		return
	}
	w.ack.Handle = h
	w.ack.AsyncDuration = clock.Since(w.clk, start)
	w.ack.IncrementalBytes = h.Size
	t.a.job.coord.Acknowledge(t.a.epoch.Load(), w.id, t.id, w.ack)
}

func (w *snapshotWrite) decline(why checkpoint.FailureReason, err error) {
	w.t.a.job.coord.Decline(w.t.a.epoch.Load(), w.id, w.t.id, why, err)
}

// encode encodes the keyed state into the snapshot (a delta only when the
// backend made one).
func (w *snapshotWrite) encode() error {
	if w.keyed == nil {
		w.delta = false
		return nil
	}
	if d, ok := w.keyed.(backend.DeltaSnapshot); ok {
		w.delta = w.delta && d.Incremental()
	}
	b, err := w.keyed.Encode()
	if err != nil {
		return err
	}
	w.state.Keyed = b
	return nil
}

// takeInFlight waits for the channel state of an unaligned checkpoint and
// puts it into the snapshot; false when there is none to store.
func (w *snapshotWrite) takeInFlight(ctx context.Context) bool {
	var cs channelState
	var ok bool
	select {
	case cs, ok = <-w.inFlight:
	case <-ctx.Done():
	}
	if !ok {
		w.t.breakChain() // never stored: the next delta cannot build on it
		return false
	}
	if cs.err != nil {
		w.t.breakChain()
		w.decline(checkpoint.ReasonDeclined, cs.err)
		return false
	}
	w.state.Channels = cs.channels
	w.ack.PersistedInFlight, w.ack.PersistedRecords, w.ack.InFlightIDs = cs.bytes, cs.records, cs.ids
	return true
}

// chainUp adds stored blob h to the subtask's chain of incremental
// snapshots (or starts one with a full snapshot), and counts the chain's
// size into the ack; false when a delta's base was lost meanwhile.
func (w *snapshotWrite) chainUp(h checkpoint.Handle) bool {
	t := w.t
	t.incMu.Lock()
	defer t.incMu.Unlock()
	if w.delta && t.broken {
		w.decline(checkpoint.ReasonDeclined, fmt.Errorf("%s: the incremental snapshot's base was lost; the next snapshot is full", t.name))
		return false
	}
	w.ack.Bytes = h.Size
	if w.delta {
		w.ack.Chain = append([]checkpoint.Handle(nil), t.chain...)
		for _, c := range t.chain {
			w.ack.Bytes += c.Size
		}
		t.chain = append(t.chain, h)
	} else if w.keyed != nil {
		t.chain = []checkpoint.Handle{h}
		t.broken = false
	}
	return true
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
		inFlight = t.opr.startInFlight(id, r.TimedOut)
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
