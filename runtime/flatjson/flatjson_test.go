package flatjson

import (
	"encoding/json"
	"testing"
)

// Field.Of reads every record as encoding/json reads it into a struct with
// that field: the same value, and ok exactly when encoding/json decodes it.
func FuzzFieldOfAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"order_id":"o-000001","customer":"c-7","amount_cents":1250}`,
		`{"order_id":"o-000002","payment_id":"p-1","amount_cents":-3}`,
		`{"order_id":"a","order_id":"b"}`,
		`{"Order_ID":"x"}`,
		`{"order_id":12}`,
		`{"order_id":"\u00e9"}`,
		` { "order_id" : "o" } `,
		`{"customer":"c"}`,
		`{}`,
		`[]`,
		`{"order_id":"o"`,
		`not json`,
		`{"order_id":"o","amount_cents":1.5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		id, ok := MustField("order_id").Of(b)
		var want struct {
			OrderID string `json:"order_id"`
		}
		wantOK := json.Unmarshal(b, &want) == nil
		if ok != wantOK {
			t.Fatalf("%q: ok %v, encoding/json %v", b, ok, wantOK)
		}
		if ok && string(id) != want.OrderID {
			t.Fatalf("%q: id %q, encoding/json %q", b, id, want.OrderID)
		}
	})
}

// A field of any name reads as encoding/json reads it; a name a struct tag
// cannot carry is refused.
func TestFieldOfAnyName(t *testing.T) {
	f := MustField("event-id")
	for _, c := range []struct {
		in   string
		want string
		ok   bool
	}{
		{`{"event-id":"e-1","order_id":"o"}`, "e-1", true},
		{`{"EVENT-ID":"e-2"}`, "e-2", true}, // encoding/json folds case
		{`{"order_id":"o"}`, "", true},
		{`{"event-id":7}`, "", false},
	} {
		v, ok := f.Of([]byte(c.in))
		if ok != c.ok || string(v) != c.want {
			t.Errorf("%s: %q %v, want %q %v", c.in, v, ok, c.want, c.ok)
		}
	}
	for _, bad := range []string{"", `a"b`, "a,b", "a b"} {
		if _, err := NewField(bad); err == nil {
			t.Errorf("NewField(%q) accepted", bad)
		}
	}
	if _, ok := (Field{}).Of([]byte(`{"x":"y"}`)); ok {
		t.Error("the zero Field read a value")
	}
}

// The orders job's input records, as its generator writes them.
var (
	OrderLayout   = NewLayout("order_id", "customer", "amount_cents")
	PaymentLayout = NewLayout("order_id", "payment_id", "amount_cents")
)

// The generator's records take the one-pass path and read their members.
func TestLayoutReadsTheGeneratorsText(t *testing.T) {
	x, y, amount, ok := OrderLayout.ReadFast([]byte(`{"order_id":"o-000042","customer":"c-3","amount_cents":990}`))
	if !ok || string(x) != "o-000042" || string(y) != "c-3" || amount != 990 {
		t.Fatalf("read %q %q %d ok %v", x, y, amount, ok)
	}
	if _, _, _, ok := PaymentLayout.ReadFast([]byte(`{"order_id":"o-1","customer":"c","amount_cents":1}`)); ok {
		t.Fatal("a payment layout read an order")
	}
	if _, _, _, err := OrderLayout.Read([]byte(`{"customer":"c","order_id":"o","amount_cents":1}`)); err != nil {
		t.Fatalf("members in another order: %v", err)
	}
}
