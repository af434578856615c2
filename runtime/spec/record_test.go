package spec_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/spec"
)

// A spec that names no id or sink key takes those of the records its
// sinks read; one that does keeps its own.
func TestIDAndSinkKey(t *testing.T) {
	base := lines("name: t", "operators:",
		"  - {name: s, type: source, topic: orders}",
		"  - {name: e, type: enrich, inputs: [{from: s, edge: forward}]}",
		"  - {name: k, type: sink, topic: out, inputs: [{from: e, edge: forward}]}")
	j, err := parse("t.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	rec := orders.Catalogue().RecordOf(j, j.Op("e"))
	if j.ID != rec.ID || j.Op("k").Key != rec.Key || rec.ID == "" || rec.Key == "" {
		t.Errorf("defaults: id %q, key %q; want the records' %q and %q", j.ID, j.Op("k").Key, rec.ID, rec.Key)
	}
	named := strings.Replace(base, "topic: out,", "topic: out, key: tier,", 1) + "id: order_id\n"
	if j, err = parse("t.yaml", []byte(named)); err != nil {
		t.Fatal(err)
	}
	if j.ID != "order_id" || j.Op("k").Key != "tier" {
		t.Errorf("named: id %q, key %q; want order_id and tier", j.ID, j.Op("k").Key)
	}
	// An id must identify the records: the verification counts them by it.
	_, err = parse("t.yaml", []byte(base+"id: customer\n"))
	var e *spec.Error
	if !errors.As(err, &e) || e.Field != "id" || !strings.Contains(e.Msg, `"customer" does not identify the records k (operators[2]) writes`) || !strings.Contains(e.Msg, "identified by order_id") {
		t.Errorf("id: customer: %v", err)
	}
}

func TestOutputFields(t *testing.T) {
	j := orders.Default()
	tests := []struct {
		op   *spec.Operator
		want []string
	}{
		{j.Op("orders-source"), nil},
		{j.Op("parse-orders"), []string{"order_id", "customer", "amount_cents"}},
		{j.Op("parse-payments"), []string{"order_id", "payment_id", "amount_cents"}},
		{j.Op("join"), []string{"order_id", "customer", "amount_cents"}},
		{j.Op("revenue"), []string{"order_id", "customer", "amount_cents", "customer_total_cents"}},
		{&spec.Operator{Name: "e", Type: orders.TypeEnrich}, []string{"order_id", "customer", "amount_cents", "tier"}},
		{j.Op("sink"), nil},
		{nil, nil},
	}
	for _, tc := range tests {
		name := "nil"
		if tc.op != nil {
			name = tc.op.Name
		}
		if got := orders.Catalogue().RecordOf(j, tc.op).Fields; !slices.Equal(got, tc.want) {
			t.Errorf("RecordOf(%s).Fields = %v, want %v", name, got, tc.want)
		}
	}
	// The caller owns the slice.
	orders.Catalogue().RecordOf(j, j.Op("join")).Fields[0] = "changed"
	if orders.Catalogue().RecordOf(j, j.Op("join")).Fields[0] != "order_id" {
		t.Error("RecordOf returned shared storage")
	}
}
