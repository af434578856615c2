package live

import (
	"fmt"
	"maps"
	"time"

	"github.com/faultline-dev/faultline/runtime/verify"
)

// The live verifier's bookkeeping. Everything here is guarded by
// LiveVerifier.mu; each operation is O(1) per record.
//
// Every order id met (in an input or in the output) gets one 32-bit word:
// how often the committed output holds it, and whether an order and a
// payment of it lie below the checked bounds. Bounds are applied in two
// steps. A tentative step marks what a newer checkpoint covers, to learn
// whether it would add any expected-but-unseen id; the confirmed step makes
// it count for Lost. Lost shows only confirmed ids, so a check that is not
// yet sure never shows on screen.

// Bits of an id's word.
const (
	orderConf   uint32 = 1 << 31 // an order below the confirmed bounds
	paymentConf uint32 = 1 << 30 // a payment below the confirmed bounds
	orderTent   uint32 = 1 << 29 // an order below the tentative bounds
	paymentTent uint32 = 1 << 28 // a payment below the tentative bounds
	farApart    uint32 = 1 << 27 // order and payment more than the state TTL apart: not expected
	orderRead   uint32 = 1 << 26 // an order was consumed (with a state TTL)
	paymentRead uint32 = 1 << 25 // a payment was consumed (with a state TTL)
	lenientCopy uint32 = 1 << 24 // a copy in the output was written in an at-least-once period
	seenMask    uint32 = 1<<24 - 1
)

// idRef names an id's word: the generator's ids ("o-000123") by their
// number, any other id by its index in idTable.other.
type idRef uint64

const otherRef idRef = 1 << 63

// idTable holds a word per id. The generator's ids are dense numbers and
// live in chunks without a map (4 bytes each, packed into a bit or two
// once their chunk is left alone: see verify.Dense); others go through a
// map.
type idTable struct {
	dense verify.Dense[uint32]
	other []uint32
	index map[string]uint32
}

// compactEvery is how many records the verifier applies between two
// compactions of its table: a chunk of ids it has not touched in a whole
// period is packed.
const compactEvery = 1 << 20

// ref returns id's word, creating it.
func (t *idTable) ref(id []byte) idRef {
	if n, ok := verify.DenseID(id); ok {
		t.dense.Ptr(n)
		return idRef(n)
	}
	if i, ok := t.index[string(id)]; ok {
		return otherRef | idRef(i)
	}
	if t.index == nil {
		t.index = map[string]uint32{}
	}
	i := uint32(len(t.other))
	t.other = append(t.other, 0)
	t.index[string(id)] = i
	return otherRef | idRef(i)
}

// at is the word of r; valid until the next ref or compaction.
func (t *idTable) at(r idRef) *uint32 {
	if r&otherRef != 0 {
		return &t.other[r&^otherRef]
	}
	return t.dense.Ptr(uint32(r))
}

// sideTimes holds the event time of an id's side consumed first, until
// the other comes: in a verify.Times for the generator's ids, in a map
// for others.
type sideTimes struct {
	dense verify.Times
	other map[idRef]int64
}

func (s *sideTimes) put(r idRef, t int64) {
	if r&otherRef == 0 {
		s.dense.Put(uint32(r), t)
		return
	}
	if s.other == nil {
		s.other = map[idRef]int64{}
	}
	s.other[r] = t
}

func (s *sideTimes) take(r idRef) (int64, bool) {
	if r&otherRef == 0 {
		return s.dense.Take(uint32(r))
	}
	t, ok := s.other[r]
	delete(s.other, r)
	return t, ok
}

func (s *sideTimes) dropIf(drop func(t int64) bool) {
	s.dense.DropIf(drop)
	for r, t := range s.other {
		if drop(t) {
			delete(s.other, r)
		}
	}
}

// parsedID is one consumed record, its order id read outside the lock.
type parsedID struct {
	off int64
	id  []byte
	ok  bool  // the record is JSON that encoding/json decodes
	ts  int64 // its timestamp, Unix ms
}

// pendingID is an input record at or above the confirmed bound.
type pendingID struct {
	off int64
	ref idRef
}

// partHealth is what a partition's consumer last reported.
type partHealth struct {
	errAt, msgAt time.Time
	err          string
}

// livePart is one partition the live verifier follows.
type livePart struct {
	topic string // Kafka topic
	p     int32
	start int64 // first offset read
	next  int64 // offset after the last record consumed (start before any)
	partHealth

	// Input partitions only.
	gen                  string // generator topic ("orders", "payments")
	input                bool
	newest               int64  // the newest event time consumed (with a state TTL)
	conf, tent           uint32 // the bits this topic sets
	confBound, tentBound int64  // offsets below these are covered
	pending              []pendingID
	head                 int // pending[:head] are confirmed (dropped)
	tentIdx              int // pending[:tentIdx] are tentatively marked
}

// needPayment reports whether the relation is joined: a record of the
// first input is expected once its partner from the second came.
func (s *liveState) needPayment() bool { return len(s.inputs) > 1 }

// liveState is the verifier's view of the input and the committed output.
type liveState struct {
	// inputs are the relation's input topics, the expected records' first;
	// two for a joined relation, whose records are expected once their
	// partner came (needPayment).
	inputs  []string
	ids     idTable
	in, out []*livePart

	// With the join's state TTL (ms; 0: none), an order and its payment
	// more than ttl apart in event time are not expected (farApart).
	// firstTime holds the event time of an id's side consumed first until
	// the other comes; prune drops those whose partner could only come too
	// far apart, by the input partitions' newest event times (see the
	// orders job's join, which drops them the same way).
	ttl        int64
	firstTime  sideTimes
	sincePrune int
	// sinceCompact counts the records applied since ids was compacted.
	sinceCompact int
	notJoined    int // ids found far apart

	committed  int // output records consumed
	duplicates int // ids seen twice or more
	dupLenient int // of duplicates, those with a copy written in an at-least-once period
	lenient    *verify.Periods
	unseenTent int // expected under the tentative bounds, not seen
	unseenConf int // expected under the confirmed bounds, not seen (Lost, with inFlight)
	// inFlight are the ids the confirmed checkpoint holds in flight, of
	// those the table knows: not Lost while they are missing.
	inFlight   []idRef
	asOf       int64
	available  bool
	badOutput  string // where the first output record that is not JSON is
	badOutputs int    // output records that are not JSON
}

func (s *liveState) expectedConf(w uint32) bool {
	return w&orderConf != 0 && (!s.needPayment() || w&paymentConf != 0) && w&farApart == 0
}

func (s *liveState) expectedTent(w uint32) bool {
	return w&orderTent != 0 && (!s.needPayment() || w&paymentTent != 0) && w&farApart == 0
}

// ttlSlack is runtime's: a side waits ttl plus at least this long.
const ttlSlack = 5 * time.Second

// timed notes the event time t of a consumed record of r from gen, before
// it is marked: the second side of an id decides whether the two are too
// far apart to be joined.
func (s *liveState) timed(r idRef, gen string, t int64) {
	read, other := orderRead, paymentRead
	if len(s.inputs) > 1 && gen == s.inputs[1] {
		read, other = paymentRead, orderRead
	}
	w := s.ids.at(r)
	if *w&read != 0 {
		return // read again (a consumer restarted)
	}
	*w |= read
	if *w&other == 0 {
		s.firstTime.put(r, t)
		s.prune()
		return
	}
	first, kept := s.firstTime.take(r)
	// A first side no longer kept was pruned: its partner came too late.
	// Times not known (0) always join, as in the job.
	far := t != 0 && (!kept || first != 0 && max(first-t, t-first) > s.ttl)
	if far {
		*w |= farApart
		s.notJoined++
	}
}

// prune drops, now and then, the first sides so old that a partner of
// theirs can only come too far apart to be joined: older, by the TTL and
// its slack, than the least over the input partitions of the newest event
// time consumed of each (the join's watermark). Not the newest of a
// topic: its partitions are consumed at once, each at its pace, and a
// partner may still come from one that lags.
func (s *liveState) prune() {
	if s.sincePrune++; s.sincePrune < 1<<14 {
		return
	}
	s.sincePrune = 0
	if len(s.inputs) < 2 {
		return
	}
	var now int64
	for _, lp := range s.in {
		if lp.newest == 0 {
			return // a partition not heard from yet: its partners may come
		}
		if now == 0 || lp.newest < now {
			now = lp.newest
		}
	}
	before := now - s.ttl - max(s.ttl, ttlSlack.Milliseconds())
	s.firstTime.dropIf(func(t int64) bool { return t != 0 && t < before })
}

// markTent records that an input record of r lies below a tentative bound.
func (s *liveState) markTent(r idRef, bit uint32) {
	w := s.ids.at(r)
	was := s.expectedTent(*w)
	*w |= bit
	if !was && s.expectedTent(*w) && *w&seenMask == 0 {
		s.unseenTent++
	}
}

// markConf records that an input record of r lies below a confirmed bound.
func (s *liveState) markConf(r idRef, bit uint32) {
	w := s.ids.at(r)
	was := s.expectedConf(*w)
	*w |= bit
	if !was && s.expectedConf(*w) && *w&seenMask == 0 {
		s.unseenConf++
	}
}

// see counts one committed output record of r, written at Unix
// millisecond at.
func (s *liveState) see(r idRef, at int64) {
	w := s.ids.at(r)
	n := *w & seenMask
	if n < seenMask {
		*w++
	}
	if s.lenient.Holds(at) {
		*w |= lenientCopy
	}
	switch n {
	case 0:
		if s.expectedTent(*w) {
			s.unseenTent--
		}
		if s.expectedConf(*w) {
			s.unseenConf--
		}
	case 1:
		s.duplicates++
		if *w&lenientCopy != 0 {
			s.dupLenient++
		}
	}
}

// addInput applies consumed input records of lp, in offset order. Records
// that are not JSON with the job's id are bad input and expect nothing.
func (s *liveState) addInput(lp *livePart, recs []parsedID) {
	s.compact(len(recs))
	for _, r := range recs {
		lp.next = r.off + 1
		if !r.ok || len(r.id) == 0 {
			continue
		}
		ref := s.ids.ref(r.id)
		if s.ttl > 0 && s.needPayment() {
			lp.newest = max(lp.newest, r.ts)
			s.timed(ref, lp.gen, r.ts)
		}
		switch {
		case r.off < lp.confBound:
			s.markTent(ref, lp.tent)
			s.markConf(ref, lp.conf)
		case r.off < lp.tentBound:
			s.markTent(ref, lp.tent)
			lp.pending = append(lp.pending, pendingID{r.off, ref})
			lp.tentIdx = len(lp.pending)
		default:
			lp.pending = append(lp.pending, pendingID{r.off, ref})
		}
	}
}

// addOutput applies consumed committed output records of lp.
func (s *liveState) addOutput(lp *livePart, recs []parsedID) {
	s.compact(len(recs))
	for _, r := range recs {
		lp.next = r.off + 1
		s.committed++
		if !r.ok {
			s.badOutputs++
			if s.badOutput == "" {
				s.badOutput = fmt.Sprintf("%s/%d offset %d", lp.topic, lp.p, r.off)
			}
			continue
		}
		s.see(s.ids.ref(r.id), r.ts)
	}
}

// compact packs, every compactEvery records applied, the chunks of ids
// no record touched since the last time: what the table holds then grows
// by a bit or two an id, not four bytes.
func (s *liveState) compact(n int) {
	if s.sinceCompact += n; s.sinceCompact < compactEvery {
		return
	}
	s.sinceCompact = 0
	s.ids.dense.Compact()
}

// tentative marks lp's records below b (bounds never move back).
func (s *liveState) tentative(lp *livePart, b int64) {
	if b <= lp.tentBound {
		return
	}
	lp.tentBound = b
	for lp.tentIdx < len(lp.pending) && lp.pending[lp.tentIdx].off < b {
		s.markTent(lp.pending[lp.tentIdx].ref, lp.tent)
		lp.tentIdx++
	}
}

// confirm makes lp's tentative bound its confirmed one.
func (s *liveState) confirm(lp *livePart) {
	for _, r := range lp.pending[lp.head:lp.tentIdx] {
		s.markConf(r.ref, lp.conf)
	}
	lp.head = lp.tentIdx
	lp.confBound = lp.tentBound
	switch {
	case lp.head == len(lp.pending):
		lp.pending, lp.head, lp.tentIdx = lp.pending[:0], 0, 0
	case lp.head > 1024 && lp.head*2 > len(lp.pending):
		n := copy(lp.pending, lp.pending[lp.head:])
		lp.pending, lp.tentIdx, lp.head = lp.pending[:n], lp.tentIdx-lp.head, 0
	}
}

// Seed makes the verifier go on from what ledger l accounted for (records
// an earlier run read before the embedded broker deleted them): it reads
// each topic from l's positions on, and knows what l knows of every id.
// Call it before Run.
func (v *LiveVerifier) Seed(l *verify.Ledger) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for gen, topic := range v.cfg.Inputs {
		if pos := l.Positions[topic]; len(pos) > 0 {
			if v.cfg.InputFrom == nil {
				v.cfg.InputFrom = map[string]map[int32]int64{}
			}
			m := maps.Clone(v.cfg.InputFrom[gen])
			if m == nil {
				m = map[int32]int64{}
			}
			maps.Copy(m, pos)
			v.cfg.InputFrom[gen] = m
		}
	}
	if pos := l.Positions[v.cfg.Output]; len(pos) > 0 {
		m := maps.Clone(v.cfg.OutputFrom)
		if m == nil {
			m = map[int32]int64{}
		}
		maps.Copy(m, pos)
		v.cfg.OutputFrom = m
	}
	st := &v.st
	l.Each(func(id string, order, payment, far bool, seen int, lenient bool) {
		w := st.ids.at(st.ids.ref([]byte(id)))
		if order {
			*w |= orderConf | orderTent | orderRead
		}
		if payment {
			*w |= paymentConf | paymentTent | paymentRead
		}
		if far {
			*w |= farApart
			st.notJoined++
		}
		*w |= uint32(seen)
		if lenient {
			*w |= lenientCopy
		}
		if seen > 1 {
			st.duplicates++
			if lenient {
				st.dupLenient++
			}
		}
		if seen == 0 && st.expectedConf(*w) {
			st.unseenConf++
			st.unseenTent++
		}
	})
	st.committed = l.Committed()
	l.FirstSides(func(id string, t int64) { st.firstTime.put(st.ids.ref([]byte(id)), t) })
}

// find returns id's word if the table has one.
func (t *idTable) find(id []byte) (*uint32, bool) {
	if n, ok := verify.DenseID(id); ok {
		if !t.dense.Has(n) {
			return nil, false
		}
		return t.dense.Ptr(n), true
	}
	i, ok := t.index[string(id)]
	if !ok {
		return nil, false
	}
	return &t.other[i], true
}

// setInFlight notes the ids the confirmed checkpoint holds in flight.
func (s *liveState) setInFlight(ids []string) {
	s.inFlight = s.inFlight[:0]
	for _, id := range ids {
		if _, ok := s.ids.find([]byte(id)); ok {
			s.inFlight = append(s.inFlight, s.ids.ref([]byte(id)))
		}
	}
}

// missingInFlight counts the in-flight ids of the confirmed checkpoint
// that are expected under the confirmed bounds and not seen: they count
// in unseenConf, and are not lost.
func (s *liveState) missingInFlight() int {
	n := 0
	for _, r := range s.inFlight {
		if w := *s.ids.at(r); s.expectedConf(w) && w&seenMask == 0 {
			n++
		}
	}
	return n
}

// missingAmong counts the ids of ids expected under the tentative bounds
// and not seen.
func (s *liveState) missingAmong(ids []string) int {
	n := 0
	for _, id := range ids {
		if w, ok := s.ids.find([]byte(id)); ok && s.expectedTent(*w) && *w&seenMask == 0 {
			n++
		}
	}
	return n
}
