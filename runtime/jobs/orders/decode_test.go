package orders

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The hand scanner must agree with encoding/json on every input: same
// verdict, same values.
func FuzzDecodeOrderAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"order_id":"o-000123","customer":"c-17","amount_cents":1299}`,
		`{"order_id":"o-1","customer":"c-1","amount_cents":-5}`,
		` { "amount_cents" : 7 , "order_id":"x","customer":"y" } `,
		`{"order_id":"o\u00e9","customer":"c","amount_cents":1}`,
		`{"order_id":"o","customer":"c","amount_cents":1.5}`,
		`{"order_id":1,"customer":"c","amount_cents":1}`,
		`{"order_id":"o","customer":"c","amount_cents":01}`,
		`{"order_id":"o","customer":"c","amount_cents":1}x`,
		`{"order_id":"o","customer":"c","amount_cents":1,}`,
		`{}`, `[]`, `not json`, `{"a":{"b":1}}`, `{"order_id":"o","order_id":"p"}`,
		// Near the generator's layout, which Layout.ReadFast reads itself.
		`{"order_id":"o","customer":"c","amount_cents":-0}`,
		`{"order_id":"o","customer":"c","amount_cents":-}`,
		`{"order_id":"o","customer":"c","amount_cents":}`,
		`{"order_id":"o","customer":"c","amount_cents":1 }`,
		`{"order_id":"o","customer":"c","amount_cents":1} `,
		`{"order_id":"o","customer":"c","amount_cents":1}}`,
		`{"order_id":"o","customer":"c","amount_cents":1e3}`,
		`{"order_id":"o","customer":"c","amount_cents":1234567890123456789}`,
		`{"order_id":"o","customer":"c\"","amount_cents":1}`,
		`{"order_id":"o","customer":"c\u0041","amount_cents":1}`,
		`{"order_id":"o","customer":"c","amount_cents":1,"amount_cents":2}`,
		`{"order_id":"o","payment_id":"p","amount_cents":1}`,
		`{"order_id":"o","Customer":"c","amount_cents":1}`,
		`{"order_id":"","customer":"","amount_cents":0}`,
		`{"order_id":"o","customer":"c","amount_cents"`,
		`{"order_id":"o`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast, slow Order
		errFast := unmarshalOrder(b, &fast, nil)
		errSlow := json.Unmarshal(b, &slow)
		if (errFast == nil) != (errSlow == nil) {
			t.Fatalf("%q: scanner says %v, encoding/json says %v", b, errFast, errSlow)
		}
		if errFast == nil && fast != slow {
			t.Fatalf("%q: scanner %+v, encoding/json %+v", b, fast, slow)
		}
		var pf, ps Payment
		errFast = unmarshalPayment(b, &pf, nil)
		errSlow = json.Unmarshal(b, &ps)
		if (errFast == nil) != (errSlow == nil) || errFast == nil && pf != ps {
			t.Fatalf("%q as a payment: scanner %+v %v, encoding/json %+v %v", b, pf, errFast, ps, errSlow)
		}
	})
}

func BenchmarkDecodeOrder(b *testing.B) {
	in := []byte(`{"order_id":"o-000123","customer":"c-17","amount_cents":1299}`)
	b.Run("scanner", func(b *testing.B) {
		var o Order
		for i := 0; i < b.N; i++ {
			unmarshalOrder(in, &o, nil)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		var o Order
		for i := 0; i < b.N; i++ {
			json.Unmarshal(in, &o)
		}
	})
}

// The sink's values are JSON whatever the strings hold: the fast path for
// plain ASCII and encoding/json for the rest both give what
// encoding/json reads back.
func TestAppendJSONStringIsJSON(t *testing.T) {
	for _, s := range []string{"", "c-17", `say "hi"`, `back\slash`, "tab\there", "nul\x00", "del\x7f", "é", "\u2028", "<&>"} {
		b := appendJSONString([]byte("x"), s)
		var got string
		if err := json.Unmarshal(b[1:], &got); err != nil || got != s || b[0] != 'x' {
			t.Errorf("%q encoded as %s: read back %q, %v", s, b, got, err)
		}
	}
	// Bytes that are not UTF-8 turn into U+FFFD, as encoding/json writes them.
	var got string
	if err := json.Unmarshal(appendJSONString(nil, "a\xffb"), &got); err != nil || got != "a\uFFFDb" {
		t.Errorf("invalid UTF-8: %q, %v", got, err)
	}
	if got := string(appendJSONString(nil, "c-17")); got != `"c-17"` {
		t.Errorf("plain ASCII: %s", got)
	}
}

// Strings a parse subtask decodes share blocks: each keeps its bytes
// however many records come after it, long and empty ones included.
func TestTextKeepsEveryString(t *testing.T) {
	var tx text
	type pair struct{ a, b string }
	var got, want []pair
	for i := 0; i < 5000; i++ {
		a := fmt.Sprintf("o-%06d", i)
		b := strings.Repeat("c", i%(2*textMax))
		if i%7 == 0 {
			a = ""
		}
		x, y := tx.two([]byte(a), []byte(b))
		got = append(got, pair{x, y})
		want = append(want, pair{a, b})
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pair %d = %q, want %q", i, got[i], want[i])
		}
	}
	var none *text
	if x, y := none.two([]byte("a"), []byte("b")); x != "a" || y != "b" {
		t.Fatalf("nil text: %q %q", x, y)
	}
}

// Every record the generator writes takes Layout.ReadFast's one pass (if one
// did not, the scanner would still read it, and only the speed would
// tell), and reads as encoding/json reads it.
func TestGeneratorRecordsTakeTheLayoutPath(t *testing.T) {
	g := NewGenerator(7, 2_000, GeneratorPartitions)
	n := 0
	for _, topic := range []string{TopicOrders, TopicPayments} {
		l := orderLayout
		if topic == TopicPayments {
			l = paymentLayout
		}
		for p := 0; p < GeneratorPartitions; p++ {
			for off := int64(0); off < g.EndOffset(topic, p); off++ {
				b, ok := g.Read(topic, p, off)
				if !ok {
					t.Fatalf("%s/%d: no record at offset %d before the end", topic, p, off)
				}
				x, y, amount, ok := l.ReadFast(b)
				if !ok {
					t.Fatalf("%s/%d@%d: %s does not take the layout path", topic, p, off, b)
				}
				var want map[string]any
				if err := json.Unmarshal(b, &want); err != nil {
					t.Fatal(err)
				}
				if string(x) != want[l.First] || string(y) != want[l.Second] || float64(amount) != want["amount_cents"] {
					t.Fatalf("%s: layout path read %q %q %d", b, x, y, amount)
				}
				n++
			}
		}
	}
	if n < 1_500 {
		t.Fatalf("read only %d records", n)
	}
}
