package runtime

import (
	"sync"
	"sync/atomic"

	"github.com/faultline-dev/faultline/runtime/view"
)

// Channel connects one upstream subtask to one downstream subtask (Flink: a
// result subpartition and its input channel). It carries batches of
// elements in order; its capacity, in batches, is the back-pressure: a
// sender whose output channel is full takes no more input until the
// receiver made room (Flink: a task waits for its output to be available
// before it processes the next record). A send itself never waits, so that
// what one batch of input produces always goes out, and a subtask between
// two batches can always take a checkpoint's barrier: a channel may hold a
// little more than its capacity.
//
// An unaligned barrier does not queue behind the records: sendPriority puts
// it ahead of every element queued (Flink: a priority event), and the
// receiver takes it first. The elements it overtook stay queued, in order;
// the receiver stores them as in-flight data of the barrier's checkpoint
// (inFlight) and processes them after its snapshot.
//
// Besides the queue it keeps counters the UI samples: how many elements
// were sent into it and taken out by the receiver, and where the barriers
// are, so a queue strip can be drawn without touching the data path.
type Channel struct {
	receiver *gate // woken when something is sent
	sender   *gate // woken when a full channel has room again
	capacity int

	mu    sync.Mutex
	q     [][]Element // batches queued, q[head] first
	head  int
	taken int64 // elements the receiver took out of q
	prio  []priority
	// barriers are the barriers and cancellation markers sent in order
	// and not yet consumed, oldest first.
	barriers []barrierMark
	// persisted is the position up to which the receiver stored the
	// queued elements as in-flight data of an unaligned checkpoint.
	persisted int64

	batches  atomic.Int32 // len(q) - head, for full without the lock
	hasPrio  atomic.Bool
	sent     atomic.Int64 // elements sent in order (priority barriers not counted)
	consumed atomic.Int64 // elements the receiver has handled
}

// priority is an unaligned barrier waiting in a channel's priority lane:
// seq is where it stands in the channel's order, the number of elements
// sent before it; they are the ones it overtakes.
type priority struct {
	e   Element
	seq int64
}

type barrierMark struct {
	e   Element // the barrier or cancellation marker
	seq int64   // position in the channel's element sequence
}

func newChannel(capacity int, receiver, sender *gate) *Channel {
	if sender == nil {
		sender = newGate()
	}
	return &Channel{receiver: receiver, sender: sender, capacity: capacity}
}

// send puts batch at the end of the channel. It never waits: the sender
// asks full before it takes more input.
func (c *Channel) send(batch []Element) {
	c.mu.Lock()
	base := c.sent.Load()
	for i := range batch {
		if k := batch[i].Kind; k == KindBarrier || k == KindCancel {
			c.barriers = append(c.barriers, barrierMark{e: batch[i], seq: base + int64(i)})
		}
	}
	if c.head > 0 && c.head == len(c.q) {
		c.q, c.head = c.q[:0], 0
	}
	c.q = append(c.q, batch)
	c.batches.Add(1)
	c.sent.Add(int64(len(batch)))
	c.mu.Unlock()
	c.receiver.signal()
}

// sendPriority puts the unaligned barrier e ahead of every element queued.
func (c *Channel) sendPriority(e Element) {
	c.mu.Lock()
	c.prio = append(c.prio, priority{e: e, seq: c.sent.Load()})
	c.hasPrio.Store(true)
	c.mu.Unlock()
	c.receiver.signal()
}

// full reports whether the channel holds its capacity or more.
func (c *Channel) full() bool { return int(c.batches.Load()) >= c.capacity }

// Len is how many elements were sent into the channel and not yet
// handled by the receiver (the batch it is handling included).
func (c *Channel) Len() int64 { return c.sent.Load() - c.consumed.Load() }

// poll takes the next batch if one is waiting, and none while an
// unaligned barrier waits: the batches sent after it must not be processed
// before it (they are after its checkpoint); those sent before were all
// queued when it came, and it takes them as in flight.
func (c *Channel) poll() ([]Element, bool) {
	if c.batches.Load() == 0 {
		return nil, false
	}
	c.mu.Lock()
	if c.head == len(c.q) || len(c.prio) > 0 {
		c.mu.Unlock()
		return nil, false
	}
	b := c.q[c.head]
	c.q[c.head] = nil
	c.head++
	c.taken += int64(len(b))
	wasFull := int(c.batches.Add(-1)) == c.capacity-1
	c.mu.Unlock()
	if wasFull {
		c.sender.signal()
	}
	return b, true
}

// pollPriority takes the oldest unaligned barrier waiting, with its place
// in the channel's order.
func (c *Channel) pollPriority() (Element, int64, bool) {
	if !c.hasPrio.Load() {
		return Element{}, 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.prio) == 0 {
		return Element{}, 0, false
	}
	p := c.prio[0]
	c.prio = c.prio[1:]
	c.hasPrio.Store(len(c.prio) > 0)
	return p.e, p.seq, true
}

// inFlight appends to dst the records still queued (not yet taken by the
// receiver) among the elements before position upTo, and marks them
// persisted for the UI. The receiver's own current batch is its to add.
func (c *Channel) inFlight(upTo int64, dst []Record) []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	seq := c.taken
	for _, b := range c.q[c.head:] {
		for i := range b {
			if seq >= upTo {
				break
			}
			if b[i].Kind == KindRecord {
				dst = append(dst, b[i].Record)
			}
			seq++
		}
	}
	c.persisted = max(c.persisted, upTo)
	return dst
}

// queuedBarrier finds the oldest barrier queued in order and not yet
// handled at or after position from, for the aligned-checkpoint timeout.
func (c *Channel) queuedBarrier(from int64, accept func(*Element) bool) (Element, int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.barriers {
		if m.seq >= from && m.e.Kind == KindBarrier && accept(&m.e) {
			return m.e, m.seq, true
		}
	}
	return Element{}, 0, false
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
	v := QueueView{Queued: c.sent.Load() - done, Overtaken: max(c.persisted-done, 0)}
	for _, p := range c.prio {
		v.Barriers = append(v.Barriers, BarrierPos{ID: p.e.ID(), Overtook: max(p.seq-done, 0)})
		v.Overtaken = max(v.Overtaken, p.seq-done)
	}
	for _, b := range c.barriers {
		v.Barriers = append(v.Barriers, BarrierPos{ID: b.e.ID(), Pos: b.seq - done})
	}
	return v
}

// gate wakes a subtask when any of its input channels, or its mailbox, has
// something for it, or an output channel that was full has room again.
type gate struct{ c chan struct{} }

func newGate() *gate { return &gate{c: make(chan struct{}, 1)} }

func (g *gate) signal() {
	select {
	case g.c <- struct{}{}:
	default:
	}
}
