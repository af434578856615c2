package orders

import (
	"fmt"
	"slices"
	"strings"

	"github.com/faultline-dev/faultline/runtime/spec"
)

// The operator types of the orders job (spec.Kind), besides source and
// sink.
const (
	TypeParse     = "parse"     // decodes raw bytes as an order or a payment
	TypeJoin      = "join"      // matches each payment to its order (keyed state)
	TypeAggregate = "aggregate" // keeps a running total per customer (keyed state)
	TypeEnrich    = "enrich"    // decodes raw order bytes and adds a tier
)

// Schemas a parse operator can decode.
const (
	SchemaOrder   = "order"
	SchemaPayment = "payment"
)

// What the job's verification checks: which records the committed output
// of the sink must hold exactly once.
const (
	VerifyPaidOrders = "paid-orders" // every paid order (jobs with a join)
	VerifyOrders     = "orders"      // every order (jobs without a join)
)

// The fields of the job's records.
const (
	fieldID       = "order_id"
	fieldCustomer = "customer"
	fieldAmount   = "amount_cents"
)

// Catalogue is what the orders job brings to its specs: its operator
// kinds, its input's topics and its verify kinds.
func Catalogue() spec.Catalogue {
	return spec.Catalogue{
		Kinds:    []spec.Kind{parseKind{}, joinKind{}, aggregateKind{}, enrichKind{}},
		Inputs:   []string{TopicOrders, TopicPayments},
		Verifies: []string{VerifyPaidOrders, VerifyOrders},
		Relations: map[string]spec.Relation{
			VerifyPaidOrders: {Inputs: []string{TopicOrders, TopicPayments}, Joined: true},
			VerifyOrders:     {Inputs: []string{TopicOrders}},
		},
		CheckSink: checkSink,
		Finish:    finish,
	}
}

// record is what op's records carry.
func record(job *spec.Job, op *spec.Operator) spec.Record {
	return Catalogue().RecordOf(job, op)
}

// orderRecord is a record with the fields of an order and more.
func orderRecord(more ...string) spec.Record {
	return spec.Record{Fields: append([]string{fieldID, fieldCustomer, fieldAmount}, more...), ID: fieldID, Key: fieldCustomer}
}

// describeOp says what an operator is, for messages: "a source of
// payments", "a parse of orders", "a join".
func describeOp(o *spec.Operator) string {
	switch o.Type {
	case spec.TypeSource:
		return "a source of " + o.Topic
	case TypeParse:
		return "a parse of " + o.Schema + "s"
	}
	return spec.Article(o.Type)
}

// problem is a spec.Problem with op's field.
func problem(field, format string, args ...any) *spec.Problem {
	return &spec.Problem{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// kind is what the job's kinds share: they take no optional key unless
// they say so, and check nothing of their keys.
type kind struct{}

func (kind) Takes(string) bool                      { return false }
func (kind) CheckKeys(*spec.Operator) *spec.Problem { return nil }
func (kind) Describe(op *spec.Operator) string      { return describeOp(op) }

// parseKind decodes the raw bytes of a source of orders or payments.
type parseKind struct{ kind }

func (parseKind) Name() string          { return TypeParse }
func (parseKind) Inputs() (int, string) { return 1, "exactly one input (a source)" }
func (parseKind) Takes(key string) bool { return key == "schema" }
func (parseKind) CheckKeys(op *spec.Operator) *spec.Problem {
	switch op.Schema {
	case "":
		return problem("schema", "required for a parse: %s or %s", SchemaOrder, SchemaPayment)
	case SchemaOrder, SchemaPayment:
		return nil
	}
	return problem("schema", "must be %s or %s, got %q", SchemaOrder, SchemaPayment, op.Schema)
}

func (parseKind) Check(job *spec.Job, op *spec.Operator) *spec.Problem {
	up := job.Op(op.Inputs[0].From)
	if up.Type != spec.TypeSource {
		return problem("inputs[0].from", "a parse decodes the raw bytes a source reads, so its input must be a source; %s is %s", up.Name, describeOp(up))
	}
	if want := schemaOf(up.Topic); op.Schema != want {
		return problem("schema", "schema %s does not match topic %s, which %s reads; use schema %s", op.Schema, up.Topic, up.Name, want)
	}
	return nil
}

func (parseKind) Record(_ *spec.Job, op *spec.Operator) spec.Record {
	if op.Schema == SchemaPayment {
		return spec.Record{Fields: []string{fieldID, "payment_id", fieldAmount}, ID: fieldID}
	}
	return orderRecord()
}

// schemaOf is the schema of the records in a source topic.
func schemaOf(topic string) string {
	if topic == TopicPayments {
		return SchemaPayment
	}
	return SchemaOrder
}

// enrichKind decodes raw orders and adds their tier.
type enrichKind struct{ kind }

func (enrichKind) Name() string          { return TypeEnrich }
func (enrichKind) Inputs() (int, string) { return 1, "exactly one input (a source of orders)" }
func (enrichKind) Check(job *spec.Job, op *spec.Operator) *spec.Problem {
	if up := job.Op(op.Inputs[0].From); up.Type != spec.TypeSource || up.Topic != TopicOrders {
		return problem("inputs[0].from", "enrich decodes raw order records, so its input must be a source reading topic %s; %s is %s", TopicOrders, up.Name, describeOp(up))
	}
	return nil
}
func (enrichKind) Record(*spec.Job, *spec.Operator) spec.Record { return orderRecord("tier") }

// aggregateKind keeps each customer's running total.
type aggregateKind struct{ kind }

func (aggregateKind) Name() string          { return TypeAggregate }
func (aggregateKind) Inputs() (int, string) { return 1, "exactly one input (a hash edge)" }
func (aggregateKind) Check(job *spec.Job, op *spec.Operator) *spec.Problem {
	in := op.Inputs[0]
	if in.Edge != spec.Hash {
		return problem("inputs[0].edge", "an aggregate keeps its totals in keyed state, so its input must be a hash edge, got %s", in.Edge)
	}
	up := job.Op(in.From)
	if fields := record(job, up).Fields; !slices.Contains(fields, fieldCustomer) || !slices.Contains(fields, fieldAmount) {
		return problem("inputs[0].from", "an aggregate sums amount_cents per customer, so its input must carry both; %s's records have %s", up.Name, strings.Join(fields, ", "))
	}
	return nil
}
func (aggregateKind) Record(*spec.Job, *spec.Operator) spec.Record {
	return orderRecord("customer_total_cents")
}

// joinKind matches each payment to its order, in keyed state.
type joinKind struct{ kind }

func (joinKind) Name() string { return TypeJoin }
func (joinKind) Inputs() (int, string) {
	return 2, "exactly two inputs (the orders first, then the payments)"
}
func (joinKind) Takes(key string) bool                        { return key == "state_ttl" }
func (joinKind) Record(*spec.Job, *spec.Operator) spec.Record { return orderRecord() }

// Check checks the two inputs of a join: orders first, payments second,
// both hash edges keyed by order_id so that an order and its payment meet
// in the same subtask.
func (joinKind) Check(job *spec.Job, op *spec.Operator) *spec.Problem {
	ups := []*spec.Operator{job.Op(op.Inputs[0].From), job.Op(op.Inputs[1].From)}
	isOrders := func(o *spec.Operator) bool { return o.Type == TypeParse && o.Schema == SchemaOrder }
	isPayments := func(o *spec.Operator) bool { return o.Type == TypeParse && o.Schema == SchemaPayment }
	if !isOrders(ups[0]) {
		if isPayments(ups[0]) && isOrders(ups[1]) {
			return problem("inputs[0].from", "a join reads the orders first and the payments second; swap the two inputs")
		}
		return problem("inputs[0].from", "a join's first input must be the orders (a parse with schema order); %s is %s", ups[0].Name, describeOp(ups[0]))
	}
	if !isPayments(ups[1]) {
		return problem("inputs[1].from", "a join's second input must be the payments (a parse with schema payment); %s is %s", ups[1].Name, describeOp(ups[1]))
	}
	for k, in := range op.Inputs {
		if in.Edge != spec.Hash {
			return problem(fmt.Sprintf("inputs[%d].edge", k), "a join keeps orders and payments in keyed state, so both inputs must be hash edges keyed by order_id, got %s", in.Edge)
		}
	}
	for k, in := range op.Inputs {
		if in.Key != fieldID {
			return problem(fmt.Sprintf("inputs[%d].key", k), "a join matches each payment to its order, so both inputs must use the same key, order_id; got %s", in.Key)
		}
	}
	return nil
}

// checkSink holds a sink to the orders: the verification expects orders
// in its output (paid ones, or all).
func checkSink(job *spec.Job, sink *spec.Operator) *spec.Problem {
	up := job.Op(sink.Inputs[0].From)
	if up.Type == spec.TypeSource {
		return problem("inputs[0].from", "a sink writes decoded records as JSON, but %s is %s and emits raw bytes; put a parse (or an enrich) between them", up.Name, describeOp(up))
	}
	if fields := record(job, up).Fields; !slices.Contains(fields, fieldID) || !slices.Contains(fields, fieldCustomer) {
		return problem("inputs[0].from", "the verification expects the orders in a sink's output; %s's records have %s; read from an operator whose records carry order_id and customer", up.Name, strings.Join(fields, ", "))
	}
	return nil
}

// finish takes the job's verify kind from its operators when the spec
// names none: every paid order with a join, every order without one; and
// refuses one that does not fit them.
func finish(job *spec.Job) *spec.Problem {
	joins := slices.ContainsFunc(job.Operators, func(o *spec.Operator) bool { return o.Type == TypeJoin })
	switch {
	case job.Verify == "" && joins:
		job.Verify = VerifyPaidOrders
	case job.Verify == "":
		job.Verify = VerifyOrders
	case job.Verify == VerifyOrders && joins:
		return problem("verify", "%s means every order reaches the sink, but a join passes only the orders that were paid; use verify: %s", VerifyOrders, VerifyPaidOrders)
	case job.Verify == VerifyPaidOrders && !joins:
		return problem("verify", "%s means only paid orders reach the sink, but without a join every order does; use verify: %s", VerifyPaidOrders, VerifyOrders)
	}
	return nil
}
