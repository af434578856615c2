// Package spec reads job specs: the operators of a streaming job, their
// parallelism and the edges between them, written in YAML (Flink: the
// JobGraph a DataStream program builds, written down as data).
//
// Parse checks everything a user can get wrong and reports the first problem
// as an *Error that names the file, the line and the field, so that
// `faultline run --job my.yaml` can print one line that says what to fix.
// A valid job too big for one machine is refused too: past MaxOperators,
// MaxSubtasks, MaxSinkSubtasks, MaxChannels or MaxTopics (size.go).
package spec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// EdgeType is how records travel from the subtasks of one operator to the
// subtasks of the next (Flink: the StreamPartitioner of a JobEdge).
type EdgeType string

const (
	// Forward sends subtask i's records to subtask i of the next operator;
	// both operators need the same parallelism (Flink: ForwardPartitioner).
	Forward EdgeType = "forward"
	// Hash sends every record to the subtask that owns its key's key group
	// (Flink: keyBy, KeyGroupStreamPartitioner).
	Hash EdgeType = "hash"
	// Rebalance deals records round-robin to every subtask of the next
	// operator (Flink: RebalancePartitioner).
	Rebalance EdgeType = "rebalance"
	// Broadcast sends every record to every subtask of the next operator
	// (Flink: BroadcastPartitioner).
	Broadcast EdgeType = "broadcast"
)

// EdgeTypes lists the edge types in the order messages show them.
var EdgeTypes = []EdgeType{Forward, Hash, Rebalance, Broadcast}

// The operator types the engine runs itself; a job brings the others (see
// Kind).
const (
	TypeSource = "source" // reads a Kafka topic; emits raw record bytes
	TypeSink   = "sink"   // writes to a Kafka topic in transactions (two-phase commit)
)

// Parallelism limits.
const (
	// DefaultMaxParallelism is the number of key groups when a spec does not
	// say (Flink's default for small jobs).
	DefaultMaxParallelism = 128
	// MaxMaxParallelism is the largest max_parallelism Flink accepts (2^15).
	MaxMaxParallelism = 32768
	// DefaultParallelism is an operator's parallelism when its spec does not
	// say (Flink: parallelism.default).
	DefaultParallelism = 1
)

// Job is a parsed and validated job spec (Flink: JobGraph).
type Job struct {
	Name string
	// MaxParallelism is the number of key groups that keyed state is split
	// into; no operator may have more subtasks (Flink: max parallelism).
	// Default 128; 1..32768.
	MaxParallelism int
	// Verify is what the sink's output must contain exactly once, one of
	// the job's verify kinds (Catalogue.Verifies; the orders job's:
	// "paid-orders" or "orders").
	Verify string
	// VerifyOff says the spec turns the verification off (verify: false):
	// a run checks neither as it goes nor at the end, and its report says
	// so. Verify keeps the kind the output would be checked by.
	VerifyOff bool
	// Relation is what Verify means (Catalogue.Relations).
	Relation Relation
	// ID is the field that identifies a record end to end, from the input
	// through every operator to the output: the verification counts the
	// committed output by it, and a sink that restarts skips the records
	// its committed output holds already by it. Default: the id field of
	// the records the sinks read (see Record).
	ID string
	// Operators are in file order; every input refers to an earlier
	// operator, so the graph has no cycles and this order is topological.
	Operators []*Operator
	// File is the path or name given to Parse, for messages.
	File string
}

// Operator is one vertex of the job graph; it runs Parallelism subtasks
// (Flink: JobVertex).
type Operator struct {
	Name        string
	Type        string
	Parallelism int
	// ParallelismSet says that the spec gave Parallelism (Flink: an
	// operator's own setParallelism, which parallelism.default leaves).
	ParallelismSet bool
	Topic          string // source: topic read (one of the job's inputs); sink: topic written
	// Key is a sink's record key: the field of the records it reads whose
	// value keys each output record (Kafka: the record key, which picks
	// the partition). Default: the key field of the records it reads (see
	// Record); none when they have none.
	Key string
	// Schema names the records an operator decodes, for a kind that takes
	// it (the orders job's parse: "order" or "payment").
	Schema string
	// StateTTL is how long an operator keeps a record waiting in keyed
	// state, in event time, for a kind that takes it (the orders job's
	// join); 0 keeps it for ever (Flink: state TTL).
	StateTTL time.Duration
	// WatermarkAlignment is, for a source, how far in event time its
	// subtasks may read ahead of the slowest subtask of the job's sources
	// that set it; 0: as far as they go (Flink: watermark alignment,
	// WatermarkStrategy.withWatermarkAlignment's maximum drift).
	WatermarkAlignment time.Duration
	Inputs             []Input
	Line               int
}

// Input is an edge into an operator (Flink: JobEdge).
type Input struct {
	From string
	Edge EdgeType
	Key  string // hash only: a field of the upstream operator's output
	Line int
}

// Error is a problem in a job spec, with where it is.
type Error struct {
	File  string
	Line  int    // 1-based; 0 when the YAML parser could not say
	Field string // e.g. "operators[2].inputs[0].key"; empty for YAML syntax errors
	Msg   string
}

// Error returns one line: "<file>:<line>: <field>: <msg>".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrUnknownOperator is returned (wrapped) when an operator name given on
// the command line is not in the job.
var ErrUnknownOperator = errors.New("unknown operator")

// Op returns the operator called name, or nil.
func (j *Job) Op(name string) *Operator {
	for _, op := range j.Operators {
		if op.Name == name {
			return op
		}
	}
	return nil
}

// Downstream returns the operators that have an input from name, in file
// order, each once.
func (j *Job) Downstream(name string) []*Operator {
	var out []*Operator
	for _, op := range j.Operators {
		if slices.ContainsFunc(op.Inputs, func(in Input) bool { return in.From == name }) {
			out = append(out, op)
		}
	}
	return out
}

// SetParallelism overrides the parallelism of one operator (Flink: rescaling
// from a savepoint). It checks p against MaxParallelism and the forward
// edges on both sides of the operator; on error the job is unchanged. To
// change the operators of a forward chain together, use SetParallelisms.
func (j *Job) SetParallelism(name string, p int) error {
	return j.SetParallelisms(map[string]int{name: p})
}

// SetParallelisms overrides the parallelism of several operators at once and
// then checks every forward edge, so that a chain of forward edges can be
// rescaled in one step, and that the job stays within the limits of its
// size (see MaxSubtasks). On error the job is unchanged.
func (j *Job) SetParallelisms(ps map[string]int) error {
	names := make([]string, 0, len(ps))
	for name := range ps {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if j.Op(name) == nil {
			return fmt.Errorf("%w %q (operators: %s)", ErrUnknownOperator, name, strings.Join(j.names(), ", "))
		}
		if p := ps[name]; p < 1 || p > j.MaxParallelism {
			return fmt.Errorf("parallelism of %s: must be a whole number from 1 to %d (the job's max_parallelism), got %d",
				name, j.MaxParallelism, p)
		}
	}
	par := func(op *Operator) int {
		if p, ok := ps[op.Name]; ok {
			return p
		}
		return op.Parallelism
	}
	for _, op := range j.Operators {
		for _, in := range op.Inputs {
			up := j.Op(in.From)
			if in.Edge != Forward || up == nil || par(up) == par(op) {
				continue
			}
			// Name the operator the caller changed, and the one to change too.
			changed, other := op, up
			if _, ok := ps[op.Name]; !ok {
				changed, other = up, op
			}
			return fmt.Errorf("parallelism of %s: forward edge %s[%d] → %s[%d] needs equal parallelism; give %s parallelism %d too, or use a rebalance or hash edge",
				changed.Name, up.Name, par(up), op.Name, par(op), other.Name, par(changed))
		}
	}
	if msg := sizeOf(j, par).TooBig(); msg != "" {
		return fmt.Errorf("parallelism of %s: %s", strings.Join(names, ", "), msg)
	}
	for _, name := range names {
		j.Op(name).Parallelism = ps[name]
	}
	return nil
}

func (j *Job) names() []string {
	names := make([]string, len(j.Operators))
	for i, op := range j.Operators {
		names[i] = op.Name
	}
	return names
}

// Record is what the records an operator emits carry: their fields (what a
// hash edge from it can key by, what a sink's key and the job's id can
// name), the field that identifies each record end to end, and the field
// a sink keys them by unless its spec names another.
type Record struct {
	Fields []string
	ID     string
	Key    string
}
