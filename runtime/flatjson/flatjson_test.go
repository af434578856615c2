package flatjson

import (
	"encoding/json"
	"testing"
)

// OrderIDOf reads every record as encoding/json reads it into a struct with
// an order_id: the same id, and ok exactly when encoding/json decodes it.
func FuzzOrderIDOfAgreesWithEncodingJSON(f *testing.F) {
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
		id, ok := OrderIDOf(b)
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
