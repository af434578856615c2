package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
	"github.com/faultline-dev/faultline/runtime/verify"
	"github.com/faultline-dev/faultline/runtime/view"
)

// commitVisibleTimeout bounds the wait for the output's last commit
// markers before the verification reads it.
const commitVisibleTimeout = 30 * time.Second

// verify is the oracle: what a read_committed consumer of the output sees,
// against the inputs read straight from Kafka, from where the ledger left
// off. Over a large input it takes seconds: it says so before. It gives up
// when ctx ends (a stopped run out of time: see stopBudget).
func (r *runState) verify(ctx context.Context, res *runtime.Result) (verify.Verification, error) {
	p := r.p
	r.obs.Emit(view.VerifyStarted{JobStatus: string(res.Status)})
	bounds := checkpoint.Offsets{}
	if res.Status != runtime.JobFinished || !r.bounded {
		if res.Latest != nil {
			for topic, offs := range res.Latest.SourceOffsets() {
				for logical, actual := range p.logicalTopics() {
					if actual == topic {
						bounds[logical] = offs
					}
				}
			}
		}
	} else {
		for logical, actual := range p.logicalTopics() {
			bounds[logical] = r.sources[actual].EndOffsets()
		}
	}
	from := map[string]map[int32]int64{}
	for topic, s := range r.sources {
		from[topic] = s.StartOffsets()
	}
	outputStart := r.outputStart
	if r.continues || res.Resumed != 0 {
		// A run that goes on from the runs before it checks their output
		// too: from the beginning of the topic, as the input is.
		for topic := range outputStart {
			outputStart[topic] = nil
		}
	}
	// What the ledger accounted for is read from where it stopped: the
	// broker may have deleted what lies before.
	for topic := range r.sources {
		for part, off := range r.ledger.Positions[topic] {
			if from[topic] == nil {
				from[topic] = map[int32]int64{}
			}
			from[topic][part] = off
		}
	}
	for topic, start := range outputStart {
		if pos := r.ledger.Positions[topic]; len(pos) > 0 {
			m := maps.Clone(start)
			if m == nil {
				m = map[int32]int64{}
			}
			maps.Copy(m, pos)
			outputStart[topic] = m
		}
	}
	guarantee := r.guarantee()
	held := verify.Held{Ahead: res.Ahead}
	if (res.Status != runtime.JobFinished || !r.bounded) && res.Latest != nil {
		held.InFlight = res.Latest.InFlightIDs()
	}
	v, err := verify.VerifyHeld(ctx, r.ledger, kafka.Inputs{C: p.client, Topics: p.logicalTopics(), From: from}, guarantee, bounds, held, r.outputReader(outputStart))
	if err != nil {
		return verify.Verification{}, exitError{code: 1, err: fmt.Errorf("verify: %w", err)}
	}
	return v, nil
}

// verifyOffReason is what a report says when the job spec turned the
// verification off.
const verifyOffReason = "the job spec turns the verification off (verify: false)"

// guarantee is what the run's output is judged against: at-least-once
// when its sink does not write transactions, the mode otherwise.
func (r *runState) guarantee() string {
	if r.p.sinkG != sink.ExactlyOnce {
		return "at-least-once"
	}
	return r.o.mode
}

// outputReader reads what a read_committed consumer sees of each output
// topic from its start (partition → offset), record by record into the
// oracle, all topics at once: each read waits for its consumer's first
// fetch, about 0.4 s, which one topic after another made 3 s for a job of
// seven.
func (r *runState) outputReader(starts map[string]map[int32]int64) verify.OutputReader {
	return func(ctx context.Context, f func(verify.Record) error) error {
		var (
			mu   sync.Mutex
			wg   sync.WaitGroup
			errs = make(map[string]error, len(starts))
		)
		one := func(rec runtime.OutputRecord) error {
			mu.Lock()
			defer mu.Unlock()
			return f(rec)
		}
		for topic, start := range starts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := r.readOutput(ctx, topic, start, one)
				mu.Lock()
				errs[topic] = err
				mu.Unlock()
			}()
		}
		wg.Wait()
		for _, topic := range slices.Sorted(maps.Keys(errs)) {
			if err := errs[topic]; err != nil {
				return fmt.Errorf("read %s: %w", topic, err)
			}
		}
		return nil
	}
}

// readOutput reads output topic from start into f, once the commit markers
// of the last transactions, which may still be on their way into its
// partitions, are there.
func (r *runState) readOutput(ctx context.Context, topic string, start map[int32]int64, f func(runtime.OutputRecord) error) error {
	if out := r.outputs[topic]; out != nil {
		if err := out.AwaitCommitted(ctx, commitVisibleTimeout); err != nil {
			if ctx.Err() != nil {
				return err
			}
			fmt.Fprintf(r.stderr, "faultline: verify: the output's last commits are not visible yet: %v\n", err)
		}
	}
	return kafka.ReadEach(ctx, r.p.client, topic, start, nil, true, f)
}
