package spec

import (
	"slices"
	"strconv"
	"strings"
)

// Kind is what a job spec knows of an operator type a job brings besides
// the source and the sink, which the engine runs itself (Flink: the
// operator a DataStream call adds, as the JobGraph sees it): how many
// inputs it reads, the optional keys it takes, what it checks of them and
// of its inputs, and what its records carry. The orders job's kinds are
// orders.Catalogue's.
type Kind interface {
	// Name is the type's name in a spec ("join").
	Name() string
	// Inputs is how many inputs an operator of the kind reads, and how to
	// say so: 1, "exactly one input (a source)".
	Inputs() (n int, words string)
	// Takes reports whether an operator of the kind takes the optional
	// key ("schema", "state_ttl").
	Takes(key string) bool
	// CheckKeys checks op's own keys, before its inputs are read.
	CheckKeys(op *Operator) *Problem
	// Check checks op once its inputs are read (they name operators above
	// it in job).
	Check(job *Job, op *Operator) *Problem
	// Record is what op's records carry.
	Record(job *Job, op *Operator) Record
	// Describe says what op is, for messages: "a parse of orders".
	Describe(op *Operator) string
}

// Problem is what a check finds wrong (nil: nothing). Op names the
// operator it is about ("": the job as a whole); Field the key of its
// entry, or of the job's without Op ("schema", "inputs[1].key",
// "verify"); Msg says what is wrong and what to do.
type Problem struct {
	Op, Field, Msg string
}

// Catalogue is what a job brings to its specs: its operator kinds, the
// topics of its input and its verify kinds (the orders job's is
// orders.Catalogue). Parse checks a spec against it.
type Catalogue struct {
	// Kinds are the job's operator types, in the order messages list them.
	Kinds []Kind
	// Inputs are the topics a source may read, in the order messages name
	// them.
	Inputs []string
	// Verifies are the verify kinds a spec may name, and Relations what
	// each means: the input records the committed output must hold once.
	Verifies  []string
	Relations map[string]Relation
	// CheckSink checks the records a sink reads, beyond that they are
	// decoded (nil: nothing more).
	CheckSink func(job *Job, sink *Operator) *Problem
	// Finish checks the job as a whole once every operator is read, and
	// fills in what the spec left out (its verify kind); nil: nothing.
	Finish func(job *Job) *Problem
}

// Relation is what a verify kind expects of the committed output, by the
// job's id: every record of the first of Inputs (the job's input topics,
// as its sources name them) once; with Joined, only those whose id a
// record of the second also has (within the state TTL of the job's
// operators, when they have one). The orders job: "orders" is each order,
// "paid-orders" each order joined with its payment.
type Relation struct {
	Inputs []string
	Joined bool
}

// Kind is the kind called name, or nil.
func (c Catalogue) Kind(name string) Kind {
	i := slices.IndexFunc(c.Kinds, func(k Kind) bool { return k.Name() == name })
	if i < 0 {
		return nil
	}
	return c.Kinds[i]
}

// types are the operator types a spec may name, in the order messages
// list them: source, the job's kinds, sink.
func (c Catalogue) types() []string {
	out := []string{TypeSource}
	for _, k := range c.Kinds {
		out = append(out, k.Name())
	}
	return append(out, TypeSink)
}

// RecordOf returns what op's records carry. Sources emit raw bytes and
// sinks emit nothing, so both have no fields.
func (c Catalogue) RecordOf(j *Job, op *Operator) Record {
	if op == nil {
		return Record{}
	}
	if k := c.Kind(op.Type); k != nil {
		return k.Record(j, op)
	}
	return Record{}
}

// describe says what op is, for messages: "a source of payments", or as
// its kind says.
func (c Catalogue) describe(o *Operator) string {
	if o.Type == TypeSource {
		return "a source of " + o.Topic
	}
	if k := c.Kind(o.Type); k != nil {
		return k.Describe(o)
	}
	return Article(o.Type)
}

// Article puts "a" or "an" before an operator type.
func Article(typ string) string {
	if typ != "" && strings.ContainsRune("aeiou", rune(typ[0])) {
		return "an " + typ
	}
	return "a " + typ
}

// takers are the names of the kinds that take key, for messages.
func (c Catalogue) takers(key string) string {
	var names []string
	for _, k := range c.Kinds {
		if k.Takes(key) {
			names = append(names, k.Name())
		}
	}
	if len(names) == 0 {
		return "no"
	}
	return strings.Join(names, " and ")
}

// inputIndex is k of a field "inputs[k]…" (ok false for another field).
func inputIndex(field string) (int, bool) {
	rest, ok := strings.CutPrefix(field, "inputs[")
	if !ok {
		return 0, false
	}
	n, _, ok := strings.Cut(rest, "]")
	if !ok {
		return 0, false
	}
	k, err := strconv.Atoi(n)
	return k, err == nil
}
