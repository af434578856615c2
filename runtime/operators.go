package runtime

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"faultline/backend"
	"faultline/runtime/spec"
)

// newOperator builds the operator of a spec entry (sources are run by the
// source task directly and have no Operator). bad is what decoding
// operators do with records they cannot parse.
func newOperator(op *spec.Operator, env *Env, bad *badRecords) (Operator, error) {
	switch op.Type {
	case spec.TypeParse:
		return &parseOp{schema: op.Schema, bad: bad}, nil
	case spec.TypeEnrich:
		return &enrichOp{bad: bad}, nil
	case spec.TypeJoin:
		return &joinOp{}, nil
	case spec.TypeAggregate:
		return &aggregateOp{}, nil
	case spec.TypeSink:
		out, err := env.output(op.Topic)
		if err != nil {
			return nil, err
		}
		return &sinkOp{out: out, topic: op.Topic, txnPrefix: env.TxnPrefix, progress: bad.progress}, nil
	}
	return nil, fmt.Errorf("operator %s: type %q has no implementation", op.Name, op.Type)
}

// parseOp decodes and validates raw input records.
type parseOp struct {
	schema   string
	bad      *badRecords
	task     string
	orders   slab[Order]
	payments slab[Payment]
	text     text
}

func (p *parseOp) Open(ctx *OperatorContext) error { p.task = ctx.Task.String(); return nil }
func (p *parseOp) Close() error                    { return nil }

func (p *parseOp) Process(rec *Record, out Collector) error {
	var v any
	var err error
	if p.schema == "payment" {
		pay := p.payments.new()
		v, err = pay, decodePaymentInto(rec.Bytes, pay, &p.text)
	} else {
		o := p.orders.new()
		v, err = o, decodeOrderInto(rec.Bytes, o, &p.text)
	}
	if err != nil {
		return p.bad.handle(p.task, rec.Bytes, err)
	}
	out.Collect(Record{Value: v})
	return nil
}

// enrichOp decodes an order and adds its tier.
type enrichOp struct {
	bad  *badRecords
	task string
}

func (e *enrichOp) Open(ctx *OperatorContext) error { e.task = ctx.Task.String(); return nil }
func (e *enrichOp) Close() error                    { return nil }

func (e *enrichOp) Process(rec *Record, out Collector) error {
	o, err := DecodeOrder(rec.Bytes)
	if err != nil {
		return e.bad.handle(e.task, rec.Bytes, err)
	}
	tier := "small"
	switch {
	case o.AmountCents >= 15000:
		tier = "large"
	case o.AmountCents >= 5000:
		tier = "medium"
	}
	out.Collect(Record{Value: &Enriched{Order: *o, Tier: tier}})
	return nil
}

// joinOp joins orders (input 1) with payments (input 2) by order id. Either
// side may come first; it waits in keyed state for the other.
type joinOp struct {
	order   backend.Value[Order]
	payment backend.Value[Payment]
	keyed   backend.KeyedBackend

	// For individual failover (TrackRollback): the keys a side was buffered
	// under since each snapshot, so that a rollback to a checkpoint knows
	// which buffered sides it loses; and, in a new instance, those keys
	// still to be found out.
	track  bool
	since  []string      // buffered since the last snapshot
	epochs []bufferedIDs // by snapshot, oldest first, until it completes
	lost   map[string]bool
	report func(n int64, what string)

	paid slab[PaidOrder]
	text text // the strings of the sides read back from state
}

// bufferedIDs are the keys buffered before barrier id.
type bufferedIDs struct {
	id   int64
	keys []string
}

func (j *joinOp) Open(ctx *OperatorContext) error {
	j.order = backend.NewValue[Order](ctx.Keyed, "order", orderCodec{&j.text})
	j.payment = backend.NewValue[Payment](ctx.Keyed, "payment", paymentCodec{&j.text})
	j.keyed = ctx.Keyed
	j.track = ctx.TrackRollback
	return nil
}

func (j *joinOp) Close() error { return nil }

func (j *joinOp) Process1(rec *Record, out Collector) error {
	o := rec.Value.(*Order)
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
	po := j.paid.new()
	*po = PaidOrder{OrderID: o.OrderID, Customer: o.Customer, AmountCents: p.AmountCents}
	out.Collect(Record{Value: po})
	return nil
}

func (j *joinOp) Process2(rec *Record, out Collector) error {
	p := rec.Value.(*Payment)
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
	po := j.paid.new()
	*po = PaidOrder{OrderID: o.OrderID, Customer: o.Customer, AmountCents: p.AmountCents}
	out.Collect(Record{Value: po})
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

// rollback implements rollbackCounter: the sides buffered after checkpoint
// from and still waiting are gone; each of them turns into a lost paid order
// when its partner arrives (a side whose partner never comes, an unpaid
// order, costs nothing).
func (j *joinOp) rollback(from int64, keyed keyedReader) (int64, any) {
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

// adoptRollback implements rollbackAdopter.
func (j *joinOp) adoptRollback(later any, report func(n int64, what string)) {
	j.lost, _ = later.(map[string]bool)
	j.report = report
}

// aggregateOp keeps each customer's running revenue.
type aggregateOp struct {
	total   backend.Value[int64]
	revenue slab[Revenue]
}

func (a *aggregateOp) Open(ctx *OperatorContext) error {
	a.total = backend.NewValue[int64](ctx.Keyed, "total_cents", backend.Int64Codec{})
	return nil
}

func (a *aggregateOp) Close() error { return nil }

func (a *aggregateOp) Process(rec *Record, out Collector) error {
	p := rec.Value.(*PaidOrder)
	t, _, err := a.total.Get()
	if err != nil {
		return err
	}
	t += p.AmountCents
	a.total.Update(t)
	r := a.revenue.new()
	*r = Revenue{PaidOrder: *p, CustomerTotalCents: t}
	out.Collect(Record{Value: r})
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
	dst = slices.Grow(dst, len(o.OrderID)+len(o.Customer)+stringsRoom)
	dst = appendString(dst, o.OrderID)
	dst = appendString(dst, o.Customer)
	return binary.AppendVarint(dst, o.AmountCents)
}

func (c orderCodec) Decode(b []byte) (Order, error) {
	id, customer, b, ok := readTwoStrings(b)
	v, n := binary.Varint(b)
	if !ok || n <= 0 {
		return Order{}, backend.ErrCorrupt
	}
	o := Order{AmountCents: v}
	o.OrderID, o.Customer = c.t.two(id, customer)
	return o, nil
}

type paymentCodec struct{ t *text }

func (paymentCodec) Append(dst []byte, p Payment) []byte {
	dst = slices.Grow(dst, len(p.OrderID)+len(p.PaymentID)+stringsRoom)
	dst = appendString(dst, p.OrderID)
	dst = appendString(dst, p.PaymentID)
	return binary.AppendVarint(dst, p.AmountCents)
}

func (c paymentCodec) Decode(b []byte) (Payment, error) {
	id, payment, b, ok := readTwoStrings(b)
	v, n := binary.Varint(b)
	if !ok || n <= 0 {
		return Payment{}, backend.ErrCorrupt
	}
	p := Payment{AmountCents: v}
	p.OrderID, p.PaymentID = c.t.two(id, payment)
	return p, nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func readString(b []byte) (string, []byte, bool) {
	s, rest, ok := readBytes(b)
	return string(s), rest, ok
}

// readTwoStrings reads two strings written by appendString; they point
// into b.
func readTwoStrings(b []byte) (x, y, rest []byte, ok bool) {
	x, b, ok1 := readBytes(b)
	y, b, ok2 := readBytes(b)
	return x, y, b, ok1 && ok2
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
