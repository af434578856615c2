package runtime

import (
	"context"
	"sync"
	"sync/atomic"

	"faultline/internal/clock"
	"faultline/runtime/view"
)

// Channel connects one upstream subtask to one downstream subtask (Flink: a
// result subpartition and its input channel). It carries batches of
// elements; its capacity, in batches, is the back-pressure: a sender blocks
// when it is full.
//
// Besides the Go channel it keeps counters the UI samples: how many elements
// were sent into it and taken out by the receiver, and where the barriers
// are, so a queue strip can be drawn without touching the data path.
type Channel struct {
	ch   chan []Element
	gate *gate
	// blocked counts, for the sending subtask, the time it waits on a full
	// channel (its back-pressure), on the job's clock clk.
	blocked *atomic.Int64
	since   *atomic.Int64 // when the sender began to wait (0: not waiting)
	clk     clock.Clock

	sent     atomic.Int64 // elements sent
	consumed atomic.Int64 // elements the receiver has handled

	mu       sync.Mutex
	barriers []barrierMark // barriers sent and not yet consumed, oldest first
}

type barrierMark struct {
	id  int64
	seq int64 // position in the channel's element sequence
}

func newChannel(capacity int, g *gate, blocked *atomic.Int64, clk clock.Clock) *Channel {
	if blocked == nil {
		blocked = new(atomic.Int64)
	}
	return &Channel{ch: make(chan []Element, capacity), gate: g, blocked: blocked, since: new(atomic.Int64), clk: clk}
}

// senderMetrics makes the channel count its sender's waits into m.
func (c *Channel) senderMetrics(m *TaskMetrics) *Channel {
	c.blocked, c.since = &m.BackPressuredNanos, &m.blockedSince
	return c
}

// send puts batch into the channel, waiting while it is full. It returns
// false when ctx ended first.
func (c *Channel) send(ctx context.Context, batch []Element) bool {
	base := c.sent.Load()
	for i := range batch {
		if k := batch[i].Kind; k == KindBarrier || k == KindCancel {
			c.mu.Lock()
			c.barriers = append(c.barriers, barrierMark{id: batch[i].ID(), seq: base + int64(i)})
			c.mu.Unlock()
		}
	}
	c.sent.Add(int64(len(batch)))
	select {
	case c.ch <- batch:
	default:
		start := c.clk.Now()
		c.since.Store(start.UnixNano())
		select {
		case c.ch <- batch:
			c.since.Store(0)
			c.blocked.Add(int64(clock.Since(c.clk, start)))
		case <-ctx.Done():
			c.since.Store(0)
			c.blocked.Add(int64(clock.Since(c.clk, start)))
			return false
		}
	}
	c.gate.signal()
	return true
}

// Len is how many elements were sent into the channel and not yet
// handled by the receiver (the batch it is handling included).
func (c *Channel) Len() int64 { return c.sent.Load() - c.consumed.Load() }

// poll takes the next batch if one is waiting.
func (c *Channel) poll() ([]Element, bool) {
	select {
	case b := <-c.ch:
		return b, true
	default:
		return nil, false
	}
}

// markConsumed records that n more elements were handled by the receiver.
func (c *Channel) markConsumed(n int) {
	done := c.consumed.Add(int64(n))
	c.mu.Lock()
	i := 0
	for i < len(c.barriers) && c.barriers[i].seq < done {
		i++
	}
	if i > 0 {
		c.barriers = append(c.barriers[:0], c.barriers[i:]...)
	}
	c.mu.Unlock()
}

// QueueView and BarrierPos are what the UI draws of one input channel (see
// view.QueueView).
type (
	QueueView  = view.QueueView
	BarrierPos = view.BarrierPos
)

// View samples the channel.
func (c *Channel) View() QueueView {
	c.mu.Lock()
	defer c.mu.Unlock()
	done := c.consumed.Load()
	v := QueueView{Queued: c.sent.Load() - done}
	for _, b := range c.barriers {
		v.Barriers = append(v.Barriers, BarrierPos{ID: b.id, Pos: b.seq - done})
	}
	return v
}

// gate wakes a receiving subtask when any of its input channels, or its
// mailbox, has something for it.
type gate struct{ c chan struct{} }

func newGate() *gate { return &gate{c: make(chan struct{}, 1)} }

func (g *gate) signal() {
	select {
	case g.c <- struct{}{}:
	default:
	}
}
