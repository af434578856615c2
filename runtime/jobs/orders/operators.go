package orders

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/runtime"
)

// parseOp decodes and validates raw input records. It passes on the event
// time a source handed along with each record, and the watermark: the
// least over its input channels of the newest watermark each delivered
// (Flink: an operator forwards the minimum of its inputs' watermarks), which
// is the source's own behind a forward edge.
type parseOp struct {
	schema   string
	ctx      *runtime.OperatorContext
	wm       runtime.InputWatermarks
	orders   runtime.Slab[Order]
	payments runtime.Slab[Payment]
	text     text
}

func (p *parseOp) Open(ctx *runtime.OperatorContext) error {
	p.ctx = ctx
	p.wm = runtime.NewInputWatermarks(ctx)
	return nil
}

func (p *parseOp) Close() error { return nil }

func (p *parseOp) Process(rec *runtime.Record, out runtime.Collector) error {
	var v any
	var err error
	et := runtime.EventTimeOf(rec)
	wm := p.wm.Note(et.Watermark)
	if p.schema == "payment" {
		pay := p.payments.New()
		v, err = pay, decodePaymentInto(rec.Bytes, pay, &p.text)
		pay.EventTime, pay.Watermark = et.Time, wm
	} else {
		o := p.orders.New()
		v, err = o, decodeOrderInto(rec.Bytes, o, &p.text)
		o.EventTime, o.Watermark = et.Time, wm
	}
	if err != nil {
		return p.ctx.BadRecord(rec, err)
	}
	out.Collect(runtime.Record{Value: v})
	return nil
}

// enrichOp decodes an order and adds its tier.
type enrichOp struct {
	ctx *runtime.OperatorContext
}

func (e *enrichOp) Open(ctx *runtime.OperatorContext) error { e.ctx = ctx; return nil }
func (e *enrichOp) Close() error                            { return nil }

func (e *enrichOp) Process(rec *runtime.Record, out runtime.Collector) error {
	o, err := DecodeOrder(rec.Bytes)
	if err != nil {
		return e.ctx.BadRecord(rec, err)
	}
	tier := "small"
	switch {
	case o.AmountCents >= 15000:
		tier = "large"
	case o.AmountCents >= 5000:
		tier = "medium"
	}
	out.Collect(runtime.Record{Value: &Enriched{Order: *o, Tier: tier}})
	return nil
}

// joinOp joins orders (input 1) with payments (input 2) by order id. Either
// side may come first; it waits in keyed state for the other.
//
// With a state TTL the join keeps a side waiting for at most ttl of event
// time, as a Flink interval join between(-ttl, +ttl) does: an order and its
// payment join only when their event times (their Kafka records'
// timestamps) are at most ttl apart, whatever the order they arrive in, so
// that which paid orders join is a property of the input that the
// verification can check. Waiting sides that can no longer join are
// dropped (Flink: state TTL, whose cleanup frees the state of keys that
// never see their partner), by event-time watermark, as Flink's interval
// join cleans up its buffers with timers that the watermark fires: the
// join's watermark is the least, over its input channels, of the newest
// watermark that came with a record on each (runtime.InputWatermarks), and every
// ttl/2 of it the join sweeps out each side older than it minus ttl minus
// ttlSlack. A source's watermark is the least over its partitions of the
// newest event time read of each, so a partition that lags (records from
// before a break, replayed after a restore, while another partition is
// already at today's) holds the join's watermark back until it has caught
// up: a side is swept only when every input has gone past it. A partner
// could still come for one only if its own partition held it more than
// ttlSlack behind records of that partition read before it, far more than
// the input writer's timestamps are ever out of order.
//
// The watermark is not kept in checkpoints (nor is it in Flink): a restored
// join sweeps nothing until every input channel has delivered a record
// again, which is safe: it only sweeps later. A channel that never delivers a record
// (an input partition without records, a source subtask without
// partitions, a hash edge whose keys all go to other subtasks) holds the
// watermark at none, and then nothing is swept: Flink has source idleness
// for this, faultline has none. The counts go to runtime.TTLCounts.
type joinOp struct {
	order   backend.Value[Order]
	payment backend.Value[Payment]
	keyed   backend.KeyedBackend

	ttl    int64                   // ms of event time; 0: a side waits for ever
	wm     runtime.InputWatermarks // the join's watermark, by input channel
	noteWM func(int64)             // publishes it (runtime.OperatorContext.NoteWatermark)
	shown  int64                   // the watermark last published
	swept  int64                   // the watermark at the last sweep
	counts *runtime.TTLCounts      // shared by the job's joins

	// For individual failover (TrackRollback): the keys a side was buffered
	// under since each snapshot, so that a rollback to a checkpoint knows
	// which buffered sides it loses; and, in a new instance, those keys
	// still to be found out.
	track  bool
	since  []string      // buffered since the last snapshot
	epochs []bufferedIDs // by snapshot, oldest first, until it completes
	lost   map[string]bool
	report func(n int64, what string)

	paid runtime.Slab[PaidOrder]
	text text // the strings of the sides read back from state
}

// bufferedIDs are the keys buffered before barrier id.
type bufferedIDs struct {
	id   int64
	keys []string
}

func (j *joinOp) Open(ctx *runtime.OperatorContext) error {
	j.order = backend.NewValue[Order](ctx.Keyed, "order", orderCodec{&j.text})
	j.payment = backend.NewValue[Payment](ctx.Keyed, "payment", paymentCodec{&j.text})
	j.keyed = ctx.Keyed
	j.track = ctx.TrackRollback
	j.wm = runtime.NewInputWatermarks(ctx)
	j.noteWM = ctx.NoteWatermark
	j.counts = ctx.StateTTL()
	return nil
}

func (j *joinOp) Close() error { return nil }

func (j *joinOp) Process1(rec *runtime.Record, out runtime.Collector) error {
	o := rec.Value.(*Order)
	if err := j.join1(o, out); err != nil {
		return err
	}
	return j.advance(o.Watermark)
}

// join1 joins order o with its waiting payment, or leaves it waiting.
func (j *joinOp) join1(o *Order, out runtime.Collector) error {
	p, ok, err := j.payment.Get()
	if err != nil {
		return err
	}
	if !ok {
		j.order.Update(*o)
		j.buffered(o.OrderID, "its payment went with the rolled-back state")
		return nil
	}
	j.payment.Clear()
	if j.tooFarApart(o.EventTime, p.EventTime) {
		return nil
	}
	po := j.paid.New()
	*po = PaidOrder{OrderID: o.OrderID, Customer: o.Customer, AmountCents: p.AmountCents}
	out.Collect(runtime.Record{Value: po})
	return nil
}

func (j *joinOp) Process2(rec *runtime.Record, out runtime.Collector) error {
	p := rec.Value.(*Payment)
	if err := j.join2(p, out); err != nil {
		return err
	}
	return j.advance(p.Watermark)
}

// join2 joins payment p with its waiting order, or leaves it waiting.
func (j *joinOp) join2(p *Payment, out runtime.Collector) error {
	o, ok, err := j.order.Get()
	if err != nil {
		return err
	}
	if !ok {
		j.payment.Update(*p)
		j.buffered(p.OrderID, "its order went with the rolled-back state")
		return nil
	}
	j.order.Clear()
	if j.tooFarApart(o.EventTime, p.EventTime) {
		return nil
	}
	po := j.paid.New()
	*po = PaidOrder{OrderID: o.OrderID, Customer: o.Customer, AmountCents: p.AmountCents}
	out.Collect(runtime.Record{Value: po})
	return nil
}

// tooFarApart reports whether an order and a payment with these event
// times are more than the TTL apart, and so do not join; the pair is
// counted. Times not known (0) always join.
func (j *joinOp) tooFarApart(a, b int64) bool {
	if !tooFarApart(a, b, time.Duration(j.ttl)*time.Millisecond) {
		return false
	}
	j.counts.NotJoined.Add(1)
	return true
}

// advance notes watermark w, which came with the record just processed on
// the current input channel, and sweeps when the join's watermark (the
// least over its input channels) has moved ttl/2 since the last sweep.
func (j *joinOp) advance(w int64) error {
	wm := j.wm.Note(w)
	if wm != j.shown && j.noteWM != nil {
		j.shown = wm
		j.noteWM(wm)
	}
	if j.ttl == 0 || wm == 0 {
		return nil
	}
	if j.swept == 0 {
		j.swept = wm
	}
	if wm-j.swept < j.ttl/2 {
		return nil
	}
	j.swept = wm
	return j.sweep(wm - j.ttl - max(j.ttl, ttlSlack.Milliseconds()))
}

// ttlSlack is how much later than the TTL a waiting side is dropped, at
// least: how far out of order in event time the records of one partition
// may be and still join (see joinOp). It is the TTL itself when that is
// longer.
const ttlSlack = 5 * time.Second

// sweep drops every waiting side older than before (see joinOp).
func (j *joinOp) sweep(before int64) error {
	scanner, ok := j.keyed.(backend.KeyScanner)
	if !ok {
		return nil
	}
	var expired []string
	var bad error
	for _, name := range []string{"order", "payment"} {
		expired = expired[:0]
		scanner.ScanKeys(name, func(key, _ string, v []byte) bool {
			t, err := sideEventTime(v)
			if err != nil {
				bad = fmt.Errorf("join state of %s: %w", key, err)
				return false
			}
			if t != 0 && t < before {
				expired = append(expired, key)
			}
			return true
		})
		if bad != nil {
			return bad
		}
		for _, k := range expired {
			j.keyed.SetCurrentKey(k)
			j.keyed.Delete(name, "")
		}
		j.counts.Expired.Add(int64(len(expired)))
	}
	return nil
}

// buffered notes that a side of key now waits in state. When key lost its
// other side in a rollback, that side will never come: the paid order is
// lost.
func (j *joinOp) buffered(key, why string) {
	if !j.track {
		return
	}
	j.since = append(j.since, key)
	if j.lost[key] {
		delete(j.lost, key)
		j.report(1, "order "+key+": "+why)
	}
}

// SnapshotState implements StateSnapshotter: the join has keyed state only,
// and notes which keys were buffered before this barrier.
func (j *joinOp) SnapshotState(id int64) (map[string][]byte, error) {
	if j.track {
		j.epochs = append(j.epochs, bufferedIDs{id: id, keys: j.since})
		j.since = nil
	}
	return nil, nil
}

// NotifyCheckpointComplete implements CheckpointListener: what was buffered
// before a completed checkpoint is in it.
func (j *joinOp) NotifyCheckpointComplete(id int64) error {
	i := 0
	for i < len(j.epochs) && j.epochs[i].id <= id {
		i++
	}
	j.epochs = append(j.epochs[:0], j.epochs[i:]...)
	return nil
}

// rollback implements RollbackCounter: the sides buffered after checkpoint
// from and still waiting are gone; each of them turns into a lost paid order
// when its partner arrives (a side whose partner never comes, an unpaid
// order, costs nothing).
func (j *joinOp) Rollback(from int64, keyed runtime.KeyedReader) (int64, any) {
	lost := map[string]bool{}
	check := func(keys []string) {
		for _, k := range keys {
			keyed.SetCurrentKey(k)
			_, o, _ := j.order.Get()
			_, p, _ := j.payment.Get()
			if o || p {
				lost[k] = true
			}
		}
	}
	for _, e := range j.epochs {
		if e.id > from {
			check(e.keys)
		}
	}
	check(j.since)
	return 0, lost
}

// adoptRollback implements RollbackAdopter.
func (j *joinOp) AdoptRollback(later any, report func(n int64, what string)) {
	j.lost, _ = later.(map[string]bool)
	j.report = report
}

// aggregateOp keeps each customer's running revenue.
type aggregateOp struct {
	total   backend.Value[int64]
	revenue runtime.Slab[Revenue]
}

func (a *aggregateOp) Open(ctx *runtime.OperatorContext) error {
	a.total = backend.NewValue[int64](ctx.Keyed, "total_cents", backend.Int64Codec{})
	return nil
}

func (a *aggregateOp) Close() error { return nil }

func (a *aggregateOp) Process(rec *runtime.Record, out runtime.Collector) error {
	p := rec.Value.(*PaidOrder)
	t, _, err := a.total.Get()
	if err != nil {
		return err
	}
	t += p.AmountCents
	a.total.Update(t)
	r := a.revenue.New()
	*r = Revenue{PaidOrder: *p, CustomerTotalCents: t}
	out.Collect(runtime.Record{Value: r})
	return nil
}

// orderCodec and paymentCodec keep the join's buffered sides in state.
// Decoded strings come from t's blocks (t nil: an allocation each), so a
// codec with a t belongs to one goroutine.
type orderCodec struct{ t *text }

// stringsRoom is room for two length-prefixed strings and a varint besides
// the strings' bytes: state values are encoded into a buffer of their size
// at once, not grown three times.
const stringsRoom = 2*2 + binary.MaxVarintLen64

func (orderCodec) Append(dst []byte, o Order) []byte {
	dst = slices.Grow(dst, len(o.OrderID)+len(o.Customer)+stringsRoom+binary.MaxVarintLen64)
	dst = backend.AppendString(dst, o.OrderID)
	dst = backend.AppendString(dst, o.Customer)
	dst = binary.AppendVarint(dst, o.AmountCents)
	return binary.AppendVarint(dst, o.EventTime)
}

func (c orderCodec) Decode(b []byte) (Order, error) {
	id, customer, b, ok := readTwoStrings(b)
	v, n := binary.Varint(b)
	if !ok || n <= 0 {
		return Order{}, backend.ErrCorrupt
	}
	o := Order{AmountCents: v}
	var err error
	if o.EventTime, err = readEventTime(b[n:]); err != nil {
		return Order{}, err
	}
	o.OrderID, o.Customer = c.t.two(id, customer)
	return o, nil
}

// sideEventTime reads the event time of a buffered order or payment (both
// codecs lay a side out alike) without decoding its strings: the sweep
// reads every side in state.
func sideEventTime(b []byte) (int64, error) {
	_, _, b, ok := readTwoStrings(b)
	_, n := binary.Varint(b)
	if !ok || n <= 0 {
		return 0, backend.ErrCorrupt
	}
	return readEventTime(b[n:])
}

// readEventTime reads the event time that ends a buffered side; state
// written before sides kept one ends before it (0: not known).
func readEventTime(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, nil
	}
	t, n := binary.Varint(b)
	if n != len(b) {
		return 0, backend.ErrCorrupt
	}
	return t, nil
}

type paymentCodec struct{ t *text }

func (paymentCodec) Append(dst []byte, p Payment) []byte {
	dst = slices.Grow(dst, len(p.OrderID)+len(p.PaymentID)+stringsRoom+binary.MaxVarintLen64)
	dst = backend.AppendString(dst, p.OrderID)
	dst = backend.AppendString(dst, p.PaymentID)
	dst = binary.AppendVarint(dst, p.AmountCents)
	return binary.AppendVarint(dst, p.EventTime)
}

func (c paymentCodec) Decode(b []byte) (Payment, error) {
	id, payment, b, ok := readTwoStrings(b)
	v, n := binary.Varint(b)
	if !ok || n <= 0 {
		return Payment{}, backend.ErrCorrupt
	}
	p := Payment{AmountCents: v}
	var err error
	if p.EventTime, err = readEventTime(b[n:]); err != nil {
		return Payment{}, err
	}
	p.OrderID, p.PaymentID = c.t.two(id, payment)
	return p, nil
}

// readTwoStrings reads two strings written by backend.AppendString; they
// point into b.
func readTwoStrings(b []byte) (x, y, rest []byte, ok bool) {
	x, b, ok1 := backend.ReadBytes(b)
	y, b, ok2 := backend.ReadBytes(b)
	return x, y, b, ok1 && ok2
}

// tooFarApart reports whether two event times (Unix ms; 0: not known) are
// more than ttl apart, so that the join does not join them (ttl 0: never).
func tooFarApart(a, b int64, ttl time.Duration) bool {
	return ttl > 0 && a != 0 && b != 0 && max(a-b, b-a) > ttl.Milliseconds()
}
