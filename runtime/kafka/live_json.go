package kafka

import (
	"bytes"
	"encoding/json"
	"errors"
)

// The live verifier reads one field, order_id, out of every input and
// output record, at up to tens of thousands of records a second. The
// records are flat JSON objects, so orderIDOf scans them by hand; anything
// the scanner is not sure about (escapes, non-ASCII, floats, literals,
// nesting, a key that differs from "order_id" only in case) goes to
// encoding/json, which then decides, so that the live verdict and the
// final oracle (runtime.Verify, which uses encoding/json) read every record
// alike.

// errNotFlatID says the scanner leaves a record to encoding/json.
var errNotFlatID = errors.New("not a flat object")

var orderIDKey = []byte("order_id")

// orderIDOf returns the order_id of a record as runtime.Verify reads it:
// ok is false when encoding/json cannot decode b into
// struct{ OrderID string `json:"order_id"` }; id is empty when the object
// has no order_id. id may point into b.
func orderIDOf(b []byte) (id []byte, ok bool) {
	id, err := scanOrderID(b)
	if err == nil {
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

// scanOrderID reads order_id out of a flat JSON object whose values are
// escape-free ASCII strings or integers, or returns errNotFlatID.
func scanOrderID(b []byte) ([]byte, error) {
	var id []byte
	i := idSkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errNotFlatID
	}
	i = idSkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		if idSkipSpace(b, i+1) != len(b) {
			return nil, errNotFlatID
		}
		return nil, nil
	}
	for {
		key, j, ok := idScanString(b, i)
		if !ok {
			return nil, errNotFlatID
		}
		isID := string(key) == "order_id"
		if !isID && bytes.EqualFold(key, orderIDKey) {
			return nil, errNotFlatID // encoding/json matches keys regardless of case
		}
		i = idSkipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return nil, errNotFlatID
		}
		i = idSkipSpace(b, i+1)
		if i >= len(b) {
			return nil, errNotFlatID
		}
		if b[i] == '"' {
			s, j, ok := idScanString(b, i)
			if !ok {
				return nil, errNotFlatID
			}
			if isID {
				id = s // the last one wins, as in encoding/json
			}
			i = j
		} else {
			if isID {
				return nil, errNotFlatID // a number or null: encoding/json decides
			}
			j := i
			if b[j] == '-' {
				j++
			}
			start := j
			for j < len(b) && b[j] >= '0' && b[j] <= '9' {
				j++
			}
			if j == start || (b[start] == '0' && j-start > 1) {
				return nil, errNotFlatID
			}
			if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
				return nil, errNotFlatID
			}
			i = j
		}
		i = idSkipSpace(b, i)
		if i >= len(b) {
			return nil, errNotFlatID
		}
		switch b[i] {
		case '}':
			if idSkipSpace(b, i+1) != len(b) {
				return nil, errNotFlatID
			}
			return id, nil
		case ',':
			i = idSkipSpace(b, i+1)
		default:
			return nil, errNotFlatID
		}
	}
}

func idSkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// idScanString reads a string without escapes, control characters or
// non-ASCII bytes starting at b[i] == '"'.
func idScanString(b []byte, i int) (s []byte, next int, ok bool) {
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
