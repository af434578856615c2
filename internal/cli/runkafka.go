package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/fill"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui"
)

// startKafka starts the embedded broker unless --brokers names a cluster,
// connects, makes sure of the topics, and writes the generator's input:
// all of it before the job with --records, or at --rate while it runs.
func (r *runState) startKafka(ctx context.Context) error {
	o, p := r.o, r.p
	r.generate = o.kafka.generate
	if len(p.client.Brokers) == 0 {
		if err := r.startEmbedded(ctx); err != nil {
			return err
		}
	}
	cl, err := p.client.NewClientContext(ctx)
	if err != nil {
		return exitError{code: 1, err: err}
	}
	r.cl = cl
	r.onClose(func() { cl.Close() })
	topics := map[string]int32{}
	for _, op := range p.job.Operators {
		switch op.Type {
		case spec.TypeSource:
			topics[p.topicMap[op.Name]] = orders.GeneratorPartitions
		case spec.TypeSink:
			topics[p.topicMap[op.Name]] = 1
		}
	}
	if o.onBadRecord == runtime.BadRecordDeadLetter {
		topics[o.deadLetterTopic] = 1
	}
	if !r.generate {
		if err := r.checkSourceTopics(); err != nil {
			return err
		}
	}
	if err := kafka.EnsureTopics(ctx, cl, topics, orders.TopicOrders, orders.TopicPayments); err != nil {
		return exitError{code: 1, err: err}
	}
	if err := r.checkInputWhole(); err != nil {
		return err
	}
	r.gen = orders.NewGenerator(o.seed, o.records, orders.GeneratorPartitions)
	if !r.generate {
		return nil
	}
	if r.embedded != nil {
		// From the writer's first record on, the state dir's broker log
		// holds this input.
		if err := r.recordInput(); err != nil {
			return exitError{code: 1, err: err}
		}
	}
	w := fill.NewWriter(p.client, cl, r.gen).WithTopics(p.logicalTopics())
	if o.records > 0 && p.rate == 0 {
		return r.fill(ctx, w)
	}
	writerDone := make(chan error, 1)
	wctx, wcancel := context.WithCancel(ctx)
	r.onClose(func() {
		wcancel()
		<-writerDone
	})
	r.uiWriter = w
	go func() {
		err := w.Run(wctx, p.rate)
		if err != nil {
			// Without its input the job cannot go on: stop the run.
			err = fmt.Errorf("the input writer failed: %w", err)
			r.obs.Emit(view.InputWriterFailed{Error: err.Error()})
			r.stopRun(err)
		}
		writerDone <- err
	}()
	return nil
}

// checkSourceTopics refuses source topics that do not exist when faultline
// writes no input: nothing would write into a topic faultline created, and
// a misspelt --topic would read nothing and look like success.
func (r *runState) checkSourceTopics() error {
	p := r.p
	readBy := map[string]string{} // source topic → its operator
	for _, op := range p.job.Operators {
		if op.Type == spec.TypeSource {
			readBy[p.topicMap[op.Name]] = op.Name
		}
	}
	missing, err := kafka.MissingTopics(r.cl, slices.Collect(maps.Keys(readBy)))
	if err != nil {
		return exitError{code: 1, err: err}
	}
	if len(missing) == 0 {
		return nil
	}
	var names []string
	for _, m := range missing {
		names = append(names, fmt.Sprintf("%s (read by %s)", m, readBy[m]))
	}
	topic, it := "topic", "it"
	if len(missing) > 1 {
		topic, it = "topics", "them"
	}
	return exitError{code: 1, err: fmt.Errorf("no %s %s at %s: create %s, name another with --topic, or add --generate to have faultline create %s and write the generator's records into %s",
		topic, strings.Join(names, ", "), strings.Join(p.client.Brokers, ","), it, it, it)}
}

// fill writes a bounded input into Kafka before the job starts, showing
// how far it got.
func (r *runState) fill(ctx context.Context, w *fill.Writer) error {
	o := r.o
	start := time.Now()
	var shown, total int64
	w.WithProgress(time.Second, func(written, of int64) {
		shown, total = written, of
		if o.headless {
			r.obs.Emit(view.InputProgress{Records: written, Of: of})
		} else {
			// Before the UI takes the screen: one line, rewritten.
			fmt.Fprintf(r.stdout, "\rfaultline: writing the input into Kafka: %s of %s records (%d%%)", tui.Thousands(written), tui.Thousands(of), written*100/max(of, 1))
		}
	})
	n, err := w.Fill(ctx)
	if shown > 0 && !o.headless {
		fmt.Fprintln(r.stdout)
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return exitError{code: 1, err: fmt.Errorf("%w (while writing the input into Kafka, with about %s of its %s records written)", cause, tui.Thousands(n), tui.Thousands(max(total, n)))}
		}
		if ctx.Err() != nil {
			return exitError{code: 1, err: fmt.Errorf("stopped while writing the input into Kafka, with about %s of its %s records written (the next run writes the rest)", tui.Thousands(n), tui.Thousands(max(total, n)))}
		}
		return exitError{code: 1, err: fmt.Errorf("fill the input topics: %w", err)}
	}
	r.obs.Emit(view.InputWritten{Records: n, DurationMs: time.Since(start).Milliseconds()})
	// The log holds the whole input now: the next run checks that it
	// still does.
	if r.embedded != nil && r.input.Written != o.records {
		r.input.Written = o.records
		if err := writeInputRecord(r.stateDir, r.input); err != nil {
			return exitError{code: 1, err: err}
		}
	}
	return nil
}
