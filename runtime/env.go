package runtime

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/faultline-dev/faultline/runtime/barrier"
)

// Env is the outside world of a job: the topics its sources read and the
// transactional outputs its sinks write. The generator and the in-memory
// output serve here; Kafka serves behind the same interfaces.
type Env struct {
	Sources map[string]Source
	Outputs map[string]TxnOutput
	// TxnPrefix starts the name of every sink transaction; it should be
	// unique to the job on its output system (default "faultline").
	TxnPrefix string
	// DeadLetters takes unparseable records with --on-bad-record
	// dead-letter (nil: none).
	DeadLetters DeadLetters
	// Poison writes a record that can never be parsed into partition of
	// input topic (the poison fault) and returns its offset; nil when the
	// input cannot take one.
	Poison func(topic string, partition int32) (int64, error)
}

func (e *Env) source(topic string) (Source, error) {
	if s, ok := e.Sources[topic]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("no input topic %q (topics: %s)", topic, strings.Join(keys(e.Sources), ", "))
}

func (e *Env) output(topic string) (TxnOutput, error) {
	if o, ok := e.Outputs[topic]; ok {
		return o, nil
	}
	return nil, fmt.Errorf("no output topic %q (topics: %s)", topic, strings.Join(keys(e.Outputs), ", "))
}

// partitions is how many partitions the source of topic reads (0: the job
// has no source of it).
func (e *Env) partitions(topic string) int {
	if e == nil {
		return 0
	}
	if s, ok := e.Sources[topic]; ok {
		return s.Partitions()
	}
	return 0
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// mailKind is what a control message asks of a task.
type mailKind int

const (
	mailTrigger  mailKind = iota // sources: inject a barrier
	mailComplete                 // checkpoint completed
	mailAborted                  // checkpoint aborted by the coordinator
	mailFault                    // an injected fault
)

type mail struct {
	kind      mailKind
	id        int64
	triggerNs int64
	savepoint bool
	mode      barrier.Mode // the checkpoint's mode (mailTrigger)
	unaligned bool         // the checkpoint is unaligned (mailTrigger)
	entry     *faultEntry  // mailFault
}

// mailbox is a task's unbounded queue of control messages (Flink: the
// task's mailbox). Posting never blocks; the task drains it between
// batches, so control messages are handled in the task's own goroutine.
type mailbox struct {
	gate *gate
	mu   sync.Mutex
	q    []mail
}

func newMailbox(g *gate) *mailbox { return &mailbox{gate: g} }

func (m *mailbox) post(x mail) {
	m.mu.Lock()
	m.q = append(m.q, x)
	m.mu.Unlock()
	m.gate.signal()
}

func (m *mailbox) drain(dst []mail) []mail {
	m.mu.Lock()
	dst = append(dst, m.q...)
	m.q = m.q[:0]
	m.mu.Unlock()
	return dst
}
