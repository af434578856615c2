package runtime

// The source subtask's loop: polling, checkpoint barriers at the trigger,
// offsets in its state and committed to the consumer group.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/clock"
	"github.com/faultline-dev/faultline/runtime/barrier"
)

const sourceStateName = "offsets"

// sourceTask is a source subtask: the task core, and the reader of its
// partitions with what it keeps of them.
type sourceTask struct {
	*task
	src    Source
	reader SourceReader
	srcBuf []Record
	atEnd  bool
	// finalBarrier is the checkpoint the source waits for once at its end.
	finalBarrier int64
	srcOffsets   map[int64]map[int32]int64 // checkpoint id → offsets, until it completes
	// readerWaitedMark is the source reader's Waited at the last look.
	readerWaitedMark time.Duration
	// align is the subtask's part in the job's watermark alignment (nil:
	// its source does not align); lastRead is when a poll last got records.
	align    *alignSlot
	lastRead time.Time
}

// runSource reads the source's partitions, emitting batches and injecting
// barriers when the coordinator triggers a checkpoint (Flink: SourceStreamTask
// with its SourceReader).
func (t *sourceTask) runSource(ctx context.Context) error {
	checkpointing := t.a.job.cfg.Checkpoint.Interval > 0
	defer t.leaveAlignment()
	for ctx.Err() == nil {
		if d := t.pace(ctx); d > 0 {
			t.m.IdleNanos.Add(int64(d))
		}
		finished, err := t.handleMail(ctx)
		if err != nil {
			return err
		}
		if finished {
			t.broadcast(Element{Kind: KindEndOfInput})
			return nil
		}
		if t.atEnd {
			if !checkpointing {
				t.broadcast(Element{Kind: KindEndOfInput})
				return nil
			}
			t.wait(ctx)
			continue
		}
		if t.a.job.paused.Load() {
			t.waitPaused(ctx)
			continue
		}
		if t.outputsFull() {
			t.backPressured(ctx)
			continue
		}
		if t.heldBack() {
			t.waitAligned(ctx)
			continue
		}
		if t.a.job.Tempo() == TempoFrozen && !t.a.job.Stepping() {
			continue // a step ended while the source waited: read nothing more
		}
		began := t.wall().Now()
		batch := t.a.job.cfg.BatchSize
		if t.slowed() {
			batch = min(batch, slowBatch) // the trigger of a checkpoint waits for a batch at most
		}
		if t.a.job.Tempo() != TempoNormal {
			batch = min(batch, tempoBatch) // slow motion slows the records, not only the batches
		}
		recs, done, err := t.reader.Poll(ctx, t.srcBuf[:0], batch)
		if err != nil {
			return fmt.Errorf("%s: read %s: %w", t.name, t.src.Topic(), err)
		}
		t.srcBuf = recs
		t.noteSourceIdle(began, len(recs))
		for i := range recs {
			t.in++
			if t.in+t.m.RecordsIn.Load() >= t.faultAt {
				if err := t.checkFaults(); err != nil {
					return err
				}
			}
			t.Collect(recs[i])
			recs[i] = Record{}
		}
		if t.emitErr != nil {
			return t.emitErr
		}
		t.flushOutputs()
		t.flushCounters()
		t.publishProgress(len(recs) > 0)
		t.measureRate(began)
		if err := t.holdRecords(ctx, len(recs)); err != nil {
			return err
		}
		t.atEnd = t.atEnd || done
		t.publishWatermark(len(recs))
		if done {
			t.a.report(ctx, taskEvent{kind: evSourceAtEnd, task: t.task})
		}
	}
	return ctx.Err()
}

// commitOffsets hands the offsets of completed checkpoint id (or of the
// newest one before it) to the source reader to commit, and forgets older
// ones.
func (t *sourceTask) commitOffsets(id int64) {
	oc, ok := t.reader.(OffsetCommitter)
	if !ok {
		return
	}
	var best int64
	for cid := range t.srcOffsets {
		if cid <= id && cid > best {
			best = cid
		}
	}
	if best == 0 {
		return
	}
	if err := oc.CommitOffsets(t.srcOffsets[best]); err != nil {
		t.a.job.logf("%s: commit offsets of checkpoint %d: %v", t.name, best, err)
	}
	for cid := range t.srcOffsets {
		if cid <= best {
			delete(t.srcOffsets, cid)
		}
	}
}

// noteLastCommit logs a closed reader's failed last offset commit: the job
// does not depend on it, but Kafka's tools then show its group lagging.
func (t *sourceTask) noteLastCommit() {
	if c, ok := t.reader.(CommitReporter); ok {
		if err := c.LastCommitError(); err != nil {
			t.a.job.logf("%s: the last offsets were not committed to the consumer group (Kafka's tools show it behind): %v", t.name, err)
		}
	}
}

// waitPaused waits a moment while the source is paused, counted as idle:
// a paused source reads nothing.
func (t *sourceTask) waitPaused(ctx context.Context) { t.waitIdle(ctx, 20*time.Millisecond) }

// waitIdle waits d, or for mail, counted as idle.
func (t *sourceTask) waitIdle(ctx context.Context, d time.Duration) {
	start := t.wall().Now()
	t.m.waitingSince.Store(start.UnixNano())
	after, tm := clock.After(t.wall(), d)
	defer tm.Stop()
	select {
	case <-t.gate.c:
	case <-after:
	case <-ctx.Done():
	}
	t.m.idleFrom(start, t.wall().Now())
}

// sourceCheckpoint snapshots a source's offsets and injects barrier id
// behind every record read so far.
//
// An unaligned barrier goes ahead of the records the source already sent:
// they are in flight for the checkpoint, stored by the subtasks that
// receive them.
func (t *sourceTask) sourceCheckpoint(ctx context.Context, id, triggerNs int64, savepoint bool, mode barrier.Mode, unaligned bool) error {
	start := t.clk().Now()
	offs := t.reader.Offsets()
	state := &backend.SubtaskState{Operator: map[string][]byte{sourceStateName: encodeOffsets(offs)}}
	b := barrierElement(id, triggerNs, savepoint, mode == barrier.AtLeastOnce)
	// Once the source has read all its input, its barriers stay aligned:
	// the checkpoint it then waits for to end (finalBarrier) is the last
	// the job completes, and records its barrier overtook would reach the
	// sinks after it, in the final transaction the job commits as it
	// finishes; a run resumed from that checkpoint would replay them and
	// write them twice. (Flink's final checkpoint is likewise taken after
	// every record was processed.)
	b.StayAligned = b.StayAligned || t.atEnd
	unaligned = unaligned && !savepoint && mode == barrier.ExactlyOnce && !t.atEnd
	if unaligned {
		t.broadcastPriority(b)
	} else {
		t.broadcast(b)
	}
	t.stepSaw(t.a.job.steps.snapshotted(t.op.Name, id))
	if t.atEnd && t.finalBarrier == 0 {
		t.finalBarrier = id
	}
	if _, ok := t.reader.(OffsetCommitter); ok {
		if t.srcOffsets == nil {
			t.srcOffsets = map[int64]map[int32]int64{}
		}
		t.srcOffsets[id] = offs
	}
	ack := checkpoint.SubtaskAck{
		SyncDuration: clock.Since(t.clk(), start),
		StartDelay:   start.Sub(time.Unix(0, triggerNs)),
		Offsets:      checkpoint.Offsets{t.src.Topic(): offs},
		Unaligned:    unaligned,
	}
	t.persistAsync(ctx, id, state, nil, ack, false, nil)
	return nil
}

// noteSourceIdle counts a poll begun at began that returned n records as
// idle time: all of it when it returned none, else the time the reader
// says it waited for them.
func (t *sourceTask) noteSourceIdle(began time.Time, n int) {
	waited := t.readerWaited()
	if n == 0 {
		t.m.IdleNanos.Add(int64(clock.Since(t.wall(), began)))
	} else {
		t.m.IdleNanos.Add(int64(waited))
	}
}

// readerWaited is how long the source's reader has waited for records
// since the last call (0 for a reader that does not say).
func (t *sourceTask) readerWaited() time.Duration {
	w, ok := t.reader.(WaitingReader)
	if !ok {
		return 0
	}
	total := w.Waited()
	d := total - t.readerWaitedMark
	if d < 0 { // a reader opened afresh counts from 0
		d = total
	}
	t.readerWaitedMark = total
	return d
}

// openReader opens the reader of the source's partitions at the offsets
// its restored state holds (oc.RestoredState).
func (t *sourceTask) openReader(oc *OperatorContext) error {
	offsets := map[int32]int64{}
	for _, b := range oc.RestoredState(sourceStateName) {
		o, err := decodeOffsets(b)
		if err != nil {
			return fmt.Errorf("restore %s: %w", t.name, err)
		}
		for p, off := range o {
			offsets[p] = off
		}
	}
	var mine []int32
	for p := 0; p < t.src.Partitions(); p++ {
		if p%t.op.Parallelism == t.id.Index {
			mine = append(mine, int32(p))
		}
	}
	var r SourceReader
	var err error
	if cs, ok := t.src.(ClockedSource); ok {
		r, err = cs.ReaderOn(t.clk(), mine, offsets)
	} else {
		r, err = t.src.Reader(mine, offsets)
	}
	if err != nil {
		return fmt.Errorf("%s: open %s: %w", t.name, t.src.Topic(), err)
	}
	t.reader = r
	t.leaveAlignment() // what an instance before this one published
	return nil
}

// encodeOffsets and decodeOffsets keep a source subtask's positions.
func encodeOffsets(offs map[int32]int64) []byte {
	parts := make([]int, 0, len(offs))
	for p := range offs {
		parts = append(parts, int(p))
	}
	sort.Ints(parts)
	var sb strings.Builder
	for i, p := range parts {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(p))
		sb.WriteByte(':')
		sb.WriteString(strconv.FormatInt(offs[int32(p)], 10))
	}
	return []byte(sb.String())
}

func decodeOffsets(b []byte) (map[int32]int64, error) {
	out := map[int32]int64{}
	if len(b) == 0 {
		return out, nil
	}
	for _, kv := range strings.Split(string(b), ",") {
		k, v, ok := strings.Cut(kv, ":")
		p, err1 := strconv.Atoi(k)
		o, err2 := strconv.ParseInt(v, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("source offsets %q: %w", b, backend.ErrCorrupt)
		}
		out[int32(p)] = o
	}
	return out, nil
}

// publishProgress publishes the subtask's next offsets, after a read that
// moved them (or the first), and its lag, which the broker moves too.
func (t *sourceTask) publishProgress(moved bool) {
	lag := int64(-1)
	if lr, ok := t.reader.(LagReporter); ok {
		lag = lr.Lag()
	}
	t.m.lag.Store(lag)
	if moved || t.m.offsets.Load() == nil {
		t.m.offsets.Store(t.reader.Offsets())
	}
}
