package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// The inputs are flat JSON objects of strings and whole numbers. Decoding
// them is the largest cost of the job, so parse scans them by hand; any input
// the scanner is not sure about (escapes, floats, nesting, odd spacing) goes
// to encoding/json, which then decides, so both paths accept and reject the
// same records.

var errNotFlat = errors.New("not a flat object")

// scanFlat calls f for each member of a flat JSON object whose values are
// strings without escapes or integers. It returns errNotFlat for anything
// else, which the caller hands to encoding/json.
func scanFlat(b []byte, f func(key, str []byte, num int64, isNum bool)) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errNotFlat
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		if skipSpace(b, i+1) != len(b) {
			return errNotFlat
		}
		return nil
	}
	for {
		key, j, ok := scanString(b, i)
		if !ok {
			return errNotFlat
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return errNotFlat
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return errNotFlat
		}
		if b[i] == '"' {
			s, j, ok := scanString(b, i)
			if !ok {
				return errNotFlat
			}
			f(key, s, 0, false)
			i = j
		} else {
			j := i
			if j < len(b) && b[j] == '-' {
				j++
			}
			start := j
			for j < len(b) && b[j] >= '0' && b[j] <= '9' {
				j++
			}
			if j == start || (b[start] == '0' && j-start > 1) || j-start > 18 {
				return errNotFlat
			}
			if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
				return errNotFlat
			}
			n, err := strconv.ParseInt(string(b[i:j]), 10, 64)
			if err != nil {
				return errNotFlat
			}
			f(key, nil, n, true)
			i = j
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return errNotFlat
		}
		if b[i] == '}' {
			if skipSpace(b, i+1) != len(b) {
				return errNotFlat
			}
			return nil
		}
		if b[i] != ',' {
			return errNotFlat
		}
		i = skipSpace(b, i+1)
	}
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
	end := bytes.IndexByte(b[i+1:], '"')
	if end < 0 {
		return nil, i, false
	}
	s = b[i+1 : i+1+end]
	for _, c := range s {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return nil, i, false
		}
	}
	return s, i + 2 + end, true
}

// decodeOrderFast fills o from b, or reports errNotFlat or a type error.
func decodeOrderFast(b []byte, o *Order) error {
	var bad bool
	err := scanFlat(b, func(key, str []byte, num int64, isNum bool) {
		switch string(key) {
		case "order_id":
			bad = bad || isNum
			o.OrderID = string(str)
		case "customer":
			bad = bad || isNum
			o.Customer = string(str)
		case "amount_cents":
			bad = bad || !isNum
			o.AmountCents = num
		default:
			// encoding/json matches keys regardless of case.
			bad = bad || foldsTo(key, "order_id", "customer", "amount_cents")
		}
	})
	if err == nil && bad {
		return errNotFlat // wrong types: let encoding/json word the error
	}
	return err
}

func decodePaymentFast(b []byte, p *Payment) error {
	var bad bool
	err := scanFlat(b, func(key, str []byte, num int64, isNum bool) {
		switch string(key) {
		case "order_id":
			bad = bad || isNum
			p.OrderID = string(str)
		case "payment_id":
			bad = bad || isNum
			p.PaymentID = string(str)
		case "amount_cents":
			bad = bad || !isNum
			p.AmountCents = num
		default:
			bad = bad || foldsTo(key, "order_id", "payment_id", "amount_cents")
		}
	})
	if err == nil && bad {
		return errNotFlat
	}
	return err
}

func unmarshalOrder(b []byte, o *Order) error {
	if err := decodeOrderFast(b, o); err == nil {
		return nil
	}
	*o = Order{}
	return json.Unmarshal(b, o)
}

func unmarshalPayment(b []byte, p *Payment) error {
	if err := decodePaymentFast(b, p); err == nil {
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
	var bad bool
	err := scanFlat(b, func(key, str []byte, _ int64, isNum bool) {
		switch {
		case string(key) == "order_id":
			bad = bad || isNum
			id = str // the last one wins, as in encoding/json
		case foldsTo(key, "order_id"):
			bad = true // encoding/json matches keys regardless of case
		}
	})
	if err == nil && !bad {
		return id, true
	}
	var r struct {
		OrderID string `json:"order_id"`
	}
	if json.Unmarshal(b, &r) != nil {
		return nil, false
	}
	return []byte(r.OrderID), true
}
