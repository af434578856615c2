package live

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/flatjson"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
	"github.com/faultline-dev/faultline/runtime/verify"
)

// The bookkeeping alone: bounds, tentative and confirmed, duplicates.
func TestLiveStateCounts(t *testing.T) {
	s := liveState{inputs: []string{"orders", "payments"}}
	ordersPart := &livePart{input: true, conf: orderConf, tent: orderTent}
	payments := &livePart{input: true, conf: paymentConf, tent: paymentTent}
	out := &livePart{}
	rec := func(off int64, id string) parsedID { return parsedID{off: off, id: []byte(id), ok: true} }
	s.addInput(ordersPart, []parsedID{rec(0, "o-000001"), rec(1, "o-000002"), {off: 2}, rec(3, "x-3")})
	s.addInput(payments, []parsedID{rec(0, "o-000002"), rec(1, "x-3"), rec(2, "o-000001")})
	s.addOutput(out, []parsedID{rec(0, "o-000002"), rec(1, "o-000002"), {off: 2}})
	if s.committed != 3 || s.duplicates != 1 || s.badOutputs != 1 {
		t.Fatalf("output: %+v", s)
	}
	// Orders 0-1, payments 0-1: o-000002 expected (seen); o-000001 has no
	// payment below the bound; x-3 has no order below it.
	s.tentative(ordersPart, 2)
	s.tentative(payments, 2)
	if s.unseenTent != 0 || s.unseenConf != 0 {
		t.Fatalf("tentative 2/2: tent %d conf %d", s.unseenTent, s.unseenConf)
	}
	s.tentative(ordersPart, 4)
	s.tentative(payments, 3)
	if s.unseenTent != 2 || s.unseenConf != 0 {
		t.Fatalf("tentative 4/3: tent %d conf %d, want 2 and 0", s.unseenTent, s.unseenConf)
	}
	s.confirm(ordersPart)
	s.confirm(payments)
	if s.unseenConf != 2 {
		t.Fatalf("confirmed: %d unseen, want 2", s.unseenConf)
	}
	s.addOutput(out, []parsedID{rec(3, "x-3")})
	if s.unseenConf != 1 || s.unseenTent != 1 {
		t.Fatalf("after x-3 came: conf %d tent %d, want 1", s.unseenConf, s.unseenTent)
	}
	// A record arriving below a confirmed bound counts at once.
	s.addInput(ordersPart, []parsedID{rec(4, "o-000009")})
	s.addInput(payments, []parsedID{rec(3, "o-000009")})
	if s.unseenConf != 1 {
		t.Fatalf("beyond the bounds: %d unseen, want 1", s.unseenConf)
	}
	s.tentative(ordersPart, 5)
	s.tentative(payments, 4)
	s.confirm(ordersPart)
	s.confirm(payments)
	if s.unseenConf != 2 || len(ordersPart.pending) != 0 || len(payments.pending) != 0 {
		t.Fatalf("after bounds 5/4: %d unseen, pending %d/%d", s.unseenConf, len(ordersPart.pending), len(payments.pending))
	}
}

func TestDenseIDs(t *testing.T) {
	for _, n := range []uint32{0, 7, 999999, 1000000, 123456789, 1<<32 - 1} {
		id := fmt.Sprintf("o-%06d", n)
		if got, ok := verify.DenseID([]byte(id)); !ok || got != n {
			t.Errorf("%s: %d %v", id, got, ok)
		}
	}
	for _, id := range []string{"o-12345", "o-0000001", "o-4294967296", "o-00000a", "x-000001", "o-", ""} {
		if _, ok := verify.DenseID([]byte(id)); ok {
			t.Errorf("%q taken for a generator id", id)
		}
	}
	var tab idTable
	a, b := tab.ref([]byte("o-000042")), tab.ref([]byte("o-0000042"))
	if a == b || tab.ref([]byte("o-0000042")) != b {
		t.Fatal("distinct ids share a word, or one id has two")
	}
}

// The id scanner must agree with encoding/json on every record.
func FuzzOrderIDAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"order_id":"o-000123","customer":"c-17","amount_cents":1299,"customer_total_cents":48211}`,
		`{"order_id":"o-1","payment_id":"p-1","amount_cents":-5}`,
		` { "amount_cents" : 7 , "order_id":"x" } `,
		`{"order_id":"o\u00e9"}`, `{"order_id":"o","amount_cents":1.5}`, `{"order_id":1}`,
		`{"order_id":null}`, `{"order_id":"a","order_id":null}`, `{"ORDER_ID":"b"}`,
		`{"order_id":"o","n":01}`, `{"order_id":"o"}x`, `{"order_id":"o",}`, `{"order_id":"a","order_id":"b"}`,
		`{}`, `[]`, `null`, `"s"`, `not json`, `{"a":{"b":1},"order_id":"o"}`, "\x00\xffpoison",
		`{"order_id":"é"}`, `{"n":-,"order_id":"o"}`, `{"n":true,"order_id":"o"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r struct {
			OrderID string `json:"order_id"`
		}
		jerr := json.Unmarshal(b, &r)
		id, ok := flatjson.MustField("order_id").Of(b)
		if ok != (jerr == nil) || ok && string(id) != r.OrderID {
			t.Fatalf("%q: scanner %q %v, encoding/json %q %v", b, id, ok, r.OrderID, jerr)
		}
	})
}

// The terminal UI's live verifier, seeded with the ledger of a run whose
// records the broker deleted, says what it would have said had it read
// everything.
func TestLiveVerifierGoesOnFromTheLedger(t *testing.T) {
	f := kafkatest.NewRetentionFixture(t, exactlyOnce)
	want, err := verify.Verify(context.Background(), kafka.Inputs{C: f.C}, kafkatest.ExpectOrders("paid-orders", 0), "exactly-once", f.Quarter, kafkatest.MustRead(t, f.C, nil))
	if err != nil {
		t.Fatal(err)
	}
	ledger := kafkatest.MustLedger(kafkatest.ExpectOrders("paid-orders", 0))
	cp := &checkpoint.Completed{ID: 1, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{{Operator: "src"}: {Offsets: f.Eighth}}}
	r := broker.NewRetention(broker.RetentionConfig{Client: f.C, Inputs: f.InputTopic, Output: "revenue", Ledger: ledger, Path: filepath.Join(t.TempDir(), "ledger"),
		Checkpoints: func(context.Context) ([]*checkpoint.Completed, error) { return []*checkpoint.Completed{cp}, nil }})
	if err := r.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.LogStart(t, orders.TopicOrders, 0) == 0 || f.LogStart(t, "revenue", 0) == 0 {
		t.Fatal("the round deleted nothing: the test would not show the seed at work")
	}
	v := NewLiveVerifier(LiveConfig{Client: f.C, Inputs: f.InputTopic, Output: "revenue", Expect: kafkatest.ExpectOrders("paid-orders", 0)})
	v.Seed(ledger)
	var committed fakeCommitted
	committed.set(1, f.Quarter)
	run := startLive(t, v, committed.get, func(LiveStatus) error { return nil })
	s := waitFor(t, v, "the quarter checked", func(s LiveStatus) bool { return s.AsOf == 1 })
	run.stop()
	if s.Committed != want.Committed || s.Duplicates != want.Duplicates || s.Lost != want.Lost {
		t.Fatalf("seeded live verifier %+v, full oracle %+v", s, want)
	}
}

// exactlyOnce opens the exactly-once output of revenue, for the retention
// fixture.
func exactlyOnce(c kafka.Client, cl sarama.Client) (kafkatest.Output, error) {
	return sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
}

// A long run at a steady rate: round after round, orders come, most of
// them paid, the bounds move past them and the output commits the paid
// ones. What the verifier keeps per id falls from four bytes to about two
// bits as its chunks are left behind (compact), and its counts stay
// right. An 8-hour day at 8,000 records/s is some 121,000,000 order ids:
// 29 MB at two bits, where four bytes were 484 MB.
func TestLiveStateStaysSmallOverALongRun(t *testing.T) {
	s := liveState{inputs: []string{"orders", "payments"}}
	ords := &livePart{input: true, conf: orderConf, tent: orderTent}
	pays := &livePart{input: true, conf: paymentConf, tent: paymentTent}
	out := &livePart{}
	const ids, round = 2_000_000, 10_000
	var o, p, w []parsedID
	paid := 0
	buf := make([]byte, 0, 10*round)
	for base := 0; base < ids; base += round {
		o, p, w, buf = o[:0], p[:0], w[:0], buf[:0]
		for i := base; i < base+round; i++ {
			start := len(buf)
			buf = append(buf, "o-"...)
			buf = strconv.AppendInt(buf, int64(1_000_000+i), 10) // o-1000000 on: seven digits, the generator's form
			id := buf[start:len(buf):len(buf)]
			o = append(o, parsedID{off: int64(i), id: id, ok: true})
			if i%20 != 7 { // one order in twenty is never paid
				p = append(p, parsedID{off: int64(paid), id: id, ok: true})
				w = append(w, parsedID{off: int64(paid), id: id, ok: true})
				paid++
			}
		}
		s.addInput(ords, o)
		s.addInput(pays, p)
		s.tentative(ords, int64(base+round))
		s.tentative(pays, int64(paid))
		s.confirm(ords)
		s.confirm(pays)
		s.addOutput(out, w)
	}
	if len(s.ids.other) != 0 {
		t.Fatalf("%d ids not in the generator's form", len(s.ids.other))
	}
	if s.unseenConf != 0 || s.duplicates != 0 || s.committed != paid {
		t.Fatalf("unseen %d, duplicates %d, committed %d of %d", s.unseenConf, s.duplicates, s.committed, paid)
	}
	perID := float64(s.ids.dense.Bytes()) / ids
	t.Logf("%d ids: %d bytes, %.3f bytes an id", ids, s.ids.dense.Bytes(), perID)
	// The chunks of the last compaction period stay open (4 bytes an id):
	// about 700,000 ids here, a third of them. The rest hold two bits.
	if perID > 1.5 {
		t.Fatalf("%.2f bytes an id after %d ids: the table is not packed", perID, ids)
	}
	s.ids.dense.Compact()
	s.ids.dense.Compact() // a period with no record: every chunk is left alone
	if perID := float64(s.ids.dense.Bytes()) / ids; perID > 0.26 {
		t.Fatalf("%.3f bytes an id once every chunk was left alone, want two bits", perID)
	}
}
