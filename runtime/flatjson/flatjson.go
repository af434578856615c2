// Package flatjson reads flat JSON objects of strings and whole numbers (the
// records of the default job) by hand. Decoding them is the largest cost of
// the job, so the parse operators scan them here; any input the scanner is
// not sure about (escapes, floats, nesting, odd spacing) is reported as
// ErrNotFlat and goes to encoding/json, which then decides, so both paths
// accept and reject the same records. It imports nothing of the engine: the
// job's operators and the verification oracle both read records through it.
package flatjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode"
)

// ErrNotFlat is what the scanner reports for anything it does not read itself.
var ErrNotFlat = errors.New("not a flat object")

// Scanner reads the members of a flat JSON object whose values are
// strings without escapes or integers, one at a time. It reports ErrNotFlat
// for anything else, which the caller hands to encoding/json.
type Scanner struct {
	b     []byte
	i     int
	first bool
}

func NewScanner(b []byte) (Scanner, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return Scanner{}, ErrNotFlat
	}
	return Scanner{b: b, i: skipSpace(b, i+1), first: true}, nil
}

// Next returns the next member: its key and either its string (a subslice
// of the input) or its number. done is true, with no member, at the end of
// the object.
func (s *Scanner) Next() (key, str []byte, num int64, isNum, done bool, err error) {
	b, i := s.b, s.i
	if s.first {
		s.first = false
		if i < len(b) && b[i] == '}' {
			return s.end(i)
		}
	} else {
		i = skipSpace(b, i)
		if i >= len(b) {
			return nil, nil, 0, false, false, ErrNotFlat
		}
		if b[i] == '}' {
			return s.end(i)
		}
		if b[i] != ',' {
			return nil, nil, 0, false, false, ErrNotFlat
		}
		i = skipSpace(b, i+1)
	}
	key, i, ok := scanString(b, i)
	if !ok {
		return nil, nil, 0, false, false, ErrNotFlat
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return nil, nil, 0, false, false, ErrNotFlat
	}
	i = skipSpace(b, i+1)
	if i >= len(b) {
		return nil, nil, 0, false, false, ErrNotFlat
	}
	if b[i] == '"' {
		str, s.i, ok = scanString(b, i)
		if !ok {
			return nil, nil, 0, false, false, ErrNotFlat
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
		return nil, nil, 0, false, false, ErrNotFlat
	}
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return nil, nil, 0, false, false, ErrNotFlat
	}
	if neg {
		num = -num
	}
	s.i = j
	return key, nil, num, true, false, nil
}

// end checks that only space follows the closing brace at b[i].
func (s *Scanner) end(i int) (key, str []byte, num int64, isNum, done bool, err error) {
	if skipSpace(s.b, i+1) != len(s.b) {
		return nil, nil, 0, false, false, ErrNotFlat
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

// Layout is a record of two string members and a whole number (an input
// record of the orders job), with the exact text a generator writes around
// its values: {"first":"…","second":"…","number":…}.
type Layout struct {
	First, Second, Number string
	open, mid, amount     string
}

// NewLayout is the record of string members first and second and the
// whole number member number.
func NewLayout(first, second, number string) Layout {
	return Layout{First: first, Second: second, Number: number,
		open: `{"` + first + `":"`, mid: `","` + second + `":"`, amount: `","` + number + `":`}
}

// Read reads b as l: in one pass when it has the generator's text
// (ReadFast), member by member otherwise (scanTwoStringsAndAmount, which
// reports ErrNotFlat or a type error).
func (l Layout) Read(b []byte) (x, y []byte, amount int64, err error) {
	if x, y, amount, ok := l.ReadFast(b); ok {
		return x, y, amount, nil
	}
	return scanTwoStringsAndNumber(b, l.First, l.Second, l.Number)
}

// ReadFast reads b when it is exactly l with plain strings and a whole
// number, which is every record the generator writes: one pass and three
// comparisons instead of the scanner's member by member walk. ok is false
// for anything else, which then goes to the scanner; where both read a
// record, they read the same.
func (l Layout) ReadFast(b []byte) (x, y []byte, amount int64, ok bool) {
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

// scanTwoStringsAndNumber reads a flat object of the string members
// first and second and the whole number member number, or reports
// ErrNotFlat or a type error.
func scanTwoStringsAndNumber(b []byte, first, second, number string) (x, y []byte, amount int64, err error) {
	s, err := NewScanner(b)
	if err != nil {
		return nil, nil, 0, err
	}
	bad := false
	for {
		key, str, num, isNum, done, err := s.Next()
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
		case number:
			bad = bad || !isNum
			amount = num
		default:
			// encoding/json matches keys regardless of case.
			bad = bad || foldsTo(key, first, second, number)
		}
	}
	if bad {
		return nil, nil, 0, ErrNotFlat // wrong types: let encoding/json word the error
	}
	return x, y, amount, nil
}

func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// Field reads one string member of flat JSON records, by name: the field
// that identifies a record end to end (the job spec's id), which the live
// verifier, the oracle and the sink's skip set read from every record. It
// reads as encoding/json reads the record into a struct with one string
// field tagged with the name.
type Field struct {
	name string
	typ  reflect.Type // struct{ V string `json:"<name>"` }, for encoding/json
}

// ErrFieldName means a field name cannot be read as a JSON member name.
var ErrFieldName = errors.New("not a field name")

// NewField returns the reader of field name: letters, digits, '_', '-' and
// '.' only, as a JSON struct tag can name it.
func NewField(name string) (Field, error) {
	if name == "" || strings.ContainsFunc(name, func(r rune) bool {
		return !(r == '_' || r == '-' || r == '.' || r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)))
	}) {
		return Field{}, fmt.Errorf("%w: %q", ErrFieldName, name)
	}
	typ := reflect.StructOf([]reflect.StructField{{
		Name: "V", Type: reflect.TypeFor[string](), Tag: reflect.StructTag(`json:"` + name + `"`),
	}})
	return Field{name: name, typ: typ}, nil
}

// MustField is NewField for a name known to be valid.
func MustField(name string) Field {
	f, err := NewField(name)
	if err != nil {
		panic(err)
	}
	return f
}

// Name is the field's name.
func (f Field) Name() string { return f.name }

// Of returns field f of a flat JSON record: ok is false when encoding/json
// cannot decode b at all, the value is empty when the object has no such
// member. The value may point into b.
func (f Field) Of(b []byte) (v []byte, ok bool) {
	if f.typ == nil {
		return nil, false // the zero Field names nothing
	}
	if s, err := NewScanner(b); err == nil {
		bad := false
		for {
			key, str, _, isNum, done, err := s.Next()
			if err != nil || done {
				bad = bad || err != nil
				break
			}
			switch {
			case string(key) == f.name:
				bad = bad || isNum
				v = str // the last one wins, as in encoding/json
			case foldsTo(key, f.name):
				bad = true // encoding/json matches keys regardless of case
			}
		}
		if !bad {
			return v, true
		}
	}
	r := reflect.New(f.typ)
	if json.Unmarshal(b, r.Interface()) != nil {
		return nil, false
	}
	return []byte(r.Elem().Field(0).String()), true
}
