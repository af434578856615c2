package orders

import (
	"encoding/json"
	"unsafe"

	"github.com/faultline-dev/faultline/runtime/flatjson"
)

// twoStrings returns a and b as strings sharing one allocation (the
// compiler does not copy the operands of a concatenation first).
func twoStrings(a, b []byte) (string, string) {
	s := string(a) + string(b)
	return s[:len(a)], s[len(a):]
}

// text hands out strings copied into blocks, one allocation per block
// instead of one per record, for a goroutine that decodes many short
// strings (a parse subtask). A string keeps its whole block alive, so the
// blocks are small. A nil *text allocates each pair on its own.
type text struct{ free []byte }

const (
	textBlock = 4 << 10
	textMax   = textBlock / 16 // longer pairs get their own allocation
)

// two returns a and b as strings; nothing changes their bytes later.
func (t *text) two(a, b []byte) (string, string) {
	n := len(a) + len(b)
	if t == nil || n > textMax || n == 0 {
		return twoStrings(a, b)
	}
	if len(t.free) < n {
		t.free = make([]byte, textBlock)
	}
	copy(t.free[copy(t.free, a):], b)
	x := unsafe.String(unsafe.SliceData(t.free), len(a))
	y := unsafe.String(unsafe.SliceData(t.free[len(a):]), len(b))
	t.free = t.free[n:]
	return x, y
}

// orderLayout and paymentLayout are the generator's records, which the
// parse operators read in one pass.
var (
	orderLayout   = flatjson.NewLayout("order_id", "customer", "amount_cents")
	paymentLayout = flatjson.NewLayout("order_id", "payment_id", "amount_cents")
)

// decodeOrderFast fills o from b, or reports flatjson.ErrNotFlat or a type error.
func decodeOrderFast(b []byte, o *Order, t *text) error {
	id, customer, amount, err := orderLayout.Read(b)
	if err != nil {
		return err
	}
	o.OrderID, o.Customer = t.two(id, customer)
	o.AmountCents = amount
	return nil
}

func decodePaymentFast(b []byte, p *Payment, t *text) error {
	id, payment, amount, err := paymentLayout.Read(b)
	if err != nil {
		return err
	}
	p.OrderID, p.PaymentID = t.two(id, payment)
	p.AmountCents = amount
	return nil
}

func unmarshalOrder(b []byte, o *Order, t *text) error {
	if err := decodeOrderFast(b, o, t); err == nil {
		return nil
	}
	*o = Order{}
	return json.Unmarshal(b, o)
}

func unmarshalPayment(b []byte, p *Payment, t *text) error {
	if err := decodePaymentFast(b, p, t); err == nil {
		return nil
	}
	*p = Payment{}
	return json.Unmarshal(b, p)
}
