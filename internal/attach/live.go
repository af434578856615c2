package attach

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/live"
	"github.com/faultline-dev/faultline/runtime/verify"
	"github.com/faultline-dev/faultline/runtime/view"
)

// The live verification line of an attached job: the oracle of a run's
// live line (runtime/kafka/live), over the job's Kafka input and output.
// What a checkpoint covers of the input is what the job's sources commit
// to their consumer group once it completes (Flink's KafkaSource does,
// commit.offsets.on.checkpoint): the group's offsets are the bounds of the
// newest completed checkpoint's check. They may lag the checkpoint Flink
// reports (Flink commits them after it completes), never lead it, so a
// record counted lost is one the checkpoint covered.

// LiveVerify follows an attached job's output and judges it.
type LiveVerify struct {
	v      *live.LiveVerifier
	group  *groupOffsets
	newest atomic.Int64 // the newest completed checkpoint the polls saw
}

// LiveOptions say what the live line reads.
type LiveOptions struct {
	Client kafka.Client
	// Group is the consumer group the job's sources commit their offsets
	// to when a checkpoint completes.
	Group string
	// Output is the topic the job's sink writes.
	Output string
	// Expect is the relation the output holds; its input topics are the
	// Kafka topics of the same names.
	Expect verify.Expect
}

// StartLiveVerify follows the job's input and output until ctx ends.
func StartLiveVerify(ctx context.Context, o LiveOptions) *LiveVerify {
	inputs := map[string]string{}
	for _, t := range o.Expect.Inputs {
		inputs[t] = t
	}
	l := &LiveVerify{v: live.NewLiveVerifier(live.LiveConfig{Client: o.Client, Inputs: inputs, Output: o.Output, Expect: o.Expect}),
		group: &groupOffsets{client: o.Client, group: o.Group, topics: o.Expect.Inputs}}
	go l.v.Run(ctx, l.committed)
	go func() {
		<-ctx.Done()
		l.group.close()
	}()
	return l
}

// Verify is the line for snapshot s (Options.Verify).
func (l *LiveVerify) Verify(s view.Snapshot) view.Verify {
	l.newest.Store(s.Checkpoints.LastCompleted)
	st := l.v.Status()
	v := view.Verify{Available: st.Available, Committed: st.Committed, Duplicates: st.Duplicates,
		Lost: st.Lost, AsOf: st.AsOf, Err: st.Err, NotJoined: st.NotJoined, InFlight: st.InFlight}
	if err := l.group.error(); err != "" && v.Err == "" {
		v.Err = err
	}
	return v
}

// committed is live.Committed: the newest completed checkpoint with the
// group's offsets as its bounds, once the group has offsets for every
// input partition.
func (l *LiveVerify) committed() (int64, checkpoint.Offsets, []string, bool) {
	id := l.newest.Load()
	if id == 0 {
		return 0, nil, nil, false
	}
	bounds, ok := l.group.offsets()
	return id, bounds, nil, ok
}

// groupRefresh is how often the group's offsets are asked for.
const groupRefresh = time.Second

// groupOffsets are a consumer group's committed offsets of the input
// topics, asked for at most every groupRefresh.
type groupOffsets struct {
	client kafka.Client
	group  string
	topics []string

	mu     sync.Mutex
	admin  sarama.ClusterAdmin
	parts  map[string][]int32
	last   checkpoint.Offsets
	asked  time.Time
	err    string
	closed bool
}

// offsets are the group's offsets, ok once every input partition has one.
func (g *groupOffsets) offsets() (checkpoint.Offsets, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if time.Since(g.asked) >= groupRefresh && !g.closed {
		g.asked = time.Now()
		if offs, err := g.fetch(); err != nil {
			g.err = fmt.Sprintf("the offsets of consumer group %s: %v", g.group, err)
		} else {
			g.err, g.last = "", offs
		}
	}
	return g.last, g.last != nil
}

// fetch asks the broker for the group's offsets; nil while a partition
// has none.
func (g *groupOffsets) fetch() (checkpoint.Offsets, error) {
	if g.admin == nil {
		cl, err := g.client.NewClient()
		if err != nil {
			return nil, err
		}
		admin, err := sarama.NewClusterAdminFromClient(cl)
		if err != nil {
			cl.Close()
			return nil, err
		}
		g.admin, g.parts = admin, map[string][]int32{}
		for _, t := range g.topics {
			if g.parts[t], err = cl.Partitions(t); err != nil {
				return nil, err
			}
		}
	}
	resp, err := g.admin.ListConsumerGroupOffsets(g.group, maps.Clone(g.parts))
	if err != nil {
		return nil, err
	}
	out := checkpoint.Offsets{}
	for t, parts := range g.parts {
		out[t] = map[int32]int64{}
		for _, p := range parts {
			b := resp.GetBlock(t, p)
			if b == nil || b.Offset < 0 {
				return nil, nil // not every partition committed yet
			}
			out[t][p] = b.Offset
		}
	}
	return out, nil
}

func (g *groupOffsets) error() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

func (g *groupOffsets) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	if g.admin != nil {
		g.admin.Close()
	}
}
