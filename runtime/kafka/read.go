package kafka

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime"
)

// A plain read knows its end exactly and waits up to firstWait for each
// record before it calls the input short. A read_committed read cannot see
// its end: the last offsets of a transactional topic are commit markers
// and aborted records, which a consumer never gets. When no record has
// come for quiet, it asks the partition's leader itself whether anything
// committed is left to come (committedFrom); it gives up with an error
// when the consumer delivers nothing for patience although something is.
const (
	firstWait = 10 * time.Second
	quiet     = 200 * time.Millisecond
	patience  = time.Minute
)

// ReadCommitted reads the committed records of topic, from the given
// offsets (nil or missing: the beginning) up to the end, with a
// read_committed Sarama consumer: what a downstream consumer sees.
func ReadCommitted(ctx context.Context, c Client, topic string, from map[int32]int64) ([]runtime.OutputRecord, error) {
	return Read(ctx, c, topic, from, nil, true)
}

// EndOffsets returns the next offset of every partition of topic.
func EndOffsets(cl sarama.Client, topic string) (map[int32]int64, error) {
	return offsetsOf(cl, topic, sarama.OffsetNewest, "end")
}

// StartOffsets returns the first offset every partition of topic still
// holds (above 0 once records were deleted).
func StartOffsets(cl sarama.Client, topic string) (map[int32]int64, error) {
	return offsetsOf(cl, topic, sarama.OffsetOldest, "start")
}

func offsetsOf(cl sarama.Client, topic string, which int64, what string) (map[int32]int64, error) {
	parts, err := cl.Partitions(topic)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	out := map[int32]int64{}
	for _, p := range parts {
		if out[p], err = cl.GetOffset(topic, p, which); err != nil {
			return nil, fmt.Errorf("%s offset of %s/%d: %w", what, topic, p, err)
		}
	}
	return out, nil
}

// Read reads topic's records from the offsets in from (missing: the
// partition's first) up to those in to (nil: the end), read_committed when
// committed, every partition at once: the broker's retention's read, which
// reads in rounds up to bounds of its own, and the sink's recovery's.
func Read(ctx context.Context, c Client, topic string, from, to map[int32]int64, committed bool) ([]runtime.OutputRecord, error) {
	var out []runtime.OutputRecord
	err := ReadEach(ctx, c, topic, from, to, committed, func(r runtime.OutputRecord) error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadEach is Read handing each record to f as it comes instead of
// keeping them: what it holds is the consumer's buffers, however long the
// topic. The partitions are read at once; f is called by one at a time, in
// offset order within a partition, each record with the topic's watermark
// as of it (Record.Watermark). An error of f ends the read with it.
func ReadEach(ctx context.Context, c Client, topic string, from, to map[int32]int64, committed bool, f func(runtime.OutputRecord) error) error {
	cfg, err := c.Config()
	if err != nil {
		return err
	}
	if committed {
		cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	cfg.Consumer.MaxWaitTime = 50 * time.Millisecond
	cl, err := c.NewClientWith(cfg)
	if err != nil {
		return err
	}
	defer cl.Close()
	ends := to
	if ends == nil {
		if ends, err = EndOffsets(cl, topic); err != nil {
			return err
		}
	}
	consumer, err := sarama.NewConsumerFromClient(cl)
	if err != nil {
		return err
	}
	defer consumer.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tr := newTopicRead(ends, f)
	var wg sync.WaitGroup
	for p, end := range ends {
		start, ok := from[p]
		if !ok {
			if start, err = cl.GetOffset(topic, p, sarama.OffsetOldest); err != nil {
				cancel()
				wg.Wait()
				return err
			}
		}
		if start >= end {
			tr.done(p, nil) // nothing to read there: it holds nothing back
			continue
		}
		pc, err := consumer.ConsumePartition(topic, p, start)
		if err != nil {
			cancel()
			wg.Wait()
			return fmt.Errorf("read %s/%d: %w", topic, p, err)
		}
		part := partitionRead{cl: cl, pc: pc, topic: topic, p: p, start: start, end: end, committed: committed}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer pc.AsyncClose()
			i := tr.index[p]
			err := part.read(ctx, func(r runtime.OutputRecord) error { return tr.deliver(r, p, i) })
			if err != nil {
				err = fmt.Errorf("read %s/%d: %w", topic, p, err)
				cancel()
			}
			tr.done(p, err)
		}()
	}
	wg.Wait()
	if err := tr.err(); err != nil {
		return err
	}
	return ctx.Err()
}

// topicRead is what ReadEach's partition readers share: f, called by one
// at a time, the topic's watermark over the partitions (Record.Watermark;
// index is each one's place in it) and the readers' errors.
type topicRead struct {
	mu    sync.Mutex
	f     func(runtime.OutputRecord) error
	wm    runtime.Watermarks
	index map[int32]int
	errs  []error
}

func newTopicRead(parts map[int32]int64, f func(runtime.OutputRecord) error) *topicRead {
	tr := &topicRead{f: f, wm: runtime.NewWatermarks(len(parts)), index: map[int32]int{}}
	for p := range parts {
		tr.index[p] = len(tr.index)
	}
	return tr
}

// deliver hands f record r of partition p, the i-th of the watermark,
// with the watermark as of it.
func (tr *topicRead) deliver(r runtime.OutputRecord, p int32, i int) error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.errs) > 0 {
		return tr.errs[0]
	}
	r.Watermark, r.Partition = tr.wm.Advance(i, r.Time), p
	return tr.f(r)
}

// done notes that partition p has been read, with err (nil: to its end):
// it no longer holds the watermark back.
func (tr *topicRead) done(p int32, err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.wm.End(tr.index[p])
	if err != nil {
		tr.errs = append(tr.errs, err)
	}
}

func (tr *topicRead) err() error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.errs) > 0 {
		return tr.errs[0]
	}
	return nil
}

// partitionRead is the read of one partition, from start up to end.
type partitionRead struct {
	cl         sarama.Client
	pc         sarama.PartitionConsumer
	topic      string
	p          int32
	start, end int64
	committed  bool
}

// read hands the partition's records to deliver; it returns no error when
// ctx ends first (ReadEach sees ctx's end).
func (r partitionRead) read(ctx context.Context, deliver func(runtime.OutputRecord) error) error {
	wait := firstWait
	if r.committed {
		wait = quiet
	}
	idle := time.NewTimer(wait)
	defer idle.Stop()
	next, silent := r.start, time.Duration(0)
	for {
		select {
		case m := <-r.pc.Messages():
			if m.Offset >= r.end {
				// A read_committed consumer skips what is aborted and may
				// hand over a record past end: not ours.
				return nil
			}
			if err := deliver(runtime.OutputRecord{Key: m.Key, Value: m.Value, Time: m.Timestamp.UnixMilli()}); err != nil {
				return err
			}
			next, silent = m.Offset+1, 0
			if next >= r.end {
				return nil
			}
			idle.Reset(wait)
		case err := <-r.pc.Errors():
			return err
		case <-idle.C:
			if !r.committed {
				return fmt.Errorf("nothing came after offset %d of %d", next, r.end)
			}
			more, err := committedFrom(r.cl, r.topic, r.p, next, r.end)
			if err != nil {
				return err
			}
			if !more {
				return nil
			}
			if silent += quiet; silent >= patience {
				return fmt.Errorf("the consumer delivered nothing after offset %d for %s, though committed records follow", next, patience)
			}
			idle.Reset(quiet)
		case <-ctx.Done():
			return nil
		}
	}
}

// committedFrom reports whether a read_committed consumer of partition p
// of topic has a record still to hand out at an offset in [from, end): it
// sorts what the broker holds there as the consumer does (VisibleIn), so
// that the oracle's read ends where the committed records end rather than
// after a silence.
func committedFrom(cl sarama.Client, topic string, p int32, from, end int64) (bool, error) {
	for from < end {
		last, reached, err := VisibleIn(cl, topic, p, from, end, sarama.ReadCommitted)
		if err != nil {
			return false, err
		}
		if last >= 0 {
			return true, nil
		}
		if reached == from {
			return false, nil // nothing more is visible: the last stable offset
		}
		from = reached
	}
	return false, nil
}

// Inputs reads a job's input topics for the verification oracle, straight
// from Kafka and independently of the job.
type Inputs struct {
	C Client
	// Topics maps the job's topic names to Kafka's (missing: the same).
	Topics map[string]string
	// From is where the job started reading, per Kafka topic and partition
	// (missing: the beginning).
	From map[string]map[int32]int64
}

// ReadInput implements verify.InputReader.
func (in Inputs) ReadInput(ctx context.Context, topic string, bounds map[int32]int64, f func(value []byte, eventTime, watermark int64) error) error {
	actual := topic
	if t, ok := in.Topics[topic]; ok {
		actual = t
	}
	to := bounds
	if to != nil {
		// Bounds name only the partitions a checkpoint covered; those it
		// does not name were not read at all.
		cl, err := in.C.NewClientContext(ctx)
		if err != nil {
			return err
		}
		parts, err := cl.Partitions(actual)
		cl.Close()
		if err != nil {
			return err
		}
		to = map[int32]int64{}
		for _, p := range parts {
			to[p] = bounds[p]
			if from, ok := in.From[actual][p]; ok && to[p] < from {
				to[p] = from
			}
		}
	}
	return in.each(ctx, actual, in.From[actual], to, f)
}

// ReadInputAfter implements verify.InputReader.
func (in Inputs) ReadInputAfter(ctx context.Context, topic string, bounds map[int32]int64, f func(value []byte, eventTime, watermark int64) error) error {
	actual := topic
	if t, ok := in.Topics[topic]; ok {
		actual = t
	}
	from := maps.Clone(in.From[actual])
	if from == nil {
		from = map[int32]int64{}
	}
	for p, o := range bounds {
		from[p] = max(o, from[p])
	}
	return in.each(ctx, actual, from, nil, f)
}

// each calls f with every record of Kafka topic from from to to (nil: the
// end there is now), as it reads them.
func (in Inputs) each(ctx context.Context, topic string, from, to map[int32]int64, f func(value []byte, eventTime, watermark int64) error) error {
	return ReadEach(ctx, in.C, topic, from, to, false, func(r runtime.OutputRecord) error { return f(r.Value, r.Time, r.Watermark) })
}
