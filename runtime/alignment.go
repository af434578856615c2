package runtime

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/spec"
)

// WatermarkReader is a SourceReader that says its watermark: the least,
// over its partitions, of the newest event time read of each (0: none
// yet; math.MaxInt64 once every partition has ended).
type WatermarkReader interface {
	Watermark() int64
}

// alignment holds the subtasks of the sources that set
// watermark_alignment within their maximum drift of the slowest of them
// in event time (Flink: watermark alignment, which
// WatermarkStrategy.withWatermarkAlignment sets up: the source coordinator
// tells the readers the group's least watermark every update interval,
// and a reader pauses the splits whose watermark is past it plus the
// drift). Here every source subtask of the group publishes its watermark
// after each poll and reads the others' before the next, so the bound
// holds at once. At full speed two sources drift apart without it (one
// reads faster than the other), and a join between them keeps every
// record of the faster one waiting for its partner: its state grows with
// the drift. A subtask that has gone quiet (alignIdle) or reached the end
// of its partitions takes no part, as Flink leaves idle and finished
// readers out: the others would wait for it for good.
type alignment struct {
	slots map[string]*alignSlot // by source subtask name; fixed by New
	all   []*alignSlot
}

// alignSlot is one source subtask's part in the alignment.
type alignSlot struct {
	drift int64        // ms of event time it may read ahead of the least
	wm    atomic.Int64 // its watermark while it takes part; 0: it takes none
}

// newAlignment makes a slot for every subtask of a source of job that
// sets watermark_alignment.
func newAlignment(job *spec.Job) alignment {
	a := alignment{slots: map[string]*alignSlot{}}
	for _, op := range job.Operators {
		if op.Type != spec.TypeSource || op.WatermarkAlignment <= 0 {
			continue
		}
		for i := range op.Parallelism {
			s := &alignSlot{drift: op.WatermarkAlignment.Milliseconds()}
			a.slots[checkpoint.TaskID{Operator: op.Name, Index: i}.String()] = s
			a.all = append(a.all, s)
		}
	}
	return a
}

// least is the least watermark of the subtasks taking part (0: none).
func (a *alignment) least() int64 {
	var m int64
	for _, s := range a.all {
		if v := s.wm.Load(); v > 0 && (m == 0 || v < m) {
			m = v
		}
	}
	return m
}

// aligningWatermark is what a source subtask publishes after a poll: its
// watermark wm while it takes part, 0 once it has nothing more to read,
// for quiet (its polls have found nothing for alignIdle) or for ever
// (atEnd, or every partition ended). A poll that finds nothing now and
// then is no sign of it: a Kafka reader's fetches leave gaps at full
// speed, and the subtask that led would drop out of the group and run on.
// Nor is a long run of them while its reader knows of records it has not
// read yet (behind: a lag): that is a slow fetch on a busy machine, and
// the subtask left out would let the other source run ahead, and the
// join's state grow, until it caught up.
func aligningWatermark(wm int64, quiet time.Duration, behind, atEnd bool) int64 {
	if (quiet >= alignIdle && !behind) || atEnd || wm == math.MaxInt64 {
		return 0
	}
	return wm
}

// alignIdle is how long a source subtask's polls find nothing before it
// leaves the alignment (Flink: WatermarkStrategy.withIdleness, which the
// job sets; a partition that goes quiet would hold the others back for
// good).
const alignIdle = 200 * time.Millisecond

// aheadBy reports whether a subtask at watermark wm is more than drift
// ahead of least, the group's least watermark (0: none).
func aheadBy(wm, least, drift int64) bool {
	return wm > 0 && least > 0 && wm-least > drift
}

// publishWatermark notes the subtask's watermark in its slot after a poll
// that got n records.
func (t *sourceTask) publishWatermark(n int) {
	if t.align == nil {
		return
	}
	now := t.wall().Now()
	if n > 0 || t.lastRead.IsZero() {
		t.lastRead = now
	}
	var wm int64
	if r, ok := t.reader.(WatermarkReader); ok {
		wm = r.Watermark()
	}
	t.align.wm.Store(aligningWatermark(wm, now.Sub(t.lastRead), t.behind(), t.atEnd))
}

// behind reports whether the subtask's reader knows of records it has not
// read yet (a Kafka source's lag, as its last fetch told it).
func (t *sourceTask) behind() bool {
	r, ok := t.reader.(LagReporter)
	return ok && r.Lag() > 0
}

// leaveAlignment takes the subtask out of the group: it ends, fails or
// starts over.
func (t *sourceTask) leaveAlignment() {
	if t.align != nil {
		t.align.wm.Store(0)
	}
}

// heldBack reports whether the subtask has read too far ahead of the
// slowest of its group to poll now.
func (t *sourceTask) heldBack() bool {
	if t.align == nil {
		return false
	}
	return aheadBy(t.align.wm.Load(), t.a.job.align.least(), t.align.drift)
}

// waitAligned waits a moment for the slowest subtask to catch up, or for
// mail; the time counts as idle, as a Flink reader with its splits paused
// is.
func (t *sourceTask) waitAligned(ctx context.Context) { t.waitIdle(ctx, alignWait) }

// alignWait is how long a held-back source subtask waits before it looks
// again (Flink's update interval, 1 s by default: here the watermarks are
// read where they are, so a look costs little).
const alignWait = time.Millisecond
