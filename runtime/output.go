package runtime

import (
	"fmt"
	"sync"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/runtime/spec"
)

// output sends one subtask's records along one edge of the job graph to the
// downstream subtasks, choosing the channel by the edge's partitioner (Flink:
// RecordWriter + StreamPartitioner), and batching elements per channel.
type output struct {
	edge     spec.EdgeType
	key      string
	maxPar   int
	channels []*Channel // indexed by downstream subtask (one for forward)
	bufs     [][]Element
	batch    int
	rr       int
}

func newOutput(in spec.Input, maxPar int, channels []*Channel, batch int, self int) *output {
	o := &output{edge: in.Edge, key: in.Key, maxPar: maxPar, channels: channels, batch: batch, bufs: make([][]Element, len(channels))}
	o.rr = self // spread round robin starting points across senders
	return o
}

// target picks the channel for rec and, for a hash edge, sets its key and
// returns the key's key group (-1 for the other edges).
func (o *output) target(rec *Record) (int, int, error) {
	switch o.edge {
	case spec.Forward:
		return 0, -1, nil
	case spec.Hash:
		f, ok := rec.Value.(Fielder)
		if !ok {
			return 0, -1, unrecoverable(fmt.Errorf("cannot key a %T by %q", rec.Value, o.key))
		}
		k, ok := f.Field(o.key)
		if !ok {
			return 0, -1, unrecoverable(fmt.Errorf("record has no field %q to key by", o.key))
		}
		rec.Key = k
		kg := backend.KeyGroupFor(k, o.maxPar)
		return backend.OperatorIndexFor(kg, o.maxPar, len(o.channels)), kg, nil
	default: // rebalance
		o.rr++
		return o.rr % len(o.channels), -1, nil
	}
}

// emit buffers rec for its channel(s), sending a batch once it is full.
func (o *output) emit(rec Record) error {
	if o.edge == spec.Broadcast {
		for i := range o.channels {
			o.add(i, Element{Kind: KindRecord, Record: rec})
		}
		return nil
	}
	i, kg, err := o.target(&rec)
	if err != nil {
		return err
	}
	o.add(i, Element{Kind: KindRecord, Record: rec, group: int32(kg + 1)})
	return nil
}

func (o *output) add(i int, e Element) {
	if o.bufs[i] == nil {
		o.bufs[i] = getBatch(o.batch)
	}
	o.bufs[i] = append(o.bufs[i], e)
	if len(o.bufs[i]) >= o.batch {
		o.flushOne(i)
	}
}

// batches recycles the element batches receivers are done with: a batch
// is a few kilobytes, and millions of records a second pass through four
// edges of the default job.
var batches sync.Pool // of *[]Element

func getBatch(n int) []Element {
	if p, ok := batches.Get().(*[]Element); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]Element, 0, n)
}

// putBatch takes back a batch whose elements were all handled (records
// handled are cleared, so it keeps nothing alive).
func putBatch(b []Element) {
	if cap(b) >= 64 {
		batches.Put(&b)
	}
}

func (o *output) flushOne(i int) {
	if len(o.bufs[i]) == 0 {
		return
	}
	b := o.bufs[i]
	o.bufs[i] = nil
	o.channels[i].send(b)
}

// flush sends every partly filled batch.
func (o *output) flush() {
	for i := range o.channels {
		o.flushOne(i)
	}
}

// full reports whether one of the output's channels is full.
func (o *output) full() bool {
	for _, c := range o.channels {
		if c.full() {
			return true
		}
	}
	return false
}

// broadcastEvent sends e (a barrier, cancellation marker or end of input) on
// every channel, behind the records already emitted.
func (o *output) broadcastEvent(e Element) {
	for i := range o.channels {
		o.bufs[i] = append(o.bufs[i], e)
		o.flushOne(i)
	}
}

// broadcastPriority sends the unaligned barrier e on every channel ahead
// of the records queued there: the records emitted before it, partly
// filled batches included, are sent first and overtaken, so that they are
// in flight for its checkpoint.
func (o *output) broadcastPriority(e Element) {
	for i := range o.channels {
		o.flushOne(i)
		o.channels[i].sendPriority(e)
	}
}
