package orders

import (
	"fmt"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/runtime"
)

// collected keeps what an operator emits.
type collected []runtime.Record

func (c *collected) Collect(r runtime.Record) { *c = append(*c, r) }

// newTestJoin opens a join with state TTL ttl on a heap backend that owns
// every key group, reading one input channel.
func newTestJoin(t *testing.T, ttl time.Duration) (*joinOp, backend.KeyedBackend) {
	t.Helper()
	j, kb, _ := newTestJoinOn(t, ttl, 1)
	return j, kb
}

// newTestJoinOn is newTestJoin reading channels input channels: records
// come from the channel *ch says, as a subtask sets it for each batch.
func newTestJoinOn(t *testing.T, ttl time.Duration, channels int) (*joinOp, backend.KeyedBackend, *int) {
	t.Helper()
	kb := backend.NewHeap(128, backend.RangeFor(128, 1, 0))
	j := &joinOp{ttl: ttl.Milliseconds()}
	ch := new(int)
	if err := j.Open(runtime.StandaloneContext(kb, 128, channels, ch)); err != nil {
		t.Fatal(err)
	}
	return j, kb, ch
}

// side is one input record of a join test: an order or a payment of order
// id at event time at (ms), which is also the watermark that comes with
// it (its input is in event-time order).
type side struct {
	payment bool
	id      int
	at      int64
}

func (s side) feed(t *testing.T, j *joinOp, kb backend.KeyedBackend, out runtime.Collector) {
	t.Helper()
	key := fmt.Sprintf("o-%06d", s.id)
	kb.SetCurrentKey(key)
	var err error
	if s.payment {
		err = j.Process2(&runtime.Record{Key: key, Value: &Payment{OrderID: key, PaymentID: "p", AmountCents: 1, EventTime: s.at, Watermark: s.at}}, out)
	} else {
		err = j.Process1(&runtime.Record{Key: key, Value: &Order{OrderID: key, Customer: "c-1", AmountCents: 1, EventTime: s.at, Watermark: s.at}}, out)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// The join's state TTL: an order and its payment join when their event
// times are at most the TTL apart, in either order of arrival; pairs
// further apart do not, and are counted; sides that wait longer than the
// TTL plus the slack are swept out, and only then.
func TestJoinStateTTL(t *testing.T) {
	const ttl = 10 * time.Second
	ms := func(d time.Duration) int64 { return 1_000_000 + d.Milliseconds() }
	cases := []struct {
		name       string
		sides      []side
		joined     []int
		notJoined  int64
		expired    int64
		stillThere int // entries in state at the end
	}{
		{"order then payment within the TTL", []side{{false, 1, ms(0)}, {true, 1, ms(ttl)}}, []int{1}, 0, 0, 0},
		{"payment then order within the TTL", []side{{true, 1, ms(0)}, {false, 1, ms(ttl)}}, []int{1}, 0, 0, 0},
		{"further apart than the TTL", []side{{false, 1, ms(0)}, {true, 1, ms(ttl + time.Millisecond)}}, nil, 1, 0, 0},
		{"late arrival, event times close", []side{{false, 2, ms(20 * time.Second)}, {true, 1, ms(0)}, {false, 1, ms(time.Second)}}, []int{1}, 0, 0, 1},
		// Sweeps come every ttl/2 of event time and drop what is older than
		// now - ttl - max(ttl, ttlSlack), here now - 20s.
		{"unpaid orders are swept once the join is TTL plus slack past them", []side{
			{false, 1, ms(0)},
			{false, 2, ms(10 * time.Second)}, // sweep: nothing is 20 s old
			{false, 3, ms(20 * time.Second)}, // sweep: 1 is exactly 20 s old and stays
			{false, 4, ms(26 * time.Second)}, // sweep: 1 goes
			{false, 5, ms(31 * time.Second)}, // sweep: 2 goes
		}, nil, 0, 2, 3},
		{"unknown event times always join", []side{{false, 1, 0}, {true, 1, ms(time.Hour)}}, []int{1}, 0, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j, kb := newTestJoin(t, ttl)
			var out collected
			for _, s := range tc.sides {
				s.feed(t, j, kb, &out)
			}
			if got := joinedIDs(out); fmt.Sprint(got) != fmt.Sprint(tc.joined) {
				t.Errorf("joined %v, want %v", got, tc.joined)
			}
			if n := j.counts.NotJoined.Load(); n != tc.notJoined {
				t.Errorf("not joined %d, want %d", n, tc.notJoined)
			}
			if n := j.counts.Expired.Load(); n != tc.expired {
				t.Errorf("expired %d, want %d", n, tc.expired)
			}
			if kb.Len() != tc.stillThere {
				t.Errorf("%d entries in state, want %d", kb.Len(), tc.stillThere)
			}
		})
	}
}

// joinedIDs are the order ids of the paid orders a join emitted.
func joinedIDs(out collected) []int {
	var got []int
	for _, r := range out {
		var id int
		fmt.Sscanf(r.Value.(*PaidOrder).OrderID, "o-%d", &id)
		got = append(got, id)
	}
	return got
}

// The join sweeps by its watermark, the least over its input channels of
// the newest watermark each delivered, not by the newest event time it has
// seen. After a break longer than the TTL and its slack, a restored join
// meets today's records on some channels while others still replay the
// records from before the break: the sides waiting for partners from the
// slow channels stay until those come, and are swept only once every
// channel has gone past them.
func TestJoinSweepsByTheSlowestChannel(t *testing.T) {
	const ttl = 2 * time.Second // swept 7 s behind the watermark
	old := int64(1_000_000_000)
	today := old + time.Hour.Milliseconds()
	// Channels 0 and 1 bring orders, 2 and 3 payments.
	steps := []struct {
		ch int
		side
	}{
		{1, side{false, 1, old}},         // waits for its payment, still to come on channel 3
		{3, side{true, 2, old + 100}},    // waits for its order, still to come on channel 1
		{1, side{false, 9, old + 200}},   // never paid
		{0, side{false, 3, today}},       // today's records on channels 0 and 2
		{2, side{true, 4, today}},        //
		{0, side{false, 5, today + 1e3}}, //
		{2, side{true, 6, today + 2e3}},  //
		{3, side{true, 1, old + 500}},    // the slow channels catch up: 1 and 2 join
		{1, side{false, 2, old + 600}},   //
		{1, side{false, 4, today + 10}},  // and reach today: 9 is swept
		{3, side{true, 3, today + 20}},   //
	}
	j, kb, ch := newTestJoinOn(t, ttl, 4)
	var out collected
	for i, st := range steps {
		*ch = st.ch
		st.feed(t, j, kb, &out)
		if i == 8 {
			if got := joinedIDs(out); fmt.Sprint(got) != "[1 2]" || j.counts.Expired.Load() != 0 {
				t.Fatalf("once the slow channels caught up: joined %v, expired %d; want [1 2] joined, nothing expired",
					got, j.counts.Expired.Load())
			}
		}
	}
	if got := joinedIDs(out); fmt.Sprint(got) != "[1 2 4 3]" {
		t.Errorf("joined %v, want [1 2 4 3]", got)
	}
	if n := j.counts.Expired.Load(); n != 1 {
		t.Errorf("expired %d, want 1 (the unpaid order 9)", n)
	}
	if kb.Len() != 2 {
		t.Errorf("%d entries in state, want 2 (orders 5 and payment 6)", kb.Len())
	}
}

// Without a TTL nothing is dropped, however far apart the sides are.
func TestJoinWithoutTTLKeepsEverything(t *testing.T) {
	j, kb := newTestJoin(t, 0)
	var out collected
	for i := range 100 {
		side{false, i, int64(i) * int64(time.Hour/time.Millisecond)}.feed(t, j, kb, &out)
	}
	side{true, 0, 1}.feed(t, j, kb, &out)
	if len(out) != 1 || kb.Len() != 99 || j.counts.Expired.Load() != 0 {
		t.Fatalf("joined %d, %d entries left, %d expired", len(out), kb.Len(), j.counts.Expired.Load())
	}
}

// A side kept before sides had event times (state of an older checkpoint)
// decodes with time 0, which always joins.
func TestJoinSideCodecsReadStateWithoutEventTime(t *testing.T) {
	old := backend.AppendString(backend.AppendString(nil, "o-000001"), "c-7")
	old = append(old, 0x02) // varint 1
	o, err := (orderCodec{}).Decode(old)
	if err != nil || o.OrderID != "o-000001" || o.Customer != "c-7" || o.AmountCents != 1 || o.EventTime != 0 {
		t.Fatalf("%+v %v", o, err)
	}
	now := (orderCodec{}).Append(nil, Order{OrderID: "o-2", Customer: "c-2", AmountCents: 5, EventTime: 1234567})
	if o, err := (orderCodec{}).Decode(now); err != nil || o.EventTime != 1234567 {
		t.Fatalf("%+v %v", o, err)
	}
	if _, err := (orderCodec{}).Decode(append(now, 0x01)); err == nil {
		t.Fatal("a side with bytes after its event time decoded")
	}
}

// The sweep reads a side's event time without decoding it: the same time
// the codecs decode, and corrupt state is an error.
func TestSideEventTimeReadsWhatTheCodecsWrite(t *testing.T) {
	o := Order{OrderID: "o-000042", Customer: "c-7", AmountCents: 1234, EventTime: 1_700_000_000_123}
	p := Payment{OrderID: "o-000042", PaymentID: "p-000042", AmountCents: 1234, EventTime: 1_700_000_000_456}
	for _, c := range []struct {
		b    []byte
		want int64
	}{
		{(orderCodec{}).Append(nil, o), o.EventTime},
		{(paymentCodec{}).Append(nil, p), p.EventTime},
		{(orderCodec{}).Append(nil, Order{OrderID: "o-1", Customer: "c"}), 0}, // no time known
	} {
		if got, err := sideEventTime(c.b); err != nil || got != c.want {
			t.Errorf("sideEventTime = %d, %v; want %d", got, err, c.want)
		}
	}
	if _, err := sideEventTime([]byte{0xff}); err == nil {
		t.Error("corrupt state read without an error")
	}
}
