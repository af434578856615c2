package runtime

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"faultline/backend"
	"faultline/runtime/spec"
)

// newOperator builds the operator of a spec entry (sources are run by the
// source task directly and have no Operator).
func newOperator(op *spec.Operator, env *Env) (Operator, error) {
	switch op.Type {
	case spec.TypeParse:
		return &parseOp{schema: op.Schema}, nil
	case spec.TypeEnrich:
		return &enrichOp{}, nil
	case spec.TypeJoin:
		return &joinOp{}, nil
	case spec.TypeAggregate:
		return &aggregateOp{}, nil
	case spec.TypeSink:
		out, err := env.output(op.Topic)
		if err != nil {
			return nil, err
		}
		return &sinkOp{out: out, topic: op.Topic, txnPrefix: env.TxnPrefix}, nil
	}
	return nil, fmt.Errorf("operator %s: type %q has no implementation", op.Name, op.Type)
}

// parseOp decodes and validates raw input records.
type parseOp struct{ schema string }

func (p *parseOp) Open(*OperatorContext) error { return nil }
func (p *parseOp) Close() error                { return nil }

func (p *parseOp) Process(rec *Record, out Collector) error {
	var v any
	var err error
	if p.schema == "payment" {
		v, err = DecodePayment(rec.Bytes)
	} else {
		v, err = DecodeOrder(rec.Bytes)
	}
	if err != nil {
		return err
	}
	out.Collect(Record{Value: v})
	return nil
}

// enrichOp decodes an order and adds its tier.
type enrichOp struct{}

func (e *enrichOp) Open(*OperatorContext) error { return nil }
func (e *enrichOp) Close() error                { return nil }

func (e *enrichOp) Process(rec *Record, out Collector) error {
	o, err := DecodeOrder(rec.Bytes)
	if err != nil {
		return err
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
}

func (j *joinOp) Open(ctx *OperatorContext) error {
	j.order = backend.NewValue[Order](ctx.Keyed, "order", orderCodec{})
	j.payment = backend.NewValue[Payment](ctx.Keyed, "payment", paymentCodec{})
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
		return nil
	}
	j.payment.Clear()
	out.Collect(Record{Value: &PaidOrder{OrderID: o.OrderID, Customer: o.Customer, AmountCents: p.AmountCents}})
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
		return nil
	}
	j.order.Clear()
	out.Collect(Record{Value: &PaidOrder{OrderID: o.OrderID, Customer: o.Customer, AmountCents: p.AmountCents}})
	return nil
}

// aggregateOp keeps each customer's running revenue.
type aggregateOp struct{ total backend.Value[int64] }

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
	out.Collect(Record{Value: &Revenue{PaidOrder: *p, CustomerTotalCents: t}})
	return nil
}

// orderCodec and paymentCodec keep the join's buffered sides in state.
type orderCodec struct{}

func (orderCodec) Append(dst []byte, o Order) []byte {
	dst = appendString(dst, o.OrderID)
	dst = appendString(dst, o.Customer)
	return binary.AppendVarint(dst, o.AmountCents)
}

func (orderCodec) Decode(b []byte) (Order, error) {
	var o Order
	var ok1, ok2 bool
	o.OrderID, b, ok1 = readString(b)
	o.Customer, b, ok2 = readString(b)
	v, n := binary.Varint(b)
	if !ok1 || !ok2 || n <= 0 {
		return o, backend.ErrCorrupt
	}
	o.AmountCents = v
	return o, nil
}

type paymentCodec struct{}

func (paymentCodec) Append(dst []byte, p Payment) []byte {
	dst = appendString(dst, p.OrderID)
	dst = appendString(dst, p.PaymentID)
	return binary.AppendVarint(dst, p.AmountCents)
}

func (paymentCodec) Decode(b []byte) (Payment, error) {
	var p Payment
	var ok1, ok2 bool
	p.OrderID, b, ok1 = readString(b)
	p.PaymentID, b, ok2 = readString(b)
	v, n := binary.Varint(b)
	if !ok1 || !ok2 || n <= 0 {
		return p, backend.ErrCorrupt
	}
	p.AmountCents = v
	return p, nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func readString(b []byte) (string, []byte, bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) < l {
		return "", b, false
	}
	return string(b[n : n+int(l)]), b[n+int(l):], true
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
