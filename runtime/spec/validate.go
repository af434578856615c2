package spec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// operators reads the operator list in file order. Each operator is checked
// against the ones before it, so an input can only name an earlier operator
// and the graph cannot have a cycle.
func (p *parser) operators(job *Job, list *yaml.Node) error {
	// Every name in the file with its first index, so that an input naming a
	// later operator is told so rather than that it does not exist.
	defined := map[string]int{}
	for i, item := range list.Content {
		item = deref(item)
		if item.Kind != yaml.MappingNode {
			continue
		}
		for k := 0; k+1 < len(item.Content); k += 2 {
			key, val := deref(item.Content[k]), deref(item.Content[k+1])
			if key.Value != "name" || val.Kind != yaml.ScalarNode {
				continue
			}
			if _, seen := defined[val.Value]; !seen {
				defined[val.Value] = i
			}
		}
	}
	for i, item := range list.Content {
		op, err := p.operator(job, i, deref(item), defined)
		if err != nil {
			return err
		}
		job.Operators = append(job.Operators, op)
	}
	return nil
}

// operator reads and checks operators[i].
func (p *parser) operator(job *Job, i int, n *yaml.Node, defined map[string]int) (*Operator, error) {
	path := fmt.Sprintf("operators[%d]", i)
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n.Line, path, "each operator must be a mapping with keys %s, got %s", strings.Join(operatorKeys, ", "), describe(n))
	}
	f, err := p.mapping(n, path, operatorKeys)
	if err != nil {
		return nil, err
	}
	op := &Operator{Line: n.Line, Parallelism: DefaultParallelism}

	if op.Name, err = p.name(f, path+".name", "the operator's name, e.g. name: parse-orders"); err != nil {
		return nil, err
	}
	if prev := slices.IndexFunc(job.Operators, func(o *Operator) bool { return o.Name == op.Name }); prev >= 0 {
		return nil, p.errf(f.get("name").Line, path+".name", "%q is already the name of operators[%d] (line %d); operator names must be unique",
			op.Name, prev, job.Operators[prev].Line)
	}

	tn := f.get("type")
	if tn == nil {
		return nil, p.errf(f.line, path+".type", "required: one of %s", strings.Join(Types, ", "))
	}
	if op.Type, err = p.text(tn, path+".type"); err != nil {
		return nil, err
	}
	if !slices.Contains(Types, op.Type) {
		return nil, p.errf(tn.Line, path+".type", "unknown type %q (types: %s)", op.Type, strings.Join(Types, ", "))
	}

	if pn := f.get("parallelism"); pn != nil {
		hint := fmt.Sprintf("raise max_parallelism (now %d) to allow more", job.MaxParallelism)
		if op.Parallelism, err = p.wholeNumber(pn, path+".parallelism", job.MaxParallelism, hint); err != nil {
			return nil, err
		}
	}
	if err := p.topic(op, f, path); err != nil {
		return nil, err
	}
	if err := p.schema(op, f, path); err != nil {
		return nil, err
	}
	if err := p.stateTTL(op, f, path); err != nil {
		return nil, err
	}
	if err := p.inputs(job, op, f, path, defined); err != nil {
		return nil, err
	}
	if err := p.sinkKey(job, op, f, path); err != nil {
		return nil, err
	}
	return op, nil
}

// sinkKey reads the key of a sink, a field of the records it reads, or
// takes theirs; other operators write no records and have none.
func (p *parser) sinkKey(job *Job, op *Operator, f fields, path string) error {
	field := path + ".key"
	n := f.get("key")
	if op.Type != TypeSink {
		if n != nil {
			return p.errf(n.Line, field, "only a sink keys the records it writes; remove it from this %s (a hash edge names its key in its input)", op.Type)
		}
		return nil
	}
	up := RecordOf(job, job.Op(op.Inputs[0].From))
	if n == nil {
		op.Key = up.Key
		return nil
	}
	var err error
	if op.Key, err = p.text(n, field); err != nil {
		return err
	}
	if !slices.Contains(up.Fields, op.Key) {
		return p.errf(n.Line, field, "%s's records have no field %q; key by one of %s", op.Inputs[0].From, op.Key, strings.Join(up.Fields, ", "))
	}
	return nil
}

// checkID checks the job's id, or takes the id field of the records its
// sinks read: every sink's records must carry it, so that the verification
// can count each of them in the output.
func (p *parser) checkID(job *Job, line int, n *yaml.Node) error {
	for i, op := range job.Operators {
		if op.Type != TypeSink {
			continue
		}
		up := RecordOf(job, job.Op(op.Inputs[0].From))
		if job.ID == "" {
			job.ID = up.ID
		}
		if slices.Contains(up.Fields, job.ID) {
			continue
		}
		if n != nil {
			line = n.Line
		}
		return p.errf(line, "id", "%s (operators[%d]) writes the records of %s, which have no field %q; the job's id must be a field every sink writes: one of %s",
			op.Name, i, op.Inputs[0].From, job.ID, strings.Join(up.Fields, ", "))
	}
	return nil
}

// topic reads the topic of a source or a sink; other operators have none.
func (p *parser) topic(op *Operator, f fields, path string) error {
	field := path + ".topic"
	n := f.get("topic")
	switch op.Type {
	case TypeSource:
		if n == nil {
			return p.errf(f.line, field, "required for a source: the Kafka topic it reads, %s or %s", TopicOrders, TopicPayments)
		}
	case TypeSink:
		if n == nil {
			return p.errf(f.line, field, "required for a sink: the Kafka topic it writes, e.g. topic: revenue")
		}
	default:
		if n != nil {
			return p.errf(n.Line, field, "only sources and sinks have a topic; remove it from this %s", op.Type)
		}
		return nil
	}
	var err error
	if op.Topic, err = p.text(n, field); err != nil {
		return err
	}
	switch {
	case op.Type == TypeSource && op.Topic != TopicOrders && op.Topic != TopicPayments:
		return p.errf(n.Line, field, "a source reads %s or %s (the topics the generator writes), got %q", TopicOrders, TopicPayments, op.Topic)
	case op.Type == TypeSink && (op.Topic == TopicOrders || op.Topic == TopicPayments):
		return p.errf(n.Line, field, "a sink must not write to %s, which the sources read; choose another topic, e.g. revenue", op.Topic)
	case op.Type == TypeSink && !IsTopicName(op.Topic):
		return p.errf(n.Line, field, "%q is not a Kafka topic name: %s", op.Topic, TopicNameRule)
	}
	return nil
}

// TopicNameRule says what IsTopicName accepts, for messages.
const TopicNameRule = "use 1 to 249 letters, digits, '.', '_' and '-'"

// IsTopicName reports whether Kafka accepts name as a topic name.
func IsTopicName(name string) bool {
	return topicPattern.MatchString(name) && name != "." && name != ".."
}

// schema reads the schema of a parse operator; other operators have none.
func (p *parser) schema(op *Operator, f fields, path string) error {
	field := path + ".schema"
	n := f.get("schema")
	if op.Type != TypeParse {
		if n != nil {
			return p.errf(n.Line, field, "only parse operators have a schema; remove it from this %s", op.Type)
		}
		return nil
	}
	if n == nil {
		return p.errf(f.line, field, "required for a parse: %s or %s", SchemaOrder, SchemaPayment)
	}
	var err error
	if op.Schema, err = p.text(n, field); err != nil {
		return err
	}
	if op.Schema != SchemaOrder && op.Schema != SchemaPayment {
		return p.errf(n.Line, field, "must be %s or %s, got %q", SchemaOrder, SchemaPayment, op.Schema)
	}
	return nil
}

// stateTTL reads how long a join keeps a waiting side; other operators keep
// nothing waiting.
func (p *parser) stateTTL(op *Operator, f fields, path string) error {
	field := path + ".state_ttl"
	n := f.get("state_ttl")
	if n == nil {
		return nil
	}
	if op.Type != TypeJoin {
		return p.errf(n.Line, field, "only a join keeps records waiting; remove it from this %s", op.Type)
	}
	s, err := p.text(n, field)
	if err != nil {
		return err
	}
	d, err := time.ParseDuration(s)
	if s == "0" {
		d, err = 0, nil
	}
	if err != nil || d < 0 {
		return p.errf(n.Line, field, "must be a duration such as 1m or 30s (0: keep for ever), got %s", describe(n))
	}
	if d > 0 && d < time.Millisecond {
		return p.errf(n.Line, field, "%s is less than the 1ms that event times count in", d)
	}
	op.StateTTL = d
	return nil
}

// wantInputs is how many inputs each operator type reads, in words.
var wantInputs = map[string]string{
	TypeParse:     "exactly one input (a source)",
	TypeEnrich:    "exactly one input (a source of orders)",
	TypeJoin:      "exactly two inputs (the orders first, then the payments)",
	TypeAggregate: "exactly one input (a hash edge)",
	TypeSink:      "exactly one input",
}

// inputs reads an operator's inputs and checks them against its type.
func (p *parser) inputs(job *Job, op *Operator, f fields, path string, defined map[string]int) error {
	field := path + ".inputs"
	n := f.get("inputs")
	if op.Type == TypeSource {
		if n != nil && !(n.Kind == yaml.SequenceNode && len(n.Content) == 0) {
			return p.errf(f.entries["inputs"].key.Line, field, "a source reads from Kafka and takes no inputs; remove inputs")
		}
		return nil
	}
	if n == nil {
		return p.errf(f.line, field, "required: %s reads %s, e.g. inputs: [{from: NAME, edge: forward}]", article(op.Type), wantInputs[op.Type])
	}
	if n.Kind != yaml.SequenceNode {
		return p.errf(n.Line, field, "must be a list of inputs, got %s", describe(n))
	}
	for k, item := range n.Content {
		in, err := p.input(job, op, fmt.Sprintf("%s[%d]", field, k), deref(item), defined)
		if err != nil {
			return err
		}
		op.Inputs = append(op.Inputs, in)
	}
	want := 1
	if op.Type == TypeJoin {
		want = 2
	}
	if len(op.Inputs) != want {
		return p.errf(f.entries["inputs"].key.Line, field, "%s reads %s, got %d", article(op.Type), wantInputs[op.Type], len(op.Inputs))
	}

	in := op.Inputs[0]
	up := job.Op(in.From)
	from := field + "[0].from"
	switch op.Type {
	case TypeParse:
		if up.Type != TypeSource {
			return p.errf(in.Line, from, "a parse decodes the raw bytes a source reads, so its input must be a source; %s is %s", up.Name, describeOp(up))
		}
		if want := schemaOf(up.Topic); op.Schema != want {
			return p.errf(f.get("schema").Line, path+".schema", "schema %s does not match topic %s, which %s reads; use schema %s", op.Schema, up.Topic, up.Name, want)
		}
	case TypeEnrich:
		if up.Type != TypeSource || up.Topic != TopicOrders {
			return p.errf(in.Line, from, "enrich decodes raw order records, so its input must be a source reading topic %s; %s is %s", TopicOrders, up.Name, describeOp(up))
		}
	case TypeAggregate:
		if in.Edge != Hash {
			return p.errf(in.Line, field+"[0].edge", "an aggregate keeps its totals in keyed state, so its input must be a hash edge, got %s", in.Edge)
		}
		fields := OutputFields(job, up)
		if !slices.Contains(fields, "customer") || !slices.Contains(fields, "amount_cents") {
			return p.errf(in.Line, from, "an aggregate sums amount_cents per customer, so its input must carry both; %s's records have %s", up.Name, strings.Join(fields, ", "))
		}
	case TypeJoin:
		return p.join(job, op, field)
	case TypeSink:
		// The sink writes each record as JSON, and the verification
		// expects orders in it: it needs decoded orders.
		fields := OutputFields(job, up)
		if len(fields) == 0 {
			return p.errf(in.Line, from, "a sink writes decoded records as JSON, but %s is %s and emits raw bytes; put a parse (or an enrich) between them", up.Name, describeOp(up))
		}
		if !slices.Contains(fields, "order_id") || !slices.Contains(fields, "customer") {
			return p.errf(in.Line, from, "the verification expects the orders in a sink's output; %s's records have %s; read from an operator whose records carry order_id and customer", up.Name, strings.Join(fields, ", "))
		}
	}
	return nil
}

// join checks the two inputs of a join: orders first, payments second, both
// hash edges keyed by order_id so that an order and its payment meet in the
// same subtask.
func (p *parser) join(job *Job, op *Operator, field string) error {
	ups := []*Operator{job.Op(op.Inputs[0].From), job.Op(op.Inputs[1].From)}
	isOrders := func(o *Operator) bool { return o.Type == TypeParse && o.Schema == SchemaOrder }
	isPayments := func(o *Operator) bool { return o.Type == TypeParse && o.Schema == SchemaPayment }
	if !isOrders(ups[0]) {
		if isPayments(ups[0]) && isOrders(ups[1]) {
			return p.errf(op.Inputs[0].Line, field+"[0].from", "a join reads the orders first and the payments second; swap the two inputs")
		}
		return p.errf(op.Inputs[0].Line, field+"[0].from", "a join's first input must be the orders (a parse with schema order); %s is %s", ups[0].Name, describeOp(ups[0]))
	}
	if !isPayments(ups[1]) {
		return p.errf(op.Inputs[1].Line, field+"[1].from", "a join's second input must be the payments (a parse with schema payment); %s is %s", ups[1].Name, describeOp(ups[1]))
	}
	for k, in := range op.Inputs {
		if in.Edge != Hash {
			return p.errf(in.Line, fmt.Sprintf("%s[%d].edge", field, k), "a join keeps orders and payments in keyed state, so both inputs must be hash edges keyed by order_id, got %s", in.Edge)
		}
	}
	for k, in := range op.Inputs {
		if in.Key != "order_id" {
			return p.errf(in.Line, fmt.Sprintf("%s[%d].key", field, k), "a join matches each payment to its order, so both inputs must use the same key, order_id; got %s", in.Key)
		}
	}
	return nil
}

// input reads one input of op and checks it on its own: the operator it
// names, the edge type, the key.
func (p *parser) input(job *Job, op *Operator, path string, n *yaml.Node, defined map[string]int) (Input, error) {
	if n.Kind != yaml.MappingNode {
		return Input{}, p.errf(n.Line, path, "each input must be a mapping with keys %s, got %s", strings.Join(inputKeys, ", "), describe(n))
	}
	f, err := p.mapping(n, path, inputKeys)
	if err != nil {
		return Input{}, err
	}
	in := Input{Line: n.Line}

	fn := f.get("from")
	if fn == nil {
		return in, p.errf(n.Line, path+".from", "required: the name of the operator to read from")
	}
	if in.From, err = p.text(fn, path+".from"); err != nil {
		return in, err
	}
	up := job.Op(in.From)
	switch {
	case in.From == op.Name:
		return in, p.errf(fn.Line, path+".from", "%s cannot read from itself", op.Name)
	case up == nil:
		if _, later := defined[in.From]; later {
			return in, p.errf(fn.Line, path+".from", "%s is defined after %s; an operator can only read from operators defined above it", in.From, op.Name)
		}
		above := "none"
		if len(job.Operators) > 0 {
			above = strings.Join(job.names(), ", ")
		}
		return in, p.errf(fn.Line, path+".from", "unknown operator %q (defined above: %s)", in.From, above)
	case up.Type == TypeSink:
		return in, p.errf(fn.Line, path+".from", "%s is a sink: it writes to Kafka and has no output to read", up.Name)
	}

	en := f.get("edge")
	if en == nil {
		return in, p.errf(n.Line, path+".edge", "required: how records travel from %s: %s", up.Name, edgeList())
	}
	edge, err := p.text(en, path+".edge")
	if err != nil {
		return in, err
	}
	in.Edge = EdgeType(edge)
	if !slices.Contains(EdgeTypes, in.Edge) {
		return in, p.errf(en.Line, path+".edge", "unknown edge %q (edges: %s)", edge, edgeList())
	}

	kn := f.get("key")
	if in.Edge != Hash {
		if kn != nil {
			return in, p.errf(kn.Line, path+".key", "key only applies to hash edges, and this edge is %s; remove key, or use edge: hash", in.Edge)
		}
	} else {
		fields := OutputFields(job, up)
		if len(fields) == 0 {
			return in, p.errf(en.Line, path+".edge", "a hash edge keys records by a field, but %s is a source and emits raw bytes; parse it first, or use forward or rebalance", up.Name)
		}
		if kn == nil {
			return in, p.errf(n.Line, path+".key", "required for a hash edge: the field of %s to key by (fields: %s)", up.Name, strings.Join(fields, ", "))
		}
		if in.Key, err = p.text(kn, path+".key"); err != nil {
			return in, err
		}
		if !slices.Contains(fields, in.Key) {
			return in, p.errf(kn.Line, path+".key", "%q is not a field of %s (fields: %s)", in.Key, up.Name, strings.Join(fields, ", "))
		}
	}

	if in.Edge == Forward && up.Parallelism != op.Parallelism {
		return in, p.errf(en.Line, path+".edge", "forward edge %s[%d] → %s[%d] needs equal parallelism; use rebalance or hash",
			up.Name, up.Parallelism, op.Name, op.Parallelism)
	}
	return in, nil
}

// checkJob checks the job as a whole once every operator has been read.
// line is the line of the operators key.
func (p *parser) checkJob(job *Job, line int, verify *yaml.Node) error {
	count := func(typ string) int {
		return len(slices.DeleteFunc(slices.Clone(job.Operators), func(o *Operator) bool { return o.Type != typ }))
	}
	if count(TypeSource) == 0 {
		return p.errf(line, "operators", "the job has no source; add an operator with type: source that reads %s or %s", TopicOrders, TopicPayments)
	}
	if count(TypeSink) == 0 {
		return p.errf(line, "operators", "the job has no sink; add an operator with type: sink that writes the results to a topic")
	}
	for i, op := range job.Operators {
		if op.Type != TypeSink && len(job.Downstream(op.Name)) == 0 {
			return p.errf(op.Line, fmt.Sprintf("operators[%d]", i), "nothing reads the output of %s; add it to the inputs of a later operator, or remove it", op.Name)
		}
	}
	joins := count(TypeJoin) > 0
	switch {
	case job.Verify == "" && joins:
		job.Verify = VerifyPaidOrders
	case job.Verify == "":
		job.Verify = VerifyOrders
	case job.Verify == VerifyOrders && joins:
		return p.errf(verify.Line, "verify", "%s means every order reaches the sink, but a join passes only the orders that were paid; use verify: %s", VerifyOrders, VerifyPaidOrders)
	case job.Verify == VerifyPaidOrders && !joins:
		return p.errf(verify.Line, "verify", "%s means only paid orders reach the sink, but without a join every order does; use verify: %s", VerifyPaidOrders, VerifyOrders)
	}
	return nil
}

// describeOp says what an operator is, for messages: "a source of payments",
// "a parse of orders", "a join".
func describeOp(o *Operator) string {
	switch o.Type {
	case TypeSource:
		return "a source of " + o.Topic
	case TypeParse:
		return "a parse of " + o.Schema + "s"
	}
	return article(o.Type)
}

// article puts "a" or "an" before an operator type.
func article(typ string) string {
	if typ != "" && strings.ContainsRune("aeiou", rune(typ[0])) {
		return "an " + typ
	}
	return "a " + typ
}

// schemaOf is the schema of the records in a source topic.
func schemaOf(topic string) string {
	if topic == TopicPayments {
		return SchemaPayment
	}
	return SchemaOrder
}

func edgeList() string {
	s := make([]string, len(EdgeTypes))
	for i, e := range EdgeTypes {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}
