package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"unsafe"
)

// The inputs are flat JSON objects of strings and whole numbers. Decoding
// them is the largest cost of the job, so parse scans them by hand; any input
// the scanner is not sure about (escapes, floats, nesting, odd spacing) goes
// to encoding/json, which then decides, so both paths accept and reject the
// same records.

var errNotFlat = errors.New("not a flat object")

// flatScanner reads the members of a flat JSON object whose values are
// strings without escapes or integers, one at a time. It reports errNotFlat
// for anything else, which the caller hands to encoding/json.
type flatScanner struct {
	b     []byte
	i     int
	first bool
}

func newFlatScanner(b []byte) (flatScanner, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return flatScanner{}, errNotFlat
	}
	return flatScanner{b: b, i: skipSpace(b, i+1), first: true}, nil
}

// next returns the next member: its key and either its string (a subslice
// of the input) or its number. done is true, with no member, at the end of
// the object.
func (s *flatScanner) next() (key, str []byte, num int64, isNum, done bool, err error) {
	b, i := s.b, s.i
	if s.first {
		s.first = false
		if i < len(b) && b[i] == '}' {
			return s.end(i)
		}
	} else {
		i = skipSpace(b, i)
		if i >= len(b) {
			return nil, nil, 0, false, false, errNotFlat
		}
		if b[i] == '}' {
			return s.end(i)
		}
		if b[i] != ',' {
			return nil, nil, 0, false, false, errNotFlat
		}
		i = skipSpace(b, i+1)
	}
	key, i, ok := scanString(b, i)
	if !ok {
		return nil, nil, 0, false, false, errNotFlat
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return nil, nil, 0, false, false, errNotFlat
	}
	i = skipSpace(b, i+1)
	if i >= len(b) {
		return nil, nil, 0, false, false, errNotFlat
	}
	if b[i] == '"' {
		str, s.i, ok = scanString(b, i)
		if !ok {
			return nil, nil, 0, false, false, errNotFlat
		}
		return key, str, 0, false, false, nil
	}
	j := i
	neg := b[j] == '-'
	if neg {
		j++
	}
	start := j
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		num = num*10 + int64(b[j]-'0') // at most 18 digits: no overflow
		j++
	}
	if j == start || (b[start] == '0' && j-start > 1) || j-start > 18 {
		return nil, nil, 0, false, false, errNotFlat
	}
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return nil, nil, 0, false, false, errNotFlat
	}
	if neg {
		num = -num
	}
	s.i = j
	return key, nil, num, true, false, nil
}

// end checks that only space follows the closing brace at b[i].
func (s *flatScanner) end(i int) (key, str []byte, num int64, isNum, done bool, err error) {
	if skipSpace(s.b, i+1) != len(s.b) {
		return nil, nil, 0, false, false, errNotFlat
	}
	return nil, nil, 0, false, true, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString reads a string without escapes or control characters starting
// at b[i] == '"'.
func scanString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, i, false
		}
	}
	return nil, i, false
}

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

// layout is a record of the string members first and second and the number
// amount_cents (an input of the default job), with the exact text the
// generator writes around its values: {"first":"…","second":"…",
// "amount_cents":…}.
type layout struct {
	first, second     string
	open, mid, amount string
}

func newLayout(first, second string) layout {
	return layout{first: first, second: second,
		open: `{"` + first + `":"`, mid: `","` + second + `":"`, amount: `","amount_cents":`}
}

// scanRecord reads b as l: in one pass when it has the generator's text
// (scanLayout), member by member otherwise (scanTwoStringsAndAmount, which
// reports errNotFlat or a type error).
func scanRecord(b []byte, l layout) (x, y []byte, amount int64, err error) {
	if x, y, amount, ok := scanLayout(b, l); ok {
		return x, y, amount, nil
	}
	return scanTwoStringsAndAmount(b, l.first, l.second)
}

var (
	orderLayout   = newLayout("order_id", "customer")
	paymentLayout = newLayout("order_id", "payment_id")
)

// scanLayout reads b when it is exactly l with plain strings and a whole
// number, which is every record the generator writes: one pass and three
// comparisons instead of the scanner's member by member walk. ok is false
// for anything else, which then goes to the scanner; where both read a
// record, they read the same.
func scanLayout(b []byte, l layout) (x, y []byte, amount int64, ok bool) {
	if len(b) < len(l.open) || string(b[:len(l.open)]) != l.open {
		return nil, nil, 0, false
	}
	i := len(l.open)
	if x, i, ok = plainUntilQuote(b, i); !ok {
		return nil, nil, 0, false
	}
	// b[i] is x's closing quote, the first byte of l.mid.
	if len(b)-i < len(l.mid) || string(b[i:i+len(l.mid)]) != l.mid {
		return nil, nil, 0, false
	}
	if y, i, ok = plainUntilQuote(b, i+len(l.mid)); !ok {
		return nil, nil, 0, false
	}
	if len(b)-i < len(l.amount) || string(b[i:i+len(l.amount)]) != l.amount {
		return nil, nil, 0, false
	}
	i += len(l.amount)
	// The number, then the closing brace as the last byte.
	if len(b)-i < 2 || b[len(b)-1] != '}' {
		return nil, nil, 0, false
	}
	digits := b[i : len(b)-1]
	neg := digits[0] == '-'
	if neg {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return nil, nil, 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return nil, nil, 0, false
		}
		amount = amount*10 + int64(c-'0')
	}
	if neg {
		amount = -amount
	}
	return x, y, amount, true
}

// plainUntilQuote returns the string from b[i] up to the next quote, and
// the quote's index, if it has no escapes, control characters or non-ASCII
// bytes (as scanString).
func plainUntilQuote(b []byte, i int) ([]byte, int, bool) {
	for j := i; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i:j], j, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, j, false
		}
	}
	return nil, len(b), false
}

// scanTwoStringsAndAmount reads a flat object of the string members
// first and second and the number amount_cents (the inputs of the default
// job), or reports errNotFlat or a type error.
func scanTwoStringsAndAmount(b []byte, first, second string) (x, y []byte, amount int64, err error) {
	s, err := newFlatScanner(b)
	if err != nil {
		return nil, nil, 0, err
	}
	bad := false
	for {
		key, str, num, isNum, done, err := s.next()
		if err != nil {
			return nil, nil, 0, err
		}
		if done {
			break
		}
		switch string(key) {
		case first:
			bad = bad || isNum
			x = str
		case second:
			bad = bad || isNum
			y = str
		case "amount_cents":
			bad = bad || !isNum
			amount = num
		default:
			// encoding/json matches keys regardless of case.
			bad = bad || foldsTo(key, first, second, "amount_cents")
		}
	}
	if bad {
		return nil, nil, 0, errNotFlat // wrong types: let encoding/json word the error
	}
	return x, y, amount, nil
}

// decodeOrderFast fills o from b, or reports errNotFlat or a type error.
func decodeOrderFast(b []byte, o *Order, t *text) error {
	id, customer, amount, err := scanRecord(b, orderLayout)
	if err != nil {
		return err
	}
	o.OrderID, o.Customer = t.two(id, customer)
	o.AmountCents = amount
	return nil
}

func decodePaymentFast(b []byte, p *Payment, t *text) error {
	id, payment, amount, err := scanRecord(b, paymentLayout)
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

func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// OrderIDOf returns the order_id of a flat JSON record (an input or output
// record of the default job) as encoding/json reads it into
// struct{ OrderID string `json:"order_id"` }: ok is false when encoding/json
// cannot decode b at all, id is empty when the object has no order_id. id
// may point into b. The live verifier calls it for every record it reads.
func OrderIDOf(b []byte) (id []byte, ok bool) {
	if s, err := newFlatScanner(b); err == nil {
		bad := false
		for {
			key, str, _, isNum, done, err := s.next()
			if err != nil || done {
				bad = bad || err != nil
				break
			}
			switch {
			case string(key) == "order_id":
				bad = bad || isNum
				id = str // the last one wins, as in encoding/json
			case foldsTo(key, "order_id"):
				bad = true // encoding/json matches keys regardless of case
			}
		}
		if !bad {
			return id, true
		}
	}
	var r struct {
		OrderID string `json:"order_id"`
	}
	if json.Unmarshal(b, &r) != nil {
		return nil, false
	}
	return []byte(r.OrderID), true
}
