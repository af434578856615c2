package orders

import (
	"encoding/binary"

	"github.com/faultline-dev/faultline/runtime"
)

// The tags of the job's values in channel state (runtime.InFlightValue):
// the engine keeps 0, 1 and 7 for its own.
const (
	tagOrder byte = iota + 2
	tagPayment
	tagPaidOrder
	tagRevenue
	tagEnriched
)

var (
	_ runtime.InFlightValue = (*Order)(nil)
	_ runtime.InFlightValue = (*Payment)(nil)
	_ runtime.InFlightValue = (*PaidOrder)(nil)
	_ runtime.InFlightValue = (*Revenue)(nil)
	_ runtime.InFlightValue = (*Enriched)(nil)
)

// InFlightTag implements runtime.InFlightValue; so do AppendInFlight and
// InFlightSize. Every field is kept, those the JSON form leaves out
// (EventTime, Watermark) too: a replayed record is the record that was in
// flight.
func (o *Order) InFlightTag() byte { return tagOrder }

func (o *Order) AppendInFlight(dst []byte) []byte {
	dst = runtime.AppendInFlightString(dst, o.OrderID)
	dst = runtime.AppendInFlightString(dst, o.Customer)
	dst = binary.AppendVarint(dst, o.AmountCents)
	dst = binary.AppendVarint(dst, o.EventTime)
	return binary.AppendVarint(dst, o.Watermark)
}

func (o *Order) InFlightSize() int {
	return runtime.InFlightStringSize(len(o.OrderID)) + runtime.InFlightStringSize(len(o.Customer)) +
		runtime.InFlightVarintSize(o.AmountCents) + runtime.InFlightVarintSize(o.EventTime) + runtime.InFlightVarintSize(o.Watermark)
}

func (p *Payment) InFlightTag() byte { return tagPayment }

func (p *Payment) AppendInFlight(dst []byte) []byte {
	dst = runtime.AppendInFlightString(dst, p.OrderID)
	dst = runtime.AppendInFlightString(dst, p.PaymentID)
	dst = binary.AppendVarint(dst, p.AmountCents)
	dst = binary.AppendVarint(dst, p.EventTime)
	return binary.AppendVarint(dst, p.Watermark)
}

func (p *Payment) InFlightSize() int {
	return runtime.InFlightStringSize(len(p.OrderID)) + runtime.InFlightStringSize(len(p.PaymentID)) +
		runtime.InFlightVarintSize(p.AmountCents) + runtime.InFlightVarintSize(p.EventTime) + runtime.InFlightVarintSize(p.Watermark)
}

func (p *PaidOrder) InFlightTag() byte { return tagPaidOrder }

func (p *PaidOrder) AppendInFlight(dst []byte) []byte {
	dst = runtime.AppendInFlightString(dst, p.OrderID)
	dst = runtime.AppendInFlightString(dst, p.Customer)
	return binary.AppendVarint(dst, p.AmountCents)
}

func (p *PaidOrder) InFlightSize() int {
	return runtime.InFlightStringSize(len(p.OrderID)) + runtime.InFlightStringSize(len(p.Customer)) + runtime.InFlightVarintSize(p.AmountCents)
}

func (r *Revenue) InFlightTag() byte { return tagRevenue }

func (r *Revenue) AppendInFlight(dst []byte) []byte {
	return binary.AppendVarint(r.PaidOrder.AppendInFlight(dst), r.CustomerTotalCents)
}

func (r *Revenue) InFlightSize() int {
	return r.PaidOrder.InFlightSize() + runtime.InFlightVarintSize(r.CustomerTotalCents)
}

func (e *Enriched) InFlightTag() byte { return tagEnriched }

func (e *Enriched) AppendInFlight(dst []byte) []byte {
	return runtime.AppendInFlightString(e.Order.AppendInFlight(dst), e.Tier)
}

func (e *Enriched) InFlightSize() int {
	return e.Order.InFlightSize() + runtime.InFlightStringSize(len(e.Tier))
}

// inFlightDecoder reads the job's values back (runtime.InFlightDecoder),
// handing them out from blocks and their strings from text blocks.
type inFlightDecoder struct {
	text     text
	orders   runtime.Slab[Order]
	payments runtime.Slab[Payment]
	paid     runtime.Slab[PaidOrder]
	revenues runtime.Slab[Revenue]
	enriched runtime.Slab[Enriched]
}

// Decode implements runtime.InFlightDecoder.
func (d *inFlightDecoder) Decode(tag byte, r *runtime.InFlightReader, left int) (any, bool) {
	switch tag {
	case tagOrder:
		v := d.orders.Take(left)
		d.order(r, v)
		return v, true
	case tagPayment:
		v := d.payments.Take(left)
		v.OrderID, v.PaymentID = d.text.two(r.Field(), r.Field())
		v.AmountCents, v.EventTime, v.Watermark = r.Varint(), r.Varint(), r.Varint()
		return v, true
	case tagPaidOrder:
		v := d.paid.Take(left)
		d.paidOrder(r, v)
		return v, true
	case tagRevenue:
		v := d.revenues.Take(left)
		d.paidOrder(r, &v.PaidOrder)
		v.CustomerTotalCents = r.Varint()
		return v, true
	case tagEnriched:
		v := d.enriched.Take(left)
		d.order(r, &v.Order)
		v.Tier = string(r.Field())
		return v, true
	}
	return nil, false
}

func (d *inFlightDecoder) order(r *runtime.InFlightReader, o *Order) {
	o.OrderID, o.Customer = d.text.two(r.Field(), r.Field())
	o.AmountCents, o.EventTime, o.Watermark = r.Varint(), r.Varint(), r.Varint()
}

func (d *inFlightDecoder) paidOrder(r *runtime.InFlightReader, p *PaidOrder) {
	p.OrderID, p.Customer = d.text.two(r.Field(), r.Field())
	p.AmountCents = r.Varint()
}
