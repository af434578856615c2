package cli

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/verify"
	"github.com/faultline-dev/faultline/runtime/view"
)

// ledgerFile is the verification ledger's place in the state dir.
var ledgerFile = filepath.Join("verify", "ledger")

// stateNeeds is what a state dir holds that points into the embedded
// broker's log.
type stateNeeds struct {
	checkpoints []*checkpoint.Completed // retained checkpoints and savepoints
	positions   map[string]map[int32]int64
	ledger      string       // the ledger's file, when the runs need it
	input       *inputRecord // nil: not checked
	inputs      map[string]string
}

// logNeeds turns what the state dir holds into what it needs the broker's
// log to hold (broker.LogNeeds): each retained checkpoint's source offsets
// and where its sinks' pre-committed transactions began, the ledger's
// positions, within the log; the end of an input written whole (inputs
// maps the generator's topics to the job's), reached by it.
func logNeeds(s stateNeeds) broker.LogNeeds {
	var n broker.LogNeeds
	add := func(to *[]broker.LogNeed, offsets map[string]map[int32]int64, why string) {
		for topic, parts := range offsets {
			for p, o := range parts {
				*to = append(*to, broker.LogNeed{Topic: topic, Partition: p, Offset: o, Why: why})
			}
		}
	}
	for _, c := range s.checkpoints {
		add(&n.Within, c.SourceOffsets(), fmt.Sprintf("%s %d's source offset", c.Kind, c.ID))
		add(&n.Within, c.OutputFloor(), fmt.Sprintf("where %s %d's pre-committed transactions began", c.Kind, c.ID))
	}
	if len(s.checkpoints) > 0 {
		newest := slices.MaxFunc(s.checkpoints, func(a, b *checkpoint.Completed) int { return cmp.Compare(a.ID, b.ID) })
		n.Checkpoints = fmt.Sprintf("checkpoints (newest %d)", newest.ID)
	}
	add(&n.Within, s.positions, "the verification ledger's position")
	if in := s.input; in != nil && in.Written > 0 && s.inputs != nil {
		gen := orders.NewGenerator(in.Seed, in.Written, orders.GeneratorPartitions)
		for genTopic, topic := range s.inputs {
			for p := range orders.GeneratorPartitions {
				n.Reach = append(n.Reach, broker.LogNeed{Topic: topic, Partition: int32(p), Offset: gen.EndOffset(genTopic, p),
					Why: fmt.Sprintf("the input written whole (--records %d, %s)", in.Written, inputFile)})
			}
		}
	}
	n.Ledger = s.ledger
	for _, l := range [][]broker.LogNeed{n.Within, n.Reach} {
		slices.SortStableFunc(l, func(a, b broker.LogNeed) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
		})
	}
	return n
}

// brokerNeeds reads what the state dir holds for the broker command, which
// runs no job: its checkpoints and its ledger's positions, but not its
// input (the job's topics are a run's to know).
func brokerNeeds(ctx context.Context, store *badgerstore.Store, stateDir string) (broker.LogNeeds, error) {
	cps, err := store.All(ctx)
	if err != nil {
		return broker.LogNeeds{}, err
	}
	s := stateNeeds{checkpoints: cps}
	if len(cps) > 0 {
		s.ledger = filepath.Join(stateDir, ledgerFile)
	}
	// A damaged ledger is the run's to report (it says what to do); here
	// it has no positions.
	if l, err := verify.Load(filepath.Join(stateDir, ledgerFile)); err == nil {
		s.positions = l.Positions
	}
	return logNeeds(s), nil
}

// startEmbedded starts the embedded broker with its log in the state dir,
// once the log is found to hold what the state dir needs of it.
func (r *runState) startEmbedded(ctx context.Context) error {
	o, p := r.o, r.p
	topics := map[string]int32{}
	for _, t := range p.logicalTopics() {
		topics[t] = orders.GeneratorPartitions
	}
	for _, op := range p.job.Operators {
		if op.Type == spec.TypeSink {
			topics[p.topicMap[op.Name]] = 1
		}
	}
	logDir := filepath.Join(r.stateDir, "kafka")
	needs, err := r.logNeeds(ctx)
	if err != nil {
		return exitError{code: 1, err: err}
	}
	embedded, err := broker.StartEmbedded(o.kafka.listen, logDir, topics, broker.WithLogNeeds(needs))
	if err != nil {
		return exitError{code: 1, err: err}
	}
	r.onClose(embedded.Close)
	r.embedded = embedded
	obs := r.obs
	r.brokerDown = func(d time.Duration) error {
		embedded.Down(d)
		time.AfterFunc(d, func() { obs.Emit(view.BrokerUp{Address: embedded.Addr}) })
		return nil
	}
	p.client.Brokers = []string{embedded.Addr}
	p.client.Embedded = true
	r.generate = true
	if embedded.Note != "" {
		fmt.Fprintln(r.stderr, "faultline:", embedded.Note)
	}
	r.obs.Emit(view.BrokerStarted{Address: embedded.Addr, Embedded: true, LogDir: logDir, Note: embedded.Note})
	return nil
}

// logNeeds is what the state dir needs the embedded broker's log to hold:
// what its checkpoints point into, and when the run goes on from them,
// what the ledger has counted up to (and the ledger itself, when the log
// was trimmed); the end of the input, when it was written whole.
func (r *runState) logNeeds(ctx context.Context) (broker.LogNeeds, error) {
	cps, err := r.store.All(ctx)
	if err != nil {
		return broker.LogNeeds{}, err
	}
	s := stateNeeds{checkpoints: cps, input: &r.input, inputs: r.p.logicalTopics()}
	if r.continues {
		s.positions, s.ledger = r.ledger.Positions, r.ledgerPath
	}
	return logNeeds(s), nil
}
