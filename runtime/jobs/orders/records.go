package orders

import (
	"encoding/json"
	"strconv"

	"github.com/faultline-dev/faultline/runtime"
)

// Order is a decoded order.
type Order struct {
	OrderID     string `json:"order_id"`
	Customer    string `json:"customer"`
	AmountCents int64  `json:"amount_cents"`
	// EventTime is when the order happened, in Unix milliseconds: the
	// timestamp of the Kafka record it came in (0: not known).
	EventTime int64 `json:"-"`
	// Watermark is the event-time watermark of the stream the order came
	// in (Flink: Watermark), as the operator that decoded it had it when
	// it emitted the order (0: none yet). It is not kept in state.
	Watermark int64 `json:"-"`
}

// Payment is a decoded payment of one order.
type Payment struct {
	OrderID     string `json:"order_id"`
	PaymentID   string `json:"payment_id"`
	AmountCents int64  `json:"amount_cents"`
	// EventTime and Watermark are as Order's.
	EventTime int64 `json:"-"`
	Watermark int64 `json:"-"`
}

// PaidOrder is an order joined with its payment.
type PaidOrder struct {
	OrderID     string
	Customer    string
	AmountCents int64
}

// Revenue is a paid order with its customer's running total.
type Revenue struct {
	PaidOrder
	CustomerTotalCents int64
}

// Enriched is an order with a tier added by the enrich operator.
type Enriched struct {
	Order
	Tier string
}

// Field implements Fielder.
func (o *Order) Field(name string) (string, bool) {
	switch name {
	case "order_id":
		return o.OrderID, true
	case "customer":
		return o.Customer, true
	case "amount_cents":
		return strconv.FormatInt(o.AmountCents, 10), true
	}
	return "", false
}

// Field implements Fielder.
func (p *Payment) Field(name string) (string, bool) {
	switch name {
	case "order_id":
		return p.OrderID, true
	case "payment_id":
		return p.PaymentID, true
	case "amount_cents":
		return strconv.FormatInt(p.AmountCents, 10), true
	}
	return "", false
}

// Field implements Fielder.
func (p *PaidOrder) Field(name string) (string, bool) {
	switch name {
	case "order_id":
		return p.OrderID, true
	case "customer":
		return p.Customer, true
	case "amount_cents":
		return strconv.FormatInt(p.AmountCents, 10), true
	}
	return "", false
}

// Field implements Fielder.
func (r *Revenue) Field(name string) (string, bool) {
	if name == "customer_total_cents" {
		return strconv.FormatInt(r.CustomerTotalCents, 10), true
	}
	return r.PaidOrder.Field(name)
}

// Field implements Fielder.
func (e *Enriched) Field(name string) (string, bool) {
	if name == "tier" {
		return e.Tier, true
	}
	return e.Order.Field(name)
}

func appendStr(dst []byte, k, v string, first bool) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, k...)
	dst = append(dst, `":`...)
	return appendJSONString(dst, v)
}

// appendJSONString appends v as a JSON string. Printable ASCII without a
// quote or a backslash, all the default job writes, is copied as it is;
// anything else is encoded by encoding/json.
func appendJSONString(dst []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := json.Marshal(v) // a string always encodes
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, v...)
	return append(dst, '"')
}

func appendInt(dst []byte, k string, v int64) []byte {
	dst = append(dst, `,"`...)
	dst = append(dst, k...)
	dst = append(dst, `":`...)
	return strconv.AppendInt(dst, v, 10)
}

// AppendJSON implements JSONAppender.
func (o *Order) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	dst = appendStr(dst, "order_id", o.OrderID, true)
	dst = appendStr(dst, "customer", o.Customer, false)
	dst = appendInt(dst, "amount_cents", o.AmountCents)
	return append(dst, '}')
}

// AppendJSON implements JSONAppender.
func (p *Payment) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	dst = appendStr(dst, "order_id", p.OrderID, true)
	dst = appendStr(dst, "payment_id", p.PaymentID, false)
	dst = appendInt(dst, "amount_cents", p.AmountCents)
	return append(dst, '}')
}

// AppendJSON implements JSONAppender.
func (p *PaidOrder) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	dst = appendStr(dst, "order_id", p.OrderID, true)
	dst = appendStr(dst, "customer", p.Customer, false)
	dst = appendInt(dst, "amount_cents", p.AmountCents)
	return append(dst, '}')
}

// AppendJSON implements JSONAppender: the default job's output value.
func (r *Revenue) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	dst = appendStr(dst, "order_id", r.OrderID, true)
	dst = appendStr(dst, "customer", r.Customer, false)
	dst = appendInt(dst, "amount_cents", r.AmountCents)
	dst = appendInt(dst, "customer_total_cents", r.CustomerTotalCents)
	return append(dst, '}')
}

// AppendJSON implements JSONAppender.
func (e *Enriched) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	dst = appendStr(dst, "order_id", e.OrderID, true)
	dst = appendStr(dst, "customer", e.Customer, false)
	dst = appendInt(dst, "amount_cents", e.AmountCents)
	dst = appendStr(dst, "tier", e.Tier, false)
	return append(dst, '}')
}

// DecodeOrder parses and validates an order.
func DecodeOrder(b []byte) (*Order, error) {
	o := &Order{}
	if err := decodeOrderInto(b, o, nil); err != nil {
		return nil, err
	}
	return o, nil
}

// decodeOrderInto is DecodeOrder into a zero o, its strings from t.
func decodeOrderInto(b []byte, o *Order, t *text) error {
	if err := unmarshalOrder(b, o, t); err != nil {
		return &runtime.ErrBadRecord{Schema: "order", Input: b, Reason: err.Error()}
	}
	switch {
	case o.OrderID == "":
		return &runtime.ErrBadRecord{Schema: "order", Input: b, Reason: "order_id missing"}
	case o.Customer == "":
		if p, err := DecodePayment(b); err == nil && p.PaymentID != "" {
			return &runtime.ErrBadRecord{Schema: "order", Input: b, Reason: "it is a payment", OtherSchema: "payment"}
		}
		return &runtime.ErrBadRecord{Schema: "order", Input: b, Reason: "customer missing"}
	case o.AmountCents <= 0:
		return &runtime.ErrBadRecord{Schema: "order", Input: b, Reason: "amount_cents must be positive"}
	}
	return nil
}

// DecodePayment parses and validates a payment.
func DecodePayment(b []byte) (*Payment, error) {
	p := &Payment{}
	if err := decodePaymentInto(b, p, nil); err != nil {
		return nil, err
	}
	return p, nil
}

// decodePaymentInto is DecodePayment into a zero p, its strings from t.
func decodePaymentInto(b []byte, p *Payment, t *text) error {
	if err := unmarshalPayment(b, p, t); err != nil {
		return &runtime.ErrBadRecord{Schema: "payment", Input: b, Reason: err.Error()}
	}
	switch {
	case p.OrderID == "":
		return &runtime.ErrBadRecord{Schema: "payment", Input: b, Reason: "order_id missing"}
	case p.AmountCents <= 0:
		return &runtime.ErrBadRecord{Schema: "payment", Input: b, Reason: "amount_cents must be positive"}
	case p.PaymentID == "":
		o := &Order{}
		if unmarshalOrder(b, o, nil) == nil && o.Customer != "" {
			return &runtime.ErrBadRecord{Schema: "payment", Input: b, Reason: "it is an order", OtherSchema: "order"}
		}
		return &runtime.ErrBadRecord{Schema: "payment", Input: b, Reason: "payment_id missing"}
	}
	return nil
}
