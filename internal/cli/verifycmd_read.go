package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/verify"
	"github.com/faultline-dev/faultline/tui"
)

// verifyProgressEvery is how often a long verification says how far its
// reads got: a large input takes seconds.
const verifyProgressEvery = 2 * time.Second

// verifyRead counts what a verification has read, for its progress.
type verifyRead struct{ in, out atomic.Int64 }

// runVerify reads t's topics from t's cluster and returns the oracle's
// verdict, saying on stderr what it reads and how far it got; a broker
// that cannot be reached, or an input topic that is not there, is exit 1.
func runVerify(ctx context.Context, t verifyTarget, stderr io.Writer) (verify.Verification, error) {
	brokers := strings.Join(t.client.Brokers, ",")
	fmt.Fprintf(stderr, "faultline: verify: reading %s from %s…\n", joinAnd(append(slices.Clone(t.inputs), t.outputs...)), brokers)
	start := time.Now()
	cl, err := t.client.NewClientContext(ctx)
	if err != nil {
		return verify.Verification{}, exitError{code: 1, err: err}
	}
	defer cl.Close()
	outputs, bounds, err := verifyEnds(cl, t, brokers, stderr)
	if err != nil {
		return verify.Verification{}, exitError{code: 1, err: err}
	}
	l, err := verify.New(t.expect)
	if err != nil {
		return verify.Verification{}, exitError{code: 1, err: err}
	}
	var read verifyRead
	stop := showVerifyProgress(stderr, &read)
	in := countedInputs{kafka.Inputs{C: t.client, Topics: t.inputTopics()}, &read.in}
	v, err := verify.VerifyHeld(ctx, l, in, t.guarantee, bounds, verify.Held{}, committedOutput(t.client, outputs, &read.out))
	stop()
	switch {
	case err != nil && ctx.Err() != nil:
		return verify.Verification{}, exitError{code: 1, err: errors.New("verify: stopped before the output was checked")}
	case err != nil:
		return verify.Verification{}, exitError{code: 1, err: fmt.Errorf("verify: %w", err)}
	}
	fmt.Fprintf(stderr, "faultline: verify: read %s input and %s output records in %s\n",
		tui.Thousands(read.in.Load()), tui.Thousands(read.out.Load()), time.Since(start).Round(100*time.Millisecond))
	return v, nil
}

// verifyEnds finds where t's topics end as the verification starts: the
// output's (topic → partition → offset; a topic that is not there holds
// nothing, and is left out) and then the input's, the bounds of the
// relation's inputs. The output's first: a job writes output only for
// input it has read, so the input as it stands a moment later holds the
// input of every output record read, and a job still running shows no
// output as unexpected, only what it has not committed yet as lost.
func verifyEnds(cl sarama.Client, t verifyTarget, brokers string, stderr io.Writer) (map[string]map[int32]int64, map[string]map[int32]int64, error) {
	missing, err := kafka.MissingTopics(cl, append(slices.Clone(t.inputs), t.outputs...))
	if err != nil {
		return nil, nil, err
	}
	for i, topic := range t.inputs {
		if slices.Contains(missing, topic) {
			return nil, nil, fmt.Errorf("no topic %s at %s to read the relation's %s from: name the topics that hold its inputs with --inputs, in the order %s",
				topic, brokers, t.expect.Inputs[i], strings.Join(t.expect.Inputs, ", "))
		}
	}
	outputs := map[string]map[int32]int64{}
	for _, topic := range t.outputs {
		if slices.Contains(missing, topic) {
			fmt.Fprintf(stderr, "faultline: verify: no topic %s at %s: read as an empty output, so what the job should have written there counts as lost\n", topic, brokers)
			continue
		}
		if outputs[topic], err = kafka.EndOffsets(cl, topic); err != nil {
			return nil, nil, err
		}
	}
	bounds := map[string]map[int32]int64{}
	for i, topic := range t.inputs {
		if bounds[t.expect.Inputs[i]], err = kafka.EndOffsets(cl, topic); err != nil {
			return nil, nil, err
		}
	}
	for _, topic := range append(slices.Clone(t.inputs), slices.Sorted(maps.Keys(outputs))...) {
		if note := trimmedNote(cl, topic); note != "" {
			fmt.Fprintln(stderr, "faultline: verify:", note)
		}
	}
	return outputs, bounds, nil
}

// trimmedNote says that topic no longer holds its first records (Kafka's
// retention, or the embedded broker's that a run keeps its log small
// with): the verdict then covers only what is left, and is not to be
// trusted. "" when every partition starts at 0, or when that cannot be
// told.
func trimmedNote(cl sarama.Client, topic string) string {
	starts, err := kafka.StartOffsets(cl, topic)
	if err != nil {
		return ""
	}
	for _, p := range slices.Sorted(maps.Keys(starts)) {
		if starts[p] > 0 {
			return fmt.Sprintf("%s no longer holds its first records (partition %d starts at offset %d): what was deleted is not checked, so records may count as lost or unexpected", topic, p, starts[p])
		}
	}
	return ""
}

// committedOutput reads each output topic, read_committed, from its start
// up to ends (topic → partition → offset), counting the records into n.
// The topics are read one after another: a job has one output topic, and
// a second one's read costs a few tenths of a second more.
func committedOutput(c kafka.Client, ends map[string]map[int32]int64, n *atomic.Int64) verify.OutputReader {
	return func(ctx context.Context, f func(verify.Record) error) error {
		for _, topic := range slices.Sorted(maps.Keys(ends)) {
			err := kafka.ReadEach(ctx, c, topic, nil, ends[topic], true, func(r runtime.OutputRecord) error {
				n.Add(1)
				return f(r)
			})
			if err != nil {
				return fmt.Errorf("read %s: %w", topic, err)
			}
		}
		return nil
	}
}

// countedInputs is an InputReader that counts the records it reads into
// n; what it reads after the bounds (at-least-once output from input past
// them) is not counted again.
type countedInputs struct {
	verify.InputReader
	n *atomic.Int64
}

// ReadInput implements verify.InputReader.
func (c countedInputs) ReadInput(ctx context.Context, topic string, bounds map[int32]int64, f func(value []byte, eventTime, watermark int64) error) error {
	return c.InputReader.ReadInput(ctx, topic, bounds, func(v []byte, t, w int64) error {
		c.n.Add(1)
		return f(v, t, w)
	})
}

// showVerifyProgress prints how far the reads got every
// verifyProgressEvery until the returned stop is called; stop waits for
// the goroutine that prints.
func showVerifyProgress(stderr io.Writer, read *verifyRead) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(verifyProgressEvery)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				fmt.Fprintf(stderr, "faultline: verify: read %s input and %s output records so far…\n",
					tui.Thousands(read.in.Load()), tui.Thousands(read.out.Load()))
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
