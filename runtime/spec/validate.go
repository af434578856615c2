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
		return nil, p.errf(f.line, path+".type", "required: one of %s", strings.Join(p.cat.types(), ", "))
	}
	if op.Type, err = p.text(tn, path+".type"); err != nil {
		return nil, err
	}
	if !slices.Contains(p.cat.types(), op.Type) {
		return nil, p.errf(tn.Line, path+".type", "unknown type %q (types: %s)", op.Type, strings.Join(p.cat.types(), ", "))
	}

	if pn := f.get("parallelism"); pn != nil {
		hint := fmt.Sprintf("raise max_parallelism (now %d) to allow more", job.MaxParallelism)
		if op.Parallelism, err = p.wholeNumber(pn, path+".parallelism", job.MaxParallelism, hint); err != nil {
			return nil, err
		}
		op.ParallelismSet = true
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
	if err := p.watermarkAlignment(op, f, path); err != nil {
		return nil, err
	}
	if k := p.cat.Kind(op.Type); k != nil {
		if pr := k.CheckKeys(op); pr != nil {
			return nil, p.problem(op, f, path, pr)
		}
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
	up := p.cat.RecordOf(job, job.Op(op.Inputs[0].From))
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
// sinks read: every sink's records must carry it, and be identified by it
// (spec.Record.ID), so that the verification can count each of them in
// the output and find it in the input.
func (p *parser) checkID(job *Job, line int, n *yaml.Node) error {
	for i, op := range job.Operators {
		if op.Type != TypeSink {
			continue
		}
		up := p.cat.RecordOf(job, job.Op(op.Inputs[0].From))
		if job.ID == "" {
			job.ID = up.ID
		}
		if n != nil {
			line = n.Line
		}
		if !slices.Contains(up.Fields, job.ID) {
			return p.errf(line, "id", "%s (operators[%d]) writes the records of %s, which have no field %q; the job's id must be a field every sink writes: one of %s",
				op.Name, i, op.Inputs[0].From, job.ID, strings.Join(up.Fields, ", "))
		}
		if job.ID != up.ID {
			return p.errf(line, "id", "%q does not identify the records %s (operators[%d]) writes: the verification counts each record by the job's id, from the input to the output, and %s's records are identified by %s",
				job.ID, op.Name, i, op.Inputs[0].From, up.ID)
		}
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
			return p.errf(f.line, field, "required for a source: the Kafka topic it reads, %s", orList(p.cat.Inputs))
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
	case op.Type == TypeSource && !slices.Contains(p.cat.Inputs, op.Topic):
		return p.errf(n.Line, field, "a source reads %s (the topics of the job's input), got %q", orList(p.cat.Inputs), op.Topic)
	case op.Type == TypeSink && slices.Contains(p.cat.Inputs, op.Topic):
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

// schema reads the schema of an operator whose kind takes one (the kind
// checks it); others have none.
func (p *parser) schema(op *Operator, f fields, path string) error {
	n := f.get("schema")
	if n == nil {
		return nil
	}
	if k := p.cat.Kind(op.Type); k == nil || !k.Takes("schema") {
		return p.errf(n.Line, path+".schema", "only %s operators have a schema; remove it from this %s", p.cat.takers("schema"), op.Type)
	}
	var err error
	op.Schema, err = p.text(n, path+".schema")
	return err
}

// stateTTL reads how long an operator keeps a record waiting, for a kind
// that keeps records waiting; others have none.
func (p *parser) stateTTL(op *Operator, f fields, path string) error {
	field := path + ".state_ttl"
	n := f.get("state_ttl")
	if n == nil {
		return nil
	}
	if k := p.cat.Kind(op.Type); k == nil || !k.Takes("state_ttl") {
		return p.errf(n.Line, field, "only %s operators keep records waiting; remove it from this %s", p.cat.takers("state_ttl"), op.Type)
	}
	d, err := p.eventDuration(n, field, "1m or 30s (0: keep for ever)")
	op.StateTTL = d
	return err
}

// watermarkAlignment reads how far a source's subtasks may read ahead of
// the slowest in event time; only sources read.
func (p *parser) watermarkAlignment(op *Operator, f fields, path string) error {
	field := path + ".watermark_alignment"
	n := f.get("watermark_alignment")
	if n == nil {
		return nil
	}
	if op.Type != TypeSource {
		return p.errf(n.Line, field, "only sources read ahead of one another; remove it from this %s", op.Type)
	}
	d, err := p.eventDuration(n, field, "1s or 500ms, the most a subtask may read ahead of the slowest (0: no alignment)")
	op.WatermarkAlignment = d
	return err
}

// eventDuration reads a duration of event time (0 or at least 1ms, the
// unit event times count in); e says what one looks like.
func (p *parser) eventDuration(n *yaml.Node, field, e string) (time.Duration, error) {
	s, err := p.text(n, field)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if s == "0" {
		d, err = 0, nil
	}
	if err != nil || d < 0 {
		return 0, p.errf(n.Line, field, "must be a duration such as %s, got %s", e, describe(n))
	}
	if d > 0 && d < time.Millisecond {
		return 0, p.errf(n.Line, field, "%s is less than the 1ms that event times count in", d)
	}
	return d, nil
}

// problem is a kind's problem with op as an *Error, at the line of the
// field it names.
func (p *parser) problem(op *Operator, f fields, path string, pr *Problem) error {
	line := op.Line
	if k, ok := inputIndex(pr.Field); ok && k < len(op.Inputs) {
		line = op.Inputs[k].Line
	} else if n := f.get(pr.Field); n != nil {
		line = n.Line
	}
	return p.errf(line, path+"."+pr.Field, "%s", pr.Msg)
}

// wantInputs is how many inputs an operator of type typ reads, and how
// to say so.
func (p *parser) wantInputs(typ string) (int, string) {
	if k := p.cat.Kind(typ); k != nil {
		return k.Inputs()
	}
	return 1, "exactly one input"
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
	want, words := p.wantInputs(op.Type)
	if n == nil {
		return p.errf(f.line, field, "required: %s reads %s, e.g. inputs: [{from: NAME, edge: forward}]", Article(op.Type), words)
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
	if len(op.Inputs) != want {
		return p.errf(f.entries["inputs"].key.Line, field, "%s reads %s, got %d", Article(op.Type), words, len(op.Inputs))
	}
	if k := p.cat.Kind(op.Type); k != nil {
		if pr := k.Check(job, op); pr != nil {
			return p.problem(op, f, path, pr)
		}
		return nil
	}
	// A sink writes each record as JSON: it needs decoded records, and
	// what else the job asks of them.
	if p.cat.CheckSink != nil {
		if pr := p.cat.CheckSink(job, op); pr != nil {
			return p.problem(op, f, path, pr)
		}
	}
	in := op.Inputs[0]
	if up := job.Op(in.From); len(p.cat.RecordOf(job, up).Fields) == 0 {
		return p.errf(in.Line, field+"[0].from", "a sink writes decoded records as JSON, but %s is %s and emits raw bytes; put an operator that decodes them between them", up.Name, p.cat.describe(up))
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
		fields := p.cat.RecordOf(job, up).Fields
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
// line is the line of the operators key, verify the node of the verify
// key (nil: absent).
func (p *parser) checkJob(job *Job, line int, verify *yaml.Node) error {
	count := func(typ string) int {
		return len(slices.DeleteFunc(slices.Clone(job.Operators), func(o *Operator) bool { return o.Type != typ }))
	}
	if count(TypeSource) == 0 {
		return p.errf(line, "operators", "the job has no source; add an operator with type: source that reads %s", orList(p.cat.Inputs))
	}
	if count(TypeSink) == 0 {
		return p.errf(line, "operators", "the job has no sink; add an operator with type: sink that writes the results to a topic")
	}
	for i, op := range job.Operators {
		if op.Type != TypeSink && len(job.Downstream(op.Name)) == 0 {
			return p.errf(op.Line, fmt.Sprintf("operators[%d]", i), "nothing reads the output of %s; add it to the inputs of a later operator, or remove it", op.Name)
		}
	}
	if p.cat.Finish != nil {
		if pr := p.cat.Finish(job); pr != nil {
			return p.jobProblem(job, line, verify, pr)
		}
	}
	job.Relation = p.cat.Relations[job.Verify]
	return nil
}

// jobProblem is a problem the catalogue found with the job as a whole, as
// an *Error at the line of what it names: an operator's field, the verify
// key, or the operators key.
func (p *parser) jobProblem(job *Job, line int, verify *yaml.Node, pr *Problem) error {
	if i := slices.IndexFunc(job.Operators, func(o *Operator) bool { return o.Name == pr.Op }); pr.Op != "" && i >= 0 {
		op := job.Operators[i]
		l := op.Line
		if k, ok := inputIndex(pr.Field); ok && k < len(op.Inputs) {
			l = op.Inputs[k].Line
		}
		return p.errf(l, fmt.Sprintf("operators[%d].%s", i, pr.Field), "%s", pr.Msg)
	}
	if pr.Field == "verify" && verify != nil {
		line = verify.Line
	}
	return p.errf(line, pr.Field, "%s", pr.Msg)
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

func edgeList() string {
	s := make([]string, len(EdgeTypes))
	for i, e := range EdgeTypes {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}
