// Package verify is the exactly-once oracle. Verify reads a job's input on
// its own (through an InputReader: the generator, or Kafka read directly)
// and judges the job's committed output against it, independently of the
// job's operators: expected, duplicates, lost, unexpected. Its bookkeeping
// is a Ledger of the order ids met in the input and in the output, one byte
// per id. It imports nothing of the engine: the final verification
// (runtime/kafka), the live verifier (runtime/kafka/live) and the broker's
// retention (runtime/kafka/broker) feed it records they read from Kafka on
// their own.
//
// A Ledger can be saved and loaded, with the positions up to which it has
// seen each topic, so that a run can let the embedded broker delete what the
// ledger has accounted for and a later run (--resume) goes on from it: the
// verdict then covers everything from the first run, as if the deleted
// records were still there.
package verify

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/faultline-dev/faultline/runtime/flatjson"
)

// Bits of an id's byte.
const (
	hasFirst   byte = 1 << 0 // an order of the id is in the input read
	hasSecond  byte = 1 << 1 // a payment of the id is in the input read
	farApart   byte = 1 << 2 // its order and payment are more than the TTL apart: not joined
	countShift      = 3      // bits 3-4: how often the committed output holds it, up to 3
	countMask  byte = 3 << countShift
	lenient    byte = 1 << 5 // a copy in the output was written in an at-least-once period
)

// ttlSlack is the join's (runtime's ttlSlack): a side waits for its partner
// the TTL plus at least this long.
const ttlSlack = 5 * time.Second

// Ledger is what the oracle knows of a job's input and committed output. The
// zero value is not usable; see New.
type Ledger struct {
	kind   string         // the job spec's verify kind, for messages
	inputs []string       // the relation's input topics (Expect.Inputs)
	joined bool           // Expect.Joined
	ttl    int64          // ms; 0: every paid order is expected
	id     flatjson.Field // the field records are counted by (Expect.ID)

	dense      Dense[byte]      // generator ids ("o-000123") by number
	other      map[string]byte  // any other id
	first      map[string]int64 // event time of an id's side read first, until the other (TTL only): ids not dense
	firstDense Times            // the same for generator ids

	committed int // output records
	badInput  int // input records without an order id
	badOutput int // output records that are not JSON

	// Lenient are the at-least-once periods of the runs: an output copy
	// written in one makes its id's duplicates lenient (nil: none).
	Lenient *Periods

	// Positions are, per Kafka topic and partition, the offset up to which
	// the ledger has accounted for the topic (the next offset to read).
	// The ledger does not move them: whoever feeds it says how far.
	Positions map[string]map[int32]int64
}

// New returns an empty ledger for what e expects. An id field that cannot
// be read is an error (spec.Parse lets none through).
func New(e Expect) (*Ledger, error) {
	id, err := flatjson.NewField(e.ID)
	if err != nil {
		return nil, fmt.Errorf("verify by id: %w", err)
	}
	return &Ledger{kind: e.Kind, inputs: slices.Clone(e.Inputs), joined: e.Joined, ttl: e.StateTTL.Milliseconds(), id: id, other: map[string]byte{}, first: map[string]int64{},
		Positions: map[string]map[int32]int64{}}, nil
}

// Expect is what the ledger was made for.
func (l *Ledger) Expect() Expect {
	return Expect{Kind: l.kind, Inputs: slices.Clone(l.inputs), Joined: l.joined, StateTTL: time.Duration(l.ttl) * time.Millisecond, ID: l.id.Name()}
}

// IDOf reads the id the ledger counts records by from a record's value
// (see flatjson.Field.Of).
func (l *Ledger) IDOf(b []byte) ([]byte, bool) { return l.id.Of(b) }

// Kind is the verify kind the ledger was made for.
func (l *Ledger) Kind() string { return l.kind }

// Inputs are the input topics of its relation, the expected records' first.
func (l *Ledger) Inputs() []string { return l.inputs }

// second reports whether topic is the relation's second input, whose
// records are the partners the first's wait for.
func (l *Ledger) second(topic string) bool {
	return l.joined && len(l.inputs) > 1 && topic == l.inputs[1]
}

// DenseID maps the generator's order ids ("o-" and at least six digits, as
// fmt's %06d writes them) to their number; any other string is not dense.
// The mapping is one to one, so the id's string is never needed again.
func DenseID(id []byte) (uint32, bool) {
	if len(id) < 8 || len(id) > 12 || id[0] != 'o' || id[1] != '-' {
		return 0, false
	}
	d := id[2:]
	if len(d) > 6 && d[0] == '0' {
		return 0, false
	}
	var n uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n >= 1<<32 {
		return 0, false
	}
	return uint32(n), true
}

// load returns id's byte and, for a generator id, where it lives (nil for
// any other id, whose byte store puts into the map).
func (l *Ledger) load(id []byte) (byte, *byte) {
	if n, ok := DenseID(id); ok {
		p := l.dense.Ptr(n)
		return *p, p
	}
	return l.other[string(id)], nil
}

func (l *Ledger) store(id []byte, p *byte, b byte) {
	if p != nil {
		*p = b
		return
	}
	l.other[string(id)] = b
}

// Input accounts for an input record of generator topic (TopicOrders or
// TopicPayments) whose order id is id, with its event time eventTime (Unix
// ms, 0: not known). An empty id is bad input: a record that is no order
// or payment at all, for which nothing is expected. Reading the same
// record twice changes nothing.
func (l *Ledger) Input(topic string, id []byte, eventTime int64) {
	if len(id) == 0 {
		l.badInput++
		return
	}
	bit, other := hasFirst, hasSecond
	if l.second(topic) {
		bit, other = hasSecond, hasFirst
	}
	b, p := l.load(id)
	if b&bit != 0 {
		return
	}
	b |= bit
	if l.ttl > 0 && l.joined {
		b |= l.timed(id, topic, b&other != 0, eventTime)
	}
	l.store(id, p, b)
}

// timed keeps the event time of an id's first side until its second comes,
// and says (farApart) when the second is more than the TTL from the first.
// A first side dropped by prune can only have a partner too far from it;
// times not known (0) always join, as in the job.
func (l *Ledger) timed(id []byte, topic string, second bool, t int64) byte {
	n, dense := DenseID(id)
	if !second {
		if dense {
			l.firstDense.Put(n, t)
		} else {
			l.first[string(id)] = t
		}
		return 0
	}
	var first int64
	var kept bool
	if dense {
		first, kept = l.firstDense.Take(n)
	} else {
		first, kept = l.first[string(id)]
		delete(l.first, string(id))
	}
	if t != 0 && (!kept || first != 0 && max(first-t, t-first) > l.ttl) {
		return farApart
	}
	return 0
}

// PruneAt drops the event times of first sides whose partner could only
// come too far apart from them, as the join drops the sides themselves:
// older than watermark now (Unix ms; 0: none, nothing is dropped) minus
// the TTL minus max(TTL, 5 s). The watermark is the least, over every
// input partition, of the newest event time read of it: a partner may
// still come from one that lags. Callers prune now and then (the final
// verification as it reads; the retention after each round).
func (l *Ledger) PruneAt(now int64) {
	if l.ttl == 0 || now == 0 || len(l.inputs) < 2 {
		return
	}
	before := now - l.ttl - max(l.ttl, ttlSlack.Milliseconds())
	for id, t := range l.first {
		if t != 0 && t < before {
			delete(l.first, id)
		}
	}
	l.firstDense.DropIf(func(t int64) bool { return t != 0 && t < before })
}

// Compact packs what the ledger holds of the ids it has not met since the
// previous Compact (see Dense): whoever feeds it for long (the broker's
// retention, round after round) calls it now and then, so that what it
// holds stays about a bit or two an id.
func (l *Ledger) Compact() { l.dense.Compact() }

// Output accounts for a committed output record whose order id is id,
// written at Unix millisecond at (0: not known); ok false means the record
// is not JSON, which the caller reports.
func (l *Ledger) Output(id []byte, ok bool, at int64) {
	l.committed++
	if !ok {
		l.badOutput++
		return
	}
	b, p := l.load(id)
	if b&countMask != countMask {
		b += 1 << countShift
	}
	if l.Lenient.Holds(at) {
		b |= lenient
	}
	l.store(id, p, b)
}

// Result is the oracle's verdict over everything the ledger accounted for.
type Result struct {
	Expected   int // orders expected in the output (paid ones, for paid-orders)
	Committed  int // output records
	Duplicates int // ids the output holds more than once
	// DuplicatesAtLeastOnce are those of Duplicates with a copy written in
	// an at-least-once period: the price of not aligning, not a fault.
	DuplicatesAtLeastOnce int
	Lost                  int // expected ids the output does not hold
	Unexpected            int // ids the output holds that are not expected
	BadInput              int // input records that are no order or payment
	BadOutput             int // output records that are not JSON
	NotJoined             int // paid orders whose order and payment are more than the TTL apart
}

// expected reports whether the output must hold an id with byte b.
func (l *Ledger) expected(b byte) bool {
	if l.joined {
		return b&hasFirst != 0 && b&hasSecond != 0 && b&farApart == 0
	}
	return b&hasFirst != 0
}

// EachUnexpected calls f with every id the committed output holds that the
// input read so far does not expect.
func (l *Ledger) EachUnexpected(f func(id string)) {
	l.Each(func(id string, order, payment, far bool, seen int, _ bool) {
		var b byte
		if order {
			b |= hasFirst
		}
		if payment {
			b |= hasSecond
		}
		if far {
			b |= farApart
		}
		if seen > 0 && !l.expected(b) {
			f(id)
		}
	})
}

// Result returns the verdict; it walks every id once.
func (l *Ledger) Result() Result {
	r := Result{Committed: l.committed, BadInput: l.badInput, BadOutput: l.badOutput}
	judge := func(b byte) {
		if b == 0 {
			return
		}
		expected := b&hasFirst != 0
		if l.joined {
			paid := expected && b&hasSecond != 0
			if paid && b&farApart != 0 {
				r.NotJoined++
			}
			expected = paid && b&farApart == 0
		}
		n := (b & countMask) >> countShift
		switch {
		case expected && n == 0:
			r.Lost++
		case !expected && n > 0:
			r.Unexpected++
		}
		if expected {
			r.Expected++
		}
		if n > 1 {
			r.Duplicates++
			if b&lenient != 0 {
				r.DuplicatesAtLeastOnce++
			}
		}
	}
	l.dense.Each(func(_ uint32, b byte) { judge(b) })
	for _, b := range l.other {
		judge(b)
	}
	return r
}

// Missing reports whether the output must hold id and holds none of it:
// what Result counts as lost.
func (l *Ledger) Missing(id []byte) bool {
	var b byte
	if n, ok := DenseID(id); ok {
		b = l.dense.Get(n)
	} else {
		b = l.other[string(id)]
	}
	return l.expected(b) && (b&countMask)>>countShift == 0
}

// Committed is how many output records the ledger accounted for.
func (l *Ledger) Committed() int { return l.committed }

// Each calls f for every id the ledger holds: whether its order and its
// payment were read, whether they are too far apart to join, and how often
// the committed output holds it (3 means 3 or more), and whether a copy of
// it was written in an at-least-once period.
func (l *Ledger) Each(f func(id string, order, payment, far bool, seen int, lenientCopy bool)) {
	call := func(id string, b byte) {
		f(id, b&hasFirst != 0, b&hasSecond != 0, b&farApart != 0, int((b&countMask)>>countShift), b&lenient != 0)
	}
	l.dense.Each(func(n uint32, b byte) { call(fmt.Sprintf("o-%06d", n), b) })
	for id, b := range l.other {
		if b != 0 {
			call(id, b)
		}
	}
}

// FirstSides calls f for every id whose side read first still waits for
// the other in the ledger (state TTL only), with that side's event time.
func (l *Ledger) FirstSides(f func(id string, eventTime int64)) {
	for id, t := range l.first {
		f(id, t)
	}
	l.firstDense.Each(func(n uint32, t int64) { f(fmt.Sprintf("o-%06d", n), t) })
}

// Position is where the ledger has accounted for partition p of Kafka
// topic up to, and whether it knows.
func (l *Ledger) Position(topic string, p int32) (int64, bool) {
	o, ok := l.Positions[topic][p]
	return o, ok
}

// SetPosition records that the ledger has accounted for partition p of
// Kafka topic up to offset o.
func (l *Ledger) SetPosition(topic string, p int32, o int64) {
	if l.Positions[topic] == nil {
		l.Positions[topic] = map[int32]int64{}
	}
	l.Positions[topic][p] = o
}

func (r Result) String() string {
	return "expected " + strconv.Itoa(r.Expected) + ", committed " + strconv.Itoa(r.Committed) +
		", duplicates " + strconv.Itoa(r.Duplicates) + ", lost " + strconv.Itoa(r.Lost) +
		", unexpected " + strconv.Itoa(r.Unexpected)
}
