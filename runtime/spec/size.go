package spec

import "fmt"

// The most a job may ask of the machine. faultline runs every subtask of a
// job as a goroutine in one process beside the embedded broker, and draws
// every subtask and channel in the terminal UI; past these limits a run
// starts slowly, its checkpoints outlast their interval, its memory grows
// by hundreds of MB and the broker stops answering in time, so Parse (and
// SetParallelisms) refuse such a job before anything starts. The limits
// were measured on a 2-core machine (docs/PERFORMANCE.md, "How big a job
// may be") and leave a margin below where a run went wrong.
const (
	// MaxOperators is the most operators a job may have. Each one is a
	// row of the UI's graph, and reading a spec checks every operator
	// against the ones before it.
	MaxOperators = 64
	// MaxSubtasks is the most subtasks (the operators' parallelism added
	// up) a job may have: one goroutine each, and for a source one Kafka
	// client of its own. At 300 a run starts in well under a second; at
	// 900 a checkpoint takes 3 s and the process 550 MB; at 3,000 a
	// checkpoint takes 40 s and the process 1.7 GB.
	MaxSubtasks = 256
	// MaxSinkSubtasks is the most subtasks of sinks a job may have. Each
	// commits its Kafka transaction at every checkpoint and settles its
	// transactions when the run stops, one sink subtask after another on
	// the output's connection: 128 of them took 9 s to stop.
	MaxSinkSubtasks = 32
	// MaxChannels is the most channels between subtasks a job may have: a
	// forward edge has one per subtask, a hash, rebalance or broadcast
	// edge one per pair of subtasks of the two operators. The UI samples
	// each on every refresh: 32,768 of them hold 380 MB.
	MaxChannels = 16384
	// MaxTopics is the most Kafka topics a job may read and write (its
	// sources' and sinks' topics, each counted once). The verification
	// reads each output topic on its own, about 0.4 s apiece.
	MaxTopics = 8
)

// Size is how much a job asks of the machine, counted as the limits above
// count it.
type Size struct {
	Operators    int
	Subtasks     int // the operators' parallelism added up
	SinkSubtasks int // the sinks' parallelism added up
	Channels     int // between subtasks, one per connected pair
	Topics       int // distinct topics of the sources and the sinks
}

// SizeOf counts what job j asks of the machine.
func SizeOf(j *Job) Size {
	return sizeOf(j, func(op *Operator) int { return op.Parallelism })
}

// sizeOf counts j as if each operator had the parallelism par gives it.
func sizeOf(j *Job, par func(*Operator) int) Size {
	s := Size{Operators: len(j.Operators)}
	topics := map[string]bool{}
	for _, op := range j.Operators {
		p := par(op)
		s.Subtasks += p
		if op.Type == TypeSink {
			s.SinkSubtasks += p
		}
		if op.Topic != "" {
			topics[op.Topic] = true
		}
		for _, in := range op.Inputs {
			up := j.Op(in.From)
			if up == nil {
				continue
			}
			if in.Edge == Forward {
				s.Channels += p
			} else {
				s.Channels += par(up) * p
			}
		}
	}
	s.Topics = len(topics)
	return s
}

// TooBig says, in words for a message, what of s is past its limit and
// what to do about it; "" when s is within every limit.
func (s Size) TooBig() string {
	const split = "split it into smaller jobs"
	switch {
	case s.Operators > MaxOperators:
		return tooMany(s.Operators, "operators", MaxOperators, split)
	case s.Subtasks > MaxSubtasks:
		return tooMany(s.Subtasks, "subtasks (the operators' parallelism added up)", MaxSubtasks, "lower the parallelism or "+split)
	case s.SinkSubtasks > MaxSinkSubtasks:
		return tooMany(s.SinkSubtasks, "sink subtasks (the sinks' parallelism added up)", MaxSinkSubtasks, "lower the sinks' parallelism or "+split)
	case s.Channels > MaxChannels:
		return tooMany(s.Channels, "channels between subtasks (a hash, rebalance or broadcast edge has one per pair of subtasks)", MaxChannels, "lower the parallelism, use forward edges or "+split)
	case s.Topics > MaxTopics:
		return tooMany(s.Topics, "Kafka topics (its sources' and sinks' topics)", MaxTopics, "let sinks share a topic or "+split)
	}
	return ""
}

func tooMany(n int, what string, limit int, advice string) string {
	return fmt.Sprintf("the job is too big to run: %d %s, more than the %d faultline runs; %s", n, what, limit, advice)
}
