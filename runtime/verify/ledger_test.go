package verify

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func id(n int) []byte { return []byte(fmt.Sprintf("o-%06d", n)) }

func TestLedgerVerdict(t *testing.T) {
	const ttl = time.Minute
	type rec struct {
		out   bool   // an output record; else input
		topic string // input: TopicOrders or TopicPayments
		id    string
		at    int64
	}
	in := func(topic, id string, at int64) rec { return rec{topic: topic, id: id, at: at} }
	out := func(id string) rec { return rec{out: true, id: id} }
	// outAt is an output written at ms; the at-least-once period below
	// runs from 10,000 to 20,000.
	outAt := func(id string, ms int64) rec { return rec{out: true, id: id, at: ms} }
	o, p := TopicOrders, TopicPayments
	cases := []struct {
		name string
		kind string
		recs []rec
		want Result
	}{
		{"a paid order committed once", PaidOrders, []rec{in(o, "o-000001", 1000), in(p, "o-000001", 2000), out("o-000001")},
			Result{Expected: 1, Committed: 1}},
		{"an unpaid order is not expected", PaidOrders, []rec{in(o, "o-000001", 1000), out("o-000001")},
			Result{Committed: 1, Unexpected: 1}},
		{"lost and duplicated", PaidOrders, []rec{in(o, "o-000001", 1), in(p, "o-000001", 1), in(o, "o-000002", 1), in(p, "o-000002", 1),
			out("o-000002"), out("o-000002"), out("o-000002"), out("o-000002")},
			Result{Expected: 2, Committed: 4, Lost: 1, Duplicates: 1}},
		{"orders: every order", Orders, []rec{in(o, "o-000001", 1), in(o, "x-7", 1), out("x-7")},
			Result{Expected: 2, Committed: 1, Lost: 1}},
		{"bad input expects nothing", PaidOrders, []rec{in(o, "", 1)}, Result{BadInput: 1}},
		{"a record read twice counts once", PaidOrders, []rec{in(o, "o-000001", 1), in(o, "o-000001", 1), in(p, "o-000001", 1), out("o-000001")},
			Result{Expected: 1, Committed: 1}},
		{"further apart than the TTL: not joined, not expected", PaidOrders, []rec{
			in(o, "o-000001", 1000), in(p, "o-000001", 1000+ttl.Milliseconds()+1),
			in(p, "o-000002", 5000), in(o, "o-000002", 5000+ttl.Milliseconds())},
			Result{Expected: 1, Lost: 1, NotJoined: 1}},
		{"a duplicate with a copy written at-least-once is counted apart", PaidOrders, []rec{
			in(o, "o-000001", 1), in(p, "o-000001", 1), outAt("o-000001", 15_000), outAt("o-000001", 25_000),
			in(o, "o-000002", 1), in(p, "o-000002", 1), outAt("o-000002", 5_000), outAt("o-000002", 25_000)},
			Result{Expected: 2, Committed: 4, Duplicates: 2, DuplicatesAtLeastOnce: 1}},
		{"a copy in the period without a second is no duplicate", PaidOrders, []rec{
			in(o, "o-000001", 1), in(p, "o-000001", 1), outAt("o-000001", 20_000)},
			Result{Expected: 1, Committed: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger(tc.kind, ttl)
			l.Lenient, _ = LoadPeriods("")
			l.Lenient.Open(time.UnixMilli(10_000))
			l.Lenient.Close(time.UnixMilli(20_000))
			for _, r := range tc.recs {
				if r.out {
					l.Output([]byte(r.id), true, r.at)
				} else {
					l.Input(r.topic, []byte(r.id), r.at)
				}
			}
			if got := l.Result(); got != tc.want {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// A first side kept for the TTL is dropped once both inputs are TTL plus
// slack past it; its partner then counts as too far apart, as in the job.
func TestLedgerPrune(t *testing.T) {
	l := newLedger(PaidOrders, time.Second)
	l.Input(TopicOrders, id(1), 1000)
	l.Input(TopicOrders, id(2), 100_000)
	l.Input(TopicPayments, id(3), 100_000)
	l.PruneAt(100_000) // 1 is older than 100000 - 1000 - 5000
	first := map[string]int64{}
	l.FirstSides(func(id string, t int64) { first[id] = t })
	if _, kept := first[string(id(1))]; kept || len(first) != 2 {
		t.Fatalf("first sides after prune: %v", first)
	}
	l.Input(TopicPayments, id(1), 1500)
	if r := l.Result(); r.NotJoined != 1 || r.Expected != 0 {
		t.Fatalf("%+v", r)
	}
}

// The ledger's point: fed in parts, saved and loaded between them, it
// gives the verdict of one feed of everything.
func TestLedgerSavedInPartsEqualsOneFeed(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	type rec struct {
		out   bool
		topic string
		n     int
		at    int64
	}
	var recs []rec
	for n := range 200_000 {
		at := int64(n) * 3
		recs = append(recs, rec{topic: TopicOrders, n: n, at: at})
		if rng.Intn(10) != 0 {
			recs = append(recs, rec{topic: TopicPayments, n: n, at: at + int64(rng.Intn(90_000))})
			if rng.Intn(50) != 0 {
				recs = append(recs, rec{out: true, n: n})
			}
			if rng.Intn(500) == 0 {
				recs = append(recs, rec{out: true, n: n})
			}
		}
	}
	recs = append(recs, rec{out: true, n: 999_999_999}, rec{topic: TopicOrders, n: -1})
	newest := map[string]int64{} // of each topic: one partition, its watermark
	feed := func(l *Ledger, rs []rec) {
		for _, r := range rs {
			if !r.out {
				newest[r.topic] = max(newest[r.topic], r.at)
			}
			b := id(r.n)
			if r.n < 0 {
				b = nil
			}
			if r.out {
				l.Output(b, true, 0)
			} else {
				l.Input(r.topic, b, r.at)
			}
		}
	}
	whole := newLedger(PaidOrders, time.Minute)
	feed(whole, recs)
	want := whole.Result()
	clear(newest)

	path := filepath.Join(t.TempDir(), "verify", "ledger")
	parts := newLedger(PaidOrders, time.Minute)
	for i, step := 0, len(recs)/7; i < len(recs); i += step {
		feed(parts, recs[i:min(i+step, len(recs))])
		parts.SetPosition("orders", 0, int64(i+step))
		parts.PruneAt(min(newest[TopicOrders], newest[TopicPayments]))
		if err := parts.Save(path); err != nil {
			t.Fatal(err)
		}
		var err error
		if parts, err = Load(path); err != nil {
			t.Fatal(err)
		}
	}
	if got := parts.Result(); got != want {
		t.Fatalf("in parts: %+v\none feed: %+v", got, want)
	}
	if pos, ok := parts.Position("orders", 0); !ok || pos < int64(len(recs)) {
		t.Fatalf("position %d %v", pos, ok)
	}
	if want.Lost == 0 || want.Duplicates == 0 || want.NotJoined == 0 || want.Unexpected == 0 {
		t.Fatalf("the stream should exercise every count: %+v", want)
	}
	fi, _ := os.Stat(path)
	t.Logf("%d ids: %s, %d bytes saved", 200_000, want, fi.Size())
}

func TestLedgerDamageIsReported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	l := newLedger(Orders, 0)
	l.Input(TopicOrders, id(1), 0)
	if err := l.Save(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 0xff
	os.WriteFile(path, b, 0o644)
	if _, err := Load(path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged ledger: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing ledger: %v", err)
	}
}

// Periods survive in their file: a period opened by one run and closed by
// the next, and one still open, are read back; a damaged file is an error.
func TestPeriodsAreKeptInTheStateDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), PeriodsFile)
	p, err := LoadPeriods(path)
	if err != nil || p.Holds(1) {
		t.Fatalf("no file: %v, holds %v", err, p.Holds(1))
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.Open(time.UnixMilli(100)))
	must(p.Open(time.UnixMilli(150))) // already open: no second period
	must(p.Close(time.UnixMilli(200)))
	must(p.Close(time.UnixMilli(250))) // none open: nothing
	must(p.Open(time.UnixMilli(300)))
	q, err := LoadPeriods(path)
	must(err)
	if got := q.Spans(); len(got) != 2 || got[0] != (Span{100, 200}) || got[1] != (Span{From: 300}) {
		t.Fatalf("read back %+v", got)
	}
	for ms, want := range map[int64]bool{0: false, 99: false, 100: true, 200: true, 201: false, 299: false, 300: true, 1 << 40: true} {
		if q.Holds(ms) != want {
			t.Errorf("Holds(%d) = %v, want %v", ms, !want, want)
		}
	}
	must(os.WriteFile(path, []byte("{not json"), 0o644))
	if _, err := LoadPeriods(path); err == nil {
		t.Fatal("a damaged periods file was read")
	}
	var none *Periods
	if none.Holds(150) || none.Open(time.Now()) != nil {
		t.Fatal("a nil Periods holds something")
	}
}

// memInput is an InputReader over records held in memory, by topic.
type memInput map[string][][]byte

func (m memInput) ReadInput(_ context.Context, topic string, _ map[int32]int64, f func(v []byte, t, wm int64) error) error {
	for _, v := range m[topic] {
		if err := f(v, 0, 0); err != nil {
			return err
		}
	}
	return nil
}

func (m memInput) ReadInputAfter(context.Context, string, map[int32]int64, func(v []byte, t, wm int64) error) error {
	return nil
}

// An unaligned checkpoint holds records in flight: the output committed as
// of it cannot hold their paid orders yet, and they are neither expected
// nor lost; a paid order missing that is not in flight is lost.
func TestInFlightIsNeitherExpectedNorLost(t *testing.T) {
	rec := func(id string) []byte { return []byte(`{"order_id":"` + id + `"}`) }
	in := memInput{
		TopicOrders:   {rec("o-000001"), rec("o-000002"), rec("o-000003")},
		TopicPayments: {rec("o-000001"), rec("o-000002"), rec("o-000003")},
	}
	out := []Record{{Key: []byte("o-000001"), Value: rec("o-000001")}}
	bounds := map[string]map[int32]int64{TopicOrders: {0: 3}, TopicPayments: {0: 3}}
	v, err := VerifyHeld(context.Background(), newLedger(PaidOrders, 0), in, "exactly-once", bounds, Held{InFlight: []string{"o-000002", "o-000009"}}, Records(out))
	if err != nil {
		t.Fatal(err)
	}
	if v.InFlight != 1 || v.Lost != 1 || v.Expected != 2 || v.OK {
		t.Fatalf("%+v: want o-000002 in flight, o-000003 lost, 2 expected", v)
	}
	v, err = VerifyHeld(context.Background(), newLedger(PaidOrders, 0), in, "exactly-once", bounds, Held{InFlight: []string{"o-000002", "o-000003"}}, Records(out))
	if err != nil {
		t.Fatal(err)
	}
	if v.InFlight != 2 || v.Lost != 0 || v.Expected != 1 || !v.OK {
		t.Fatalf("%+v: want two in flight, nothing lost", v)
	}
}

// An exactly-once run stopped while it ran at-least-once: output made from
// input past the last checkpoint is forgiven as the at-least-once period's
// (the next run reads that input again), and only that; the same output
// written outside any period is unexpected.
func TestOutputPastTheCheckpointIsForgivenInAnAtLeastOncePeriod(t *testing.T) {
	rec := func(id string) []byte { return []byte(`{"order_id":"` + id + `"}`) }
	in := afterInput{
		before: memInput{TopicOrders: {rec("o-000001")}, TopicPayments: {rec("o-000001")}},
		after:  memInput{TopicOrders: {rec("o-000002")}, TopicPayments: {rec("o-000002")}},
	}
	bounds := map[string]map[int32]int64{TopicOrders: {0: 1}, TopicPayments: {0: 1}}
	for _, tc := range []struct {
		name    string
		written int64 // ms of the output record made past the checkpoint
		ok      bool
	}{
		{"written in the period", 150, true},
		{"written before it", 50, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger(PaidOrders, 0)
			l.Lenient, _ = LoadPeriods("")
			l.Lenient.Open(time.UnixMilli(100))
			out := []Record{{Value: rec("o-000001"), Time: 20}, {Value: rec("o-000002"), Time: tc.written}}
			v, err := VerifyHeld(context.Background(), l, in, "exactly-once", bounds, Held{}, Records(out))
			if err != nil {
				t.Fatal(err)
			}
			if v.OK != tc.ok || tc.ok && (v.AfterCheckpoint != 1 || v.Unexpected != 0) || !tc.ok && v.Unexpected != 1 {
				t.Fatalf("%+v", v)
			}
		})
	}
}

// afterInput is an InputReader with input up to a checkpoint's bounds
// (before) and past them (after).
type afterInput struct{ before, after memInput }

func (a afterInput) ReadInput(ctx context.Context, topic string, _ map[int32]int64, f func(v []byte, t, wm int64) error) error {
	return a.before.ReadInput(ctx, topic, nil, f)
}

func (a afterInput) ReadInputAfter(ctx context.Context, topic string, _ map[int32]int64, f func(v []byte, t, wm int64) error) error {
	return a.after.ReadInput(ctx, topic, nil, f)
}

// A run stopped after a fallback past a damaged checkpoint: the output
// holds what the damaged checkpoint committed, past the newest valid one.
// Those ids (Held.Ahead) whose input lies after the checkpoint are neither
// expected nor unexpected; an id ahead whose input is nowhere, or output
// past the checkpoint that is not held ahead, is still unexpected.
func TestOutputAheadOfTheCheckpointIsNotUnexpected(t *testing.T) {
	rec := func(id string) []byte { return []byte(`{"order_id":"` + id + `"}`) }
	in := afterInput{
		before: memInput{TopicOrders: {rec("o-000001")}, TopicPayments: {rec("o-000001")}},
		after:  memInput{TopicOrders: {rec("o-000002"), rec("o-000003")}, TopicPayments: {rec("o-000002"), rec("o-000003")}},
	}
	bounds := map[string]map[int32]int64{TopicOrders: {0: 1}, TopicPayments: {0: 1}}
	out := []Record{{Value: rec("o-000001")}, {Value: rec("o-000002")}, {Value: rec("o-000003")}, {Value: rec("o-000009")}}
	for _, tc := range []struct {
		name             string
		ahead            []string
		wantAhead, unexp int
		ok               bool
	}{
		{"all held ahead", []string{"o-000002", "o-000003", "o-000009"}, 2, 1, false},
		{"those past the checkpoint held ahead", []string{"o-000002", "o-000003"}, 2, 1, false},
		{"none held ahead", nil, 0, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := VerifyHeld(context.Background(), newLedger(PaidOrders, 0), in, "exactly-once", bounds, Held{Ahead: tc.ahead}, Records(out))
			if err != nil {
				t.Fatal(err)
			}
			if v.Ahead != tc.wantAhead || v.Unexpected != tc.unexp || v.OK != tc.ok || v.Expected != 1 || v.Lost != 0 {
				t.Fatalf("%+v: want %d ahead, %d unexpected", v, tc.wantAhead, tc.unexp)
			}
		})
	}
	v, err := VerifyHeld(context.Background(), newLedger(PaidOrders, 0), in, "exactly-once", bounds, Held{Ahead: []string{"o-000002", "o-000003"}}, Records(out[:3]))
	if err != nil || !v.OK || v.Ahead != 2 || v.Unexpected != 0 {
		t.Fatalf("%+v %v: the output the damaged checkpoint committed, held ahead, passes", v, err)
	}
}

// The relations of the orders job (orders.Catalogue), which these tests
// check the ledger with.
const (
	PaidOrders    = "paid-orders"
	Orders        = "orders"
	TopicOrders   = "orders"
	TopicPayments = "payments"
)

// expectOf is what the orders job's verify kind expects, by order_id.
func expectOf(kind string, ttl time.Duration) Expect {
	e := Expect{Kind: kind, Inputs: []string{TopicOrders}, StateTTL: ttl, ID: "order_id"}
	if kind == PaidOrders {
		e.Inputs, e.Joined = []string{TopicOrders, TopicPayments}, true
	}
	return e
}

// newLedger is New for the orders job's verify kind.
func newLedger(kind string, ttl time.Duration) *Ledger {
	l, err := New(expectOf(kind, ttl))
	if err != nil {
		panic(err)
	}
	return l
}

// A relation over other topics and another id works as the orders job's
// does: each record of the first input once, or each joined with a partner
// of the second; a saved ledger keeps the relation, and one saved before
// ledgers kept it adopts the job's.
func TestRelationOfAnyJob(t *testing.T) {
	each := Expect{Kind: "clicks", Inputs: []string{"clicks"}, ID: "click_id"}
	l, err := New(each)
	if err != nil {
		t.Fatal(err)
	}
	l.Input("clicks", []byte("k-1"), 0)
	l.Input("clicks", []byte("k-2"), 0)
	l.Output([]byte("k-1"), true, 0)
	if r := l.Result(); r.Expected != 2 || r.Lost != 1 || r.Committed != 1 {
		t.Errorf("each click: %+v", r)
	}
	joined := Expect{Kind: "paid-rides", Inputs: []string{"rides", "fares"}, Joined: true, ID: "ride"}
	if l, err = New(joined); err != nil {
		t.Fatal(err)
	}
	l.Input("rides", []byte("r-1"), 0)
	l.Input("rides", []byte("r-2"), 0)
	l.Input("fares", []byte("r-2"), 0)
	l.Output([]byte("r-2"), true, 0)
	if r := l.Result(); r.Expected != 1 || r.Lost != 0 || r.Unexpected != 0 {
		t.Errorf("joined rides: %+v", r)
	}
	b, err := l.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var back Ledger
	if err := back.UnmarshalBinary(b); err != nil || !back.Expect().Equal(joined) {
		t.Fatalf("saved and read back: %+v, %v; want %+v", back.Expect(), err, joined)
	}
	old := Ledger{kind: "paid-rides"} // as read from a file of before
	if err := old.Adopt(joined); err != nil || !old.Expect().Equal(joined) {
		t.Fatalf("adopted: %+v, %v", old.Expect(), err)
	}
}

// timedInput is an InputReader over n orders a millisecond of event time
// apart, every tenth never paid, each payment right after its order.
type timedInput int

func (n timedInput) ReadInput(_ context.Context, topic string, _ map[int32]int64, f func(v []byte, t, wm int64) error) error {
	for i := range int(n) {
		if topic == TopicPayments && i%10 == 0 {
			continue
		}
		v := fmt.Appendf(nil, `{"order_id":"o-%06d"}`, i)
		t := 1_700_000_000_000 + int64(i)
		if err := f(v, t, t); err != nil { // one partition: its newest time is the watermark
			return err
		}
	}
	return nil
}

func (timedInput) ReadInputAfter(context.Context, string, map[int32]int64, func(v []byte, t, wm int64) error) error {
	return nil
}

// The final verification forgets, as it reads, the orders that can no
// longer be paid in time, as the join drops them: what it keeps of the
// input's event times does not grow with the input.
func TestReadingTheInputForgetsWhatTheTTLExpired(t *testing.T) {
	const orders = 1_000_000 // 1,000 s of event time; 100,000 never paid
	l := newLedger(PaidOrders, time.Second)
	if err := readInputs(context.Background(), l, timedInput(orders), l.Inputs(), nil); err != nil {
		t.Fatal(err)
	}
	// Kept: the unpaid orders of the last prune's window (TTL 1 s plus
	// 5 s of slack) and what came since, a few thousand; not 100,000.
	if n := l.firstDense.Len(); n > 20_000 {
		t.Fatalf("the ledger still holds %d event times after reading %d orders", n, orders)
	}
	if r := l.Result(); r.Expected != orders*9/10 {
		t.Fatalf("expected %d paid orders, got %+v", orders*9/10, r)
	}
}

// laggingInput is n orders a millisecond apart, all paid; the payment of
// order 0 is in a partition that delivers only after the others have
// delivered every other payment, and until then holds the payments'
// watermark at none.
type laggingInput int

func (n laggingInput) ReadInput(_ context.Context, topic string, _ map[int32]int64, f func(v []byte, t, wm int64) error) error {
	const base = 1_700_000_000_000
	rec := func(i int) []byte { return fmt.Appendf(nil, `{"order_id":"o-%06d"}`, i) }
	if topic == TopicOrders {
		for i := range int(n) {
			if err := f(rec(i), base+int64(i), base+int64(i)); err != nil {
				return err
			}
		}
		return nil
	}
	for i := 1; i < int(n); i++ {
		if err := f(rec(i), base+int64(i), 0); err != nil {
			return err
		}
	}
	return f(rec(0), base, base)
}

func (laggingInput) ReadInputAfter(context.Context, string, map[int32]int64, func(v []byte, t, wm int64) error) error {
	return nil
}

// A partner from a partition that lags still joins: the final verification
// forgets a first side by the topics' watermark, which the lagging
// partition holds back, not by the newest time read.
func TestReadingTheInputKeepsWhatALaggingPartitionMayStillPair(t *testing.T) {
	const orders = 200_000 // 200 s of event time; the TTL and its slack are 6 s
	l := newLedger(PaidOrders, time.Second)
	if err := readInputs(context.Background(), l, laggingInput(orders), l.Inputs(), nil); err != nil {
		t.Fatal(err)
	}
	if r := l.Result(); r.Expected != orders || r.NotJoined != 0 {
		t.Fatalf("want every one of %d orders expected, got %+v", orders, r)
	}
}
