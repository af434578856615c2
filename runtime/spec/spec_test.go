package spec_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/spec"
)

// parse and load read a spec of the orders job, whose kinds the specs of
// these tests use (the parser's own rules are the same for every job).
func parse(file string, data []byte) (*spec.Job, error) {
	return spec.Parse(file, data, orders.Catalogue())
}

func load(path string) (*spec.Job, error) { return spec.Load(path, orders.Catalogue()) }

// lines joins its arguments as the lines of a file, so that a test can count
// them: the first argument is line 1.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// Operators reused by the table below. Each is a block of lines.
var (
	srcOrders   = []string{"  - name: orders-source", "    type: source", "    topic: orders", "    parallelism: 2"}
	srcPayments = []string{"  - name: payments-source", "    type: source", "    topic: payments", "    parallelism: 2"}
	parseOrders = []string{"  - name: parse-orders", "    type: parse", "    schema: order", "    parallelism: 2", "    inputs:", "      - {from: orders-source, edge: forward}"}
	parsePays   = []string{"  - name: parse-payments", "    type: parse", "    schema: payment", "    parallelism: 2", "    inputs:", "      - {from: payments-source, edge: forward}"}
)

// job builds a spec: a header, then blocks of operator lines.
func job(header []string, ops ...[]string) string {
	all := slices.Clone(header)
	for _, op := range ops {
		all = append(all, op...)
	}
	return lines(all...)
}

// joinHeader is the first two lines of a spec.
var joinHeader = []string{"name: t", "operators:"}

// withPrefix puts the two sources and the two parses on lines 1-22 before
// ops, so that the first of ops starts on line 23 as operators[4].
func withPrefix(ops ...[]string) string {
	return job(joinHeader, append([][]string{srcOrders, srcPayments, parseOrders, parsePays}, ops...)...)
}

func TestParseErrors(t *testing.T) {
	sinkFrom := func(from string) []string {
		return []string{"  - name: out", "    type: sink", "    topic: results", "    inputs:", "      - {from: " + from + ", edge: rebalance}"}
	}
	joinOps := func(in0, in1 string) []string {
		return []string{"  - name: join", "    type: join", "    parallelism: 2", "    inputs:", "      - " + in0, "      - " + in1}
	}
	okJoin := joinOps("{from: parse-orders, edge: hash, key: order_id}", "{from: parse-payments, edge: hash, key: order_id}")

	tests := []struct {
		name  string
		yaml  string
		line  int
		field string
		msg   string
	}{
		// The file as a whole.
		{"empty file", "", 1, "", "the file is empty"},
		{"only comments", "# nothing here\n", 1, "", "the file is empty"},
		{"only a document marker", "---\n", 1, "", "no content"},
		{"not a mapping", lines("- a", "- b"), 1, "", "must be a mapping with keys name, max_parallelism, verify, id, operators, got a list"},
		{"a plain word", "orders\n", 1, "", `got "orders"`},
		{"yaml syntax", lines("name: t", "b: 2", "c 2", "d: 3"), 3, "", "invalid YAML: could not find expected ':'"},
		{"bad indentation", lines("name: t", "  oops: 1"), 2, "", "invalid YAML: mapping values are not allowed"},
		{"tab indentation", lines("name: t", "operators:", "\t- name: x"), 3, "", "indented with a tab; YAML needs spaces"},
		{"unclosed bracket", lines("name: t", "operators: [a,"), 2, "", "invalid YAML:"},
		{"unclosed quote", lines("name: t", `verify: "orders`), 2, "", "left open"},
		{"unknown alias", lines("name: t", "verify: *v"), 2, "", "alias *v refers to no anchor &v"},
		{"control character", "name: t\nverify: \x01\n", 2, "", "control characters"},
		{"not utf-8", "name: t\nverify: \xff\n", 2, "", "not UTF-8"},
		{"two documents", lines("name: a", "---", "name: b"), 2, "", "another one here"},

		// Top-level keys.
		{"unknown top key", lines("name: t", "paralelism: 2"), 2, "paralelism", `unknown key "paralelism" (allowed: name, max_parallelism, verify, id, operators)`},
		{"duplicate top key", lines("name: t", "name: u"), 2, "name", "given twice (first at line 1)"},
		{"job name missing", lines("verify: orders", "operators: []"), 1, "name", "required"},
		{"job name empty", lines(`name: ""`), 1, "name", "must not be empty"},
		{"job name null", lines("name:", "operators: []"), 1, "name", "required"},
		{"job name with space", lines("name: my job"), 1, "name", "use only letters, digits"},
		{"job name a list", lines("name: [a, b]"), 1, "name", "must be a single word, got a list"},
		{"max_parallelism zero", lines("name: t", "max_parallelism: 0"), 2, "max_parallelism", "must be a whole number from 1 to 32768, got 0"},
		{"max_parallelism too big", lines("name: t", "max_parallelism: 40000"), 2, "max_parallelism", "from 1 to 32768, got 40000"},
		{"max_parallelism text", lines("name: t", "max_parallelism: lots"), 2, "max_parallelism", `got "lots"`},
		{"max_parallelism fraction", lines("name: t", "max_parallelism: 2.5"), 2, "max_parallelism", "got 2.5"},
		{"verify unknown", lines("name: t", "verify: exactly-once"), 2, "verify", `must be paid-orders or orders (or false: no verification), got "exactly-once"`},
		{"operators missing", lines("name: t"), 1, "operators", "required"},
		{"operators not a list", lines("name: t", "operators:", "  a: 1"), 3, "operators", "must be a list of operators, got a mapping"},
		{"operators empty", lines("name: t", "operators: []"), 2, "operators", "the list is empty"},

		// spec.Operator fields.
		{"operator not a mapping", lines("name: t", "operators:", "  - source"), 3, "operators[0]", `must be a mapping with keys name, type, parallelism, topic, key, schema, state_ttl, watermark_alignment, inputs, got "source"`},
		{"state_ttl on a source", job(joinHeader, []string{"  - name: s", "    type: source", "    topic: orders", "    state_ttl: 1m"}), 6, "operators[0].state_ttl", "only join operators keep records waiting"},
		{"state_ttl not a duration", job(joinHeader, []string{"  - name: s", "    type: join", "    state_ttl: soon"}), 5, "operators[0].state_ttl", `must be a duration such as 1m or 30s (0: keep for ever), got "soon"`},
		{"state_ttl negative", job(joinHeader, []string{"  - name: s", "    type: join", "    state_ttl: -1s"}), 5, "operators[0].state_ttl", "must be a duration"},
		{"watermark_alignment on a join", job(joinHeader, []string{"  - name: s", "    type: join", "    watermark_alignment: 1s"}), 5, "operators[0].watermark_alignment", "only sources read ahead of one another; remove it from this join"},
		{"watermark_alignment not a duration", job(joinHeader, []string{"  - name: s", "    type: source", "    topic: orders", "    watermark_alignment: 8000"}), 6, "operators[0].watermark_alignment", `must be a duration such as 1s or 500ms`},
		{"watermark_alignment under a millisecond", job(joinHeader, []string{"  - name: s", "    type: source", "    topic: orders", "    watermark_alignment: 10us"}), 6, "operators[0].watermark_alignment", "less than the 1ms"},
		{"unknown operator key", job(joinHeader, []string{"  - name: s", "    type: source", "    paralellism: 2"}), 5, "operators[0].paralellism", `unknown key "paralellism" (allowed: name, type, parallelism, topic, key, schema, state_ttl, watermark_alignment, inputs)`},
		{"operator name missing", job(joinHeader, []string{"  - type: source", "    topic: orders"}), 3, "operators[0].name", "required"},
		{"operator name with slash", job(joinHeader, []string{"  - name: a/b"}), 3, "operators[0].name", `"a/b": use only letters`},
		{"duplicate operator name", job(joinHeader, srcOrders, srcOrders), 7, "operators[1].name", `"orders-source" is already the name of operators[0] (line 3)`},
		{"type missing", job(joinHeader, []string{"  - name: s", "    topic: orders"}), 3, "operators[0].type", "required: one of source, parse, join, aggregate, enrich, sink"},
		{"type unknown", job(joinHeader, []string{"  - name: s", "    type: sorce"}), 4, "operators[0].type", `unknown type "sorce" (types: source, parse, join, aggregate, enrich, sink)`},
		{"parallelism text", withPrefix([]string{"  - name: out", "    type: sink", "    parallelism: two"}), 25, "operators[4].parallelism", `must be a whole number from 1 to 128, got "two"`},
		{"parallelism zero", job(joinHeader, []string{"  - name: s", "    type: source", "    parallelism: 0"}), 5, "operators[0].parallelism", "from 1 to 128, got 0"},
		{"parallelism negative", job(joinHeader, []string{"  - name: s", "    type: source", "    parallelism: -3"}), 5, "operators[0].parallelism", "got -3"},
		{"parallelism a list", job(joinHeader, []string{"  - name: s", "    type: source", "    parallelism: [2]"}), 5, "operators[0].parallelism", "got a list"},
		{"parallelism over max", job([]string{"name: t", "max_parallelism: 8", "operators:"}, []string{"  - name: s", "    type: source", "    parallelism: 9"}), 6, "operators[0].parallelism", "from 1 to 8, got 9; raise max_parallelism (now 8)"},
		{"parallelism over max, max after operators", lines("name: t", "operators:", "  - name: s", "    type: source", "    parallelism: 9", "max_parallelism: 8"), 5, "operators[0].parallelism", "from 1 to 8, got 9"},

		// Topics and schemas.
		{"source without topic", job(joinHeader, []string{"  - name: s", "    type: source"}), 3, "operators[0].topic", "required for a source"},
		{"source of unknown topic", job(joinHeader, []string{"  - name: s", "    type: source", "    topic: clicks"}), 5, "operators[0].topic", `a source reads orders or payments (the topics of the job's input), got "clicks"`},
		{"source with inputs", job(joinHeader, srcOrders, []string{"  - name: s2", "    type: source", "    topic: orders", "    inputs:", "      - {from: orders-source, edge: forward}"}), 10, "operators[1].inputs", "takes no inputs"},
		{"source with schema", job(joinHeader, []string{"  - name: s", "    type: source", "    topic: orders", "    schema: order"}), 6, "operators[0].schema", "only parse operators have a schema"},
		{"sink without topic", withPrefix([]string{"  - name: out", "    type: sink"}), 23, "operators[4].topic", "required for a sink"},
		{"sink into a source topic", withPrefix([]string{"  - name: out", "    type: sink", "    topic: orders"}), 25, "operators[4].topic", "must not write to orders"},
		{"sink topic not a kafka name", withPrefix([]string{"  - name: out", "    type: sink", "    topic: my results"}), 25, "operators[4].topic", `"my results" is not a Kafka topic name`},
		{"topic on a parse", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse", "    topic: orders"}), 9, "operators[1].topic", "only sources and sinks have a topic"},
		{"parse without schema", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse"}), 7, "operators[1].schema", "required for a parse: order or payment"},
		{"parse with unknown schema", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse", "    schema: orders"}), 9, "operators[1].schema", `must be order or payment, got "orders"`},
		{"parse schema does not match topic", job(joinHeader, srcPayments, []string{"  - name: p", "    type: parse", "    schema: order", "    parallelism: 2", "    inputs:", "      - {from: payments-source, edge: forward}"}), 9, "operators[1].schema", "schema order does not match topic payments, which payments-source reads; use schema payment"},

		// Inputs, one at a time.
		{"inputs missing", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse", "    schema: order"}), 7, "operators[1].inputs", "required: a parse reads exactly one input"},
		{"inputs not a list", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse", "    schema: order", "    inputs: orders-source"}), 10, "operators[1].inputs", `must be a list of inputs, got "orders-source"`},
		{"input not a mapping", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse", "    schema: order", "    inputs:", "      - orders-source"}), 11, "operators[1].inputs[0]", "must be a mapping with keys from, edge, key"},
		{"unknown input key", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse", "    schema: order", "    inputs:", "      - from: orders-source", "        edge: forward", "        partitioner: x"}), 13, "operators[1].inputs[0].partitioner", `unknown key "partitioner" (allowed: from, edge, key)`},
		{"from missing", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse", "    schema: order", "    inputs:", "      - {edge: forward}"}), 11, "operators[1].inputs[0].from", "required"},
		{"from unknown", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse", "    schema: order", "    inputs:", "      - {from: order-source, edge: forward}"}), 11, "operators[1].inputs[0].from", `unknown operator "order-source" (defined above: orders-source)`},
		{"from defined later", lines("name: t", "operators:", "  - name: p", "    type: parse", "    schema: order", "    inputs:", "      - {from: orders-source, edge: forward}", "  - name: orders-source", "    type: source", "    topic: orders"), 7, "operators[0].inputs[0].from", "orders-source is defined after p"},
		{"from itself", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse", "    schema: order", "    inputs:", "      - {from: p, edge: forward}"}), 11, "operators[1].inputs[0].from", "p cannot read from itself"},
		{"from a sink", withPrefix(sinkFrom("parse-orders"), []string{"  - name: more", "    type: sink", "    topic: more", "    inputs:", "      - {from: out, edge: forward}"}), 32, "operators[5].inputs[0].from", "out is a sink: it writes to Kafka and has no output to read"},
		{"edge missing", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse", "    schema: order", "    inputs:", "      - {from: orders-source}"}), 11, "operators[1].inputs[0].edge", "required: how records travel from orders-source: forward, hash, rebalance, broadcast"},
		{"edge unknown", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse", "    schema: order", "    inputs:", "      - {from: orders-source, edge: shuffle}"}), 11, "operators[1].inputs[0].edge", `unknown edge "shuffle" (edges: forward, hash, rebalance, broadcast)`},
		{"key on a rebalance edge", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse", "    schema: order", "    inputs:", "      - from: orders-source", "        edge: rebalance", "        key: order_id"}), 13, "operators[1].inputs[0].key", "key only applies to hash edges, and this edge is rebalance"},
		{"hash edge from a source", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse", "    schema: order", "    inputs:", "      - from: orders-source", "        edge: hash", "        key: order_id"}), 12, "operators[1].inputs[0].edge", "orders-source is a source and emits raw bytes; parse it first"},
		{"hash edge without key", withPrefix([]string{"  - name: agg", "    type: aggregate", "    inputs:", "      - {from: parse-orders, edge: hash}"}), 26, "operators[4].inputs[0].key", "required for a hash edge: the field of parse-orders to key by (fields: order_id, customer, amount_cents)"},
		{"hash key not a field", withPrefix([]string{"  - name: agg", "    type: aggregate", "    inputs:", "      - from: parse-orders", "        edge: hash", "        key: ordr_id"}), 28, "operators[4].inputs[0].key", `"ordr_id" is not a field of parse-orders (fields: order_id, customer, amount_cents)`},
		{"forward parallelism differs", withPrefix([]string{"  - name: agg", "    type: aggregate", "    parallelism: 3", "    inputs:", "      - {from: parse-orders, edge: forward}"}), 27, "operators[4].inputs[0].edge", "forward edge parse-orders[2] → agg[3] needs equal parallelism; use rebalance or hash"},
		{"forward parallelism defaulted", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse", "    schema: order", "    inputs:", "      - {from: orders-source, edge: forward}"}), 11, "operators[1].inputs[0].edge", "forward edge orders-source[2] → p[1] needs equal parallelism"},

		// Inputs against the operator's type.
		{"parse with two inputs", job(joinHeader, srcOrders, []string{"  - name: p", "    type: parse", "    schema: order", "    parallelism: 2", "    inputs:", "      - {from: orders-source, edge: forward}", "      - {from: orders-source, edge: rebalance}"}), 11, "operators[1].inputs", "a parse reads exactly one input (a source), got 2"},
		{"parse from a parse", withPrefix([]string{"  - name: p2", "    type: parse", "    schema: order", "    parallelism: 2", "    inputs:", "      - {from: parse-orders, edge: forward}"}), 28, "operators[4].inputs[0].from", "its input must be a source; parse-orders is a parse of orders"},
		{"enrich from payments", job(joinHeader, srcPayments, []string{"  - name: e", "    type: enrich", "    parallelism: 2", "    inputs:", "      - {from: payments-source, edge: forward}"}), 11, "operators[1].inputs[0].from", "must be a source reading topic orders; payments-source is a source of payments"},
		{"enrich from a parse", withPrefix([]string{"  - name: e", "    type: enrich", "    parallelism: 2", "    inputs:", "      - {from: parse-orders, edge: forward}"}), 27, "operators[4].inputs[0].from", "parse-orders is a parse of orders"},
		{"enrich with no inputs", job(joinHeader, srcOrders, []string{"  - name: e", "    type: enrich", "    inputs: []"}), 9, "operators[1].inputs", "an enrich reads exactly one input (a source of orders), got 0"},
		{"aggregate over rebalance", withPrefix([]string{"  - name: agg", "    type: aggregate", "    parallelism: 2", "    inputs:", "      - {from: parse-orders, edge: rebalance}"}), 27, "operators[4].inputs[0].edge", "its input must be a hash edge, got rebalance"},
		{"aggregate of payments", withPrefix([]string{"  - name: agg", "    type: aggregate", "    inputs:", "      - {from: parse-payments, edge: hash, key: order_id}"}), 26, "operators[4].inputs[0].from", "sums amount_cents per customer, so its input must carry both; parse-payments's records have order_id, payment_id, amount_cents"},
		{"join with one input", withPrefix([]string{"  - name: join", "    type: join", "    inputs:", "      - {from: parse-orders, edge: hash, key: order_id}"}), 25, "operators[4].inputs", "a join reads exactly two inputs (the orders first, then the payments), got 1"},
		{"join inputs swapped", withPrefix(joinOps("{from: parse-payments, edge: hash, key: order_id}", "{from: parse-orders, edge: hash, key: order_id}")), 27, "operators[4].inputs[0].from", "swap the two inputs"},
		{"join of orders twice", withPrefix(joinOps("{from: parse-orders, edge: hash, key: order_id}", "{from: parse-orders, edge: hash, key: order_id}")), 28, "operators[4].inputs[1].from", "second input must be the payments (a parse with schema payment); parse-orders is a parse of orders"},
		{"join of a source", withPrefix(joinOps("{from: orders-source, edge: rebalance}", "{from: parse-payments, edge: hash, key: order_id}")), 27, "operators[4].inputs[0].from", "first input must be the orders (a parse with schema order); orders-source is a source of orders"},
		{"join over forward", withPrefix(joinOps("{from: parse-orders, edge: hash, key: order_id}", "{from: parse-payments, edge: forward}")), 28, "operators[4].inputs[1].edge", "both inputs must be hash edges keyed by order_id, got forward"},
		{"join keys differ", withPrefix(joinOps("{from: parse-orders, edge: hash, key: order_id}", "{from: parse-payments, edge: hash, key: amount_cents}")), 28, "operators[4].inputs[1].key", "both inputs must use the same key, order_id; got amount_cents"},
		{"join by customer", withPrefix(joinOps("{from: parse-orders, edge: hash, key: customer}", "{from: parse-payments, edge: hash, key: order_id}")), 27, "operators[4].inputs[0].key", "same key, order_id; got customer"},
		{"join key not in payments", withPrefix(joinOps("{from: parse-orders, edge: hash, key: customer}", "{from: parse-payments, edge: hash, key: customer}")), 28, "operators[4].inputs[1].key", `"customer" is not a field of parse-payments (fields: order_id, payment_id, amount_cents)`},
		{"sink with two inputs", withPrefix(okJoin, []string{"  - name: out", "    type: sink", "    topic: results", "    inputs:", "      - {from: join, edge: rebalance}", "      - {from: parse-orders, edge: rebalance}"}), 32, "operators[5].inputs", "a sink reads exactly one input, got 2"},

		// The job as a whole.
		{"no sink", job(joinHeader, srcOrders), 2, "operators", "the job has no sink"},
		{"output read by nobody", job(joinHeader, srcOrders, srcPayments, parseOrders, []string{"  - name: out", "    type: sink", "    topic: results", "    inputs:", "      - {from: parse-orders, edge: rebalance}"}), 7, "operators[1]", "nothing reads the output of payments-source"},
		{"verify orders with a join", withPrefix(okJoin, sinkFrom("join")) + "verify: orders\n", 34, "verify", "a join passes only the orders that were paid; use verify: paid-orders"},
		{"verify paid-orders without a join", job([]string{"name: t", "verify: paid-orders", "operators:"}, srcOrders, parseOrders, sinkFrom("parse-orders")), 2, "verify", "without a join every order does; use verify: orders"},
		{"sink straight from a source", job(joinHeader, srcOrders, sinkFrom("orders-source")), 11, "operators[1].inputs[0].from", "orders-source is a source of orders and emits raw bytes; put a parse (or an enrich) between them"},
		{"sink from payments", withPrefix(sinkFrom("parse-payments")), 27, "operators[4].inputs[0].from", "parse-payments's records have order_id, payment_id, amount_cents"},
		{"sink key not a field", job(joinHeader, srcOrders, parseOrders, append(sinkFrom("parse-orders"), "    key: tier")), 18, "operators[2].key", `parse-orders's records have no field "tier"; key by one of order_id, customer, amount_cents`},
		{"key on a parse", job(joinHeader, srcOrders, append(slices.Clone(parseOrders), "    key: customer"), sinkFrom("parse-orders")), 13, "operators[1].key", "only a sink keys the records it writes"},
		{"id not a field", job([]string{"name: t", "id: payment_id", "operators:"}, srcOrders, parseOrders, sinkFrom("parse-orders")), 2, "id", `out (operators[2]) writes the records of parse-orders, which have no field "payment_id"; the job's id must be a field every sink writes: one of order_id, customer, amount_cents`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, err := parse("jobs/t.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded (%d operators), want an error at line %d\n%s", len(j.Operators), tc.line, tc.yaml)
			}
			var e *spec.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is a %T, want *Error", err, err)
			}
			if e.File != "jobs/t.yaml" || e.Line != tc.line || e.Field != tc.field || !strings.Contains(e.Msg, tc.msg) {
				t.Errorf("got  %s (line %d, field %q)\nwant line %d, field %q, message containing %q\n%s",
					err, e.Line, e.Field, tc.line, tc.field, tc.msg, numbered(tc.yaml))
			}
			for _, jargon := range []string{"!!", "cannot unmarshal", "yaml:", "*spec.", "<nil>", "%!"} {
				if strings.Contains(e.Msg, jargon) {
					t.Errorf("message %q contains %q", err, jargon)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("message %q is more than one line", err)
			}
		})
	}
}

// numbered shows a spec with line numbers, for failure messages.
func numbered(s string) string {
	var b strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		fmt.Fprintf(&b, "%3d| %s\n", i+1, l)
	}
	return b.String()
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  spec.Error
		want string
	}{
		{spec.Error{"jobs/x.yaml", 14, "operators[2].inputs[0].key", `"ordr_id" is not a field of parse-orders (fields: order_id, customer, amount_cents)`},
			`jobs/x.yaml:14: operators[2].inputs[0].key: "ordr_id" is not a field of parse-orders (fields: order_id, customer, amount_cents)`},
		{spec.Error{"jobs/x.yaml", 3, "", "invalid YAML: could not find expected ':'"}, "jobs/x.yaml:3: invalid YAML: could not find expected ':'"},
		{spec.Error{"jobs/x.yaml", 0, "", "invalid YAML: something"}, "jobs/x.yaml: invalid YAML: something"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestValidSpecs(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		// No max_parallelism, verify or parallelism: 128, inferred, 1.
		j, err := parse("t.yaml", []byte(lines("name: t", "operators:",
			"  - {name: s, type: source, topic: orders}",
			"  - {name: e, type: enrich, inputs: [{from: s, edge: forward}]}",
			"  - {name: k, type: sink, topic: out, inputs: [{from: e, edge: hash, key: tier}]}")))
		if err != nil {
			t.Fatal(err)
		}
		if j.MaxParallelism != 128 || j.Verify != orders.VerifyOrders || j.Op("e").Parallelism != 1 {
			t.Errorf("defaults: max_parallelism %d, verify %q, parallelism %d; want 128, orders, 1", j.MaxParallelism, j.Verify, j.Op("e").Parallelism)
		}
		if got := j.Op("k").Inputs[0]; got != (spec.Input{From: "e", Edge: spec.Hash, Key: "tier", Line: 5}) {
			t.Errorf("sink input = %+v", got)
		}
	})
	t.Run("verify inferred for a join", func(t *testing.T) {
		j, err := parse("t.yaml", []byte(strings.Replace(orders.DefaultYAML, "verify: paid-orders\n", "", 1)))
		if err != nil {
			t.Fatal(err)
		}
		if j.Verify != orders.VerifyPaidOrders {
			t.Errorf("verify = %q, want paid-orders", j.Verify)
		}
	})
	t.Run("verify false turns the verification off", func(t *testing.T) {
		for _, tc := range []struct {
			value string
			off   bool
		}{{"false", true}, {"False", true}, {"true", false}} {
			j, err := parse("t.yaml", []byte(strings.Replace(orders.DefaultYAML, "verify: paid-orders\n", "verify: "+tc.value+"\n", 1)))
			if err != nil {
				t.Fatalf("verify: %s: %v", tc.value, err)
			}
			// The kind stays what the output would be checked by.
			if j.VerifyOff != tc.off || j.Verify != orders.VerifyPaidOrders {
				t.Errorf("verify: %s: off %v, kind %q; want off %v, paid-orders", tc.value, j.VerifyOff, j.Verify, tc.off)
			}
		}
	})
	t.Run("anchors, quoted numbers and key order", func(t *testing.T) {
		j, err := parse("t.yaml", []byte(lines(
			"operators:",
			"  - {name: s, type: source, topic: orders, parallelism: &p 4}",
			"  - {name: e, type: enrich, parallelism: *p, inputs: [{from: s, edge: forward}]}",
			"  - {name: k, type: sink, topic: out, parallelism: *p, inputs: [{from: e, edge: forward}]}",
			"  - {name: k2, type: sink, topic: out2, parallelism: \"4\", inputs: [{from: e, edge: broadcast}]}",
			"max_parallelism: 4",
			"name: t")))
		if err != nil {
			t.Fatal(err)
		}
		if j.Op("k").Parallelism != 4 || j.Op("k2").Parallelism != 4 || j.MaxParallelism != 4 {
			t.Errorf("parallelism %d, %d, max %d; want 4, 4, 4", j.Op("k").Parallelism, j.Op("k2").Parallelism, j.MaxParallelism)
		}
	})
}

func TestDefaultEqualsFixture(t *testing.T) {
	path := filepath.Join("..", "..", "fixtures", "jobs", "orders.yaml")
	fixture, err := load(path)
	if err != nil {
		t.Fatal(err)
	}
	def := orders.Default()
	if def.File != orders.DefaultFile || fixture.File != path {
		t.Errorf("File: default %q, fixture %q", def.File, fixture.File)
	}
	fixture.File = def.File
	if !reflect.DeepEqual(def, fixture) {
		t.Errorf("Default() and %s differ; copy orders.DefaultYAML into the fixture or back", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != orders.DefaultYAML {
		t.Errorf("%s is not byte for byte DefaultYAML", path)
	}

	// The shape DESIGN.md describes.
	want := []struct {
		name, typ string
		p         int
		from      []string
	}{
		{"orders-source", spec.TypeSource, 2, nil},
		{"payments-source", spec.TypeSource, 2, nil},
		{"parse-orders", orders.TypeParse, 2, []string{"orders-source"}},
		{"parse-payments", orders.TypeParse, 2, []string{"payments-source"}},
		{"join", orders.TypeJoin, 2, []string{"parse-orders", "parse-payments"}},
		{"revenue", orders.TypeAggregate, 2, []string{"join"}},
		{"sink", spec.TypeSink, 1, []string{"revenue"}},
	}
	if def.Name != "orders" || def.MaxParallelism != 128 || def.Verify != orders.VerifyPaidOrders || len(def.Operators) != len(want) {
		t.Fatalf("default job %q max %d verify %q with %d operators", def.Name, def.MaxParallelism, def.Verify, len(def.Operators))
	}
	for i, w := range want {
		op := def.Operators[i]
		var from []string
		for _, in := range op.Inputs {
			from = append(from, in.From)
		}
		if op.Name != w.name || op.Type != w.typ || op.Parallelism != w.p || !slices.Equal(from, w.from) {
			t.Errorf("operators[%d] = %s %s[%d] from %v; want %s %s[%d] from %v", i, op.Type, op.Name, op.Parallelism, from, w.typ, w.name, w.p, w.from)
		}
	}
	if in := def.Op("revenue").Inputs[0]; in.Edge != spec.Hash || in.Key != "customer" {
		t.Errorf("revenue input = %+v, want hash by customer", in)
	}
	if def.Op("sink").Topic != "revenue" {
		t.Errorf("sink topic = %q", def.Op("sink").Topic)
	}

	// Each call returns a job of its own.
	def.Op("join").Parallelism = 7
	if orders.Default().Op("join").Parallelism != 2 {
		t.Error("changing one orders.Default() changed the next")
	}
}

func TestPipelineFixture(t *testing.T) {
	j, err := load(filepath.Join("..", "..", "fixtures", "jobs", "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if j.Name != "pipeline" || j.Verify != orders.VerifyOrders || len(j.Operators) != 3 {
		t.Fatalf("job %q verify %q with %d operators", j.Name, j.Verify, len(j.Operators))
	}
	for i, want := range []string{"source", "enrich", "sink"} {
		op := j.Operators[i]
		if op.Name != want || op.Type != want || op.Parallelism != 4 {
			t.Errorf("operators[%d] = %s %s[%d], want %s %s[4]", i, op.Type, op.Name, op.Parallelism, want, want)
		}
		for _, in := range op.Inputs {
			if in.Edge != spec.Forward {
				t.Errorf("%s reads %s over %s, want forward", op.Name, in.From, in.Edge)
			}
		}
	}
	if j.Op("source").Topic != "orders" || j.Op("sink").Topic != "enriched-orders" {
		t.Errorf("topics %q → %q", j.Op("source").Topic, j.Op("sink").Topic)
	}
	if j.ID != "order_id" || j.Op("sink").Key != "tier" {
		t.Errorf("id %q, sink key %q; want the fixture's order_id and tier", j.ID, j.Op("sink").Key)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := load(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("Load(%q) = %v; want a not-exist error naming the path", path, err)
	}
}

func TestLoadNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("name: t\nverify: maybe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := load(path)
	if want := path + ":2: verify: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Load = %v; want it to start with %q", err, want)
	}
}

// TestLoadReadsOnlyRegularFilesOfASaneSize: a device, a FIFO, a folder or
// a huge file given as --job is refused at once, never read for ever or
// waited on.
func TestLoadReadsOnlyRegularFilesOfASaneSize(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", "not a regular file (a device)"},
		{fifo, "not a regular file (a named pipe)"},
		{dir, "is a folder"},
		{big, "2097152 bytes, more than the 1048576 a job spec may have"},
	} {
		done := make(chan error, 1)
		go func() { _, err := load(tc.path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("Load(%s) = %v; want an error naming it and saying %q", tc.path, err, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Load(%s) still runs after 5s", tc.path)
		}
	}
}

// FuzzParse: no spec, however broken, makes spec.Parse panic; every error it
// returns is an *spec.Error that names the file.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"orders.yaml", "pipeline.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "jobs", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("name: t\noperators:\n  - {name: s, type: source, topic: orders}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("name: t\noperators: [{name: s, type: sink, inputs: [{from: s}]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := parse("fuzz.yaml", data)
		if err != nil {
			var se *spec.Error
			if !errors.As(err, &se) || se.File != "fuzz.yaml" {
				t.Fatalf("Parse error %v (%T) is not an *spec.Error naming the file", err, err)
			}
			return
		}
		if j == nil || len(j.Operators) == 0 {
			t.Fatalf("Parse = %v, nil: a job without operators", j)
		}
	})
}

func TestOpAndDownstream(t *testing.T) {
	j := orders.Default()
	if j.Op("join") == nil || j.Op("join").Type != orders.TypeJoin || j.Op("nope") != nil {
		t.Error("Op")
	}
	names := func(ops []*spec.Operator) []string {
		var s []string
		for _, op := range ops {
			s = append(s, op.Name)
		}
		return s
	}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"orders-source", []string{"parse-orders"}},
		{"parse-payments", []string{"join"}},
		{"join", []string{"revenue"}},
		{"sink", nil},
	} {
		if got := names(j.Downstream(tc.name)); !slices.Equal(got, tc.want) {
			t.Errorf("Downstream(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Two inputs from one operator list it once.
	j2, err := parse("t.yaml", []byte(lines("name: t", "operators:",
		"  - {name: s, type: source, topic: orders}",
		"  - {name: e, type: enrich, inputs: [{from: s, edge: forward}]}",
		"  - {name: k, type: sink, topic: out, inputs: [{from: e, edge: forward}]}",
		"  - {name: k2, type: sink, topic: out2, inputs: [{from: e, edge: rebalance}]}")))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(j2.Downstream("e")); !slices.Equal(got, []string{"k", "k2"}) {
		t.Errorf("Downstream(e) = %v", got)
	}
}

func TestSetParallelism(t *testing.T) {
	tests := []struct {
		name   string
		job    func() *spec.Job
		set    map[string]int
		errMsg string // empty: succeeds
	}{
		{"hash edges rescale freely", orders.Default, map[string]int{"join": 4}, ""},
		{"sink over rebalance", orders.Default, map[string]int{"sink": 3}, ""},
		{"up to max parallelism", orders.Default, map[string]int{"revenue": 128}, ""},
		{"unknown operator", orders.Default, map[string]int{"jion": 2}, `unknown operator "jion" (operators: orders-source, payments-source, parse-orders, parse-payments, join, revenue, sink)`},
		{"zero", orders.Default, map[string]int{"join": 0}, "parallelism of join: must be a whole number from 1 to 128 (the job's max_parallelism), got 0"},
		{"over max parallelism", orders.Default, map[string]int{"join": 129}, "got 129"},
		{"forward upstream", orders.Default, map[string]int{"parse-orders": 3}, "parallelism of parse-orders: forward edge orders-source[2] → parse-orders[3] needs equal parallelism; give orders-source parallelism 3 too, or use a rebalance or hash edge"},
		{"forward downstream", orders.Default, map[string]int{"payments-source": 1}, "forward edge payments-source[1] → parse-payments[2] needs equal parallelism; give parse-payments parallelism 1 too"},
		{"forward pair together", orders.Default, map[string]int{"orders-source": 4, "parse-orders": 4}, ""},
		{"forward chain in part", pipeline(t), map[string]int{"source": 2, "enrich": 2}, "forward edge enrich[2] → sink[4]"},
		{"forward chain whole", pipeline(t), map[string]int{"source": 2, "enrich": 2, "sink": 2}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := tc.job()
			before := tc.job()
			var err error
			if len(tc.set) == 1 {
				for name, p := range tc.set {
					err = j.SetParallelism(name, p)
				}
			} else {
				err = j.SetParallelisms(tc.set)
			}
			if tc.errMsg == "" {
				if err != nil {
					t.Fatal(err)
				}
				for name, p := range tc.set {
					if got := j.Op(name).Parallelism; got != p {
						t.Errorf("%s parallelism = %d, want %d", name, got, p)
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errMsg) {
				t.Fatalf("err = %v, want one containing %q", err, tc.errMsg)
			}
			if !reflect.DeepEqual(j, before) {
				t.Error("a failed SetParallelism changed the job")
			}
		})
	}
	if err := orders.Default().SetParallelism("nope", 1); !errors.Is(err, spec.ErrUnknownOperator) {
		t.Errorf("err = %v, want ErrUnknownOperator", err)
	}
}

func pipeline(t *testing.T) func() *spec.Job {
	return func() *spec.Job {
		j, err := load(filepath.Join("..", "..", "fixtures", "jobs", "pipeline.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
}

// The default job's two sources read at most a second of event time ahead
// of one another; no other operator aligns.
func TestDefaultJobAlignsItsSources(t *testing.T) {
	for _, op := range orders.Default().Operators {
		want := time.Duration(0)
		if op.Type == spec.TypeSource {
			want = time.Second
		}
		if op.WatermarkAlignment != want {
			t.Errorf("%s: watermark_alignment %v, want %v", op.Name, op.WatermarkAlignment, want)
		}
	}
}
