// Package fill writes a job's seeded input (the orders job's generator)
// into its Kafka input topics, each record at its partition and offset, so
// that a writer can go on where another stopped: all of a bounded input at
// once, or an unbounded one at a rate the UI can change. Flink has no
// counterpart: its jobs read what others write.
package fill

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime/kafka"
)

// Input is the seeded input a Writer writes into Kafka (the orders job's
// Generator): every record a pure function of its topic, partition and
// offset, so that a writer can go on where another stopped.
type Input interface {
	// Topics are the input's topics, in the order the writer takes them.
	Topics() []string
	// Partitions is how many partitions each topic has.
	Partitions() int
	// Bounded reports whether the input has an end; EndOffset is where
	// a partition of a bounded one ends.
	Bounded() bool
	EndOffset(topic string, p int) int64
	// Read returns the record at offset off of topic's partition p, and
	// Key the Kafka key of a record it returned.
	Read(topic string, p int, off int64) ([]byte, bool)
	Key(value []byte) []byte
	// Due reports whether the record at off of topic's partition p may
	// be written yet, given how far partition p of each topic being
	// written is (written; ok false for a topic not written): a record
	// may wait for those of another topic that belong with it.
	Due(topic string, p int, off int64, written func(topic string) (off int64, ok bool)) bool
}

// Writer writes the generator's records into the input topics with a Sarama
// producer, each record at the partition and in the order the generator
// gives, so that offset k of a partition holds the generator's record k.
// Because of that it can always continue from a partition's end: a second
// run on the same broker adds nothing that is already there.
type Writer struct {
	c      kafka.Client
	cl     sarama.Client
	gen    Input
	topics map[string]string // generator topic → Kafka topic
	rate   atomic.Uint64     // records/s as float64 bits; 0: as fast as it can

	progress      func(written, total int64) // WithProgress
	progressEvery time.Duration
}

// WithProgress makes the writer call f about every interval while it
// writes, with the records written so far and, for a bounded generator,
// how many it has to write in all (0 when there is no end).
func (w *Writer) WithProgress(every time.Duration, f func(written, total int64)) *Writer {
	w.progress, w.progressEvery = f, every
	return w
}

// Rate is the records/s the writer writes at (0: as fast as it can).
func (w *Writer) Rate() float64 { return math.Float64frombits(w.rate.Load()) }

// SetRate changes the rate of a running writer; it takes effect at once.
func (w *Writer) SetRate(r float64) { w.rate.Store(math.Float64bits(max(r, 0))) }

// WithTopics writes the generator's topics (orders, payments) to other
// Kafka topics; a generator topic m does not name is not written (a job
// that reads only orders gets no payments topic).
func (w *Writer) WithTopics(m map[string]string) *Writer { w.topics = m; return w }

func (w *Writer) actual(t string) string {
	if a, ok := w.topics[t]; ok {
		return a
	}
	return t
}

// NewWriter returns a writer of gen's records to the cluster c; cl is a
// client of the same cluster, for offsets.
func NewWriter(c kafka.Client, cl sarama.Client, gen Input) *Writer {
	return &Writer{c: c, cl: cl, gen: gen}
}

func (w *Writer) producer() (sarama.AsyncProducer, error) {
	cfg, err := w.c.Config()
	if err != nil {
		return nil, err
	}
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	// Idempotent, retrying for about a minute (Sarama keeps a slot per
	// retry, so not for ever): a broker that goes away for a while (the
	// broker-down fault) delays the input, never duplicates or drops a
	// record, and the records keep their order in each partition.
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Retry.Max = 240
	cfg.Producer.Retry.Backoff = 250 * time.Millisecond
	cfg.Metadata.Retry.Max = 240
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	cfg.Producer.Return.Successes = false
	cfg.Producer.Return.Errors = true
	// Both are needed: Flush.Messages alone makes SendMessages hang.
	cfg.Producer.Flush.Messages = 1000
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	cfg.Producer.Flush.MaxMessages = 5000
	cfg.Producer.MaxMessageBytes = 1 << 20
	cfg.Producer.Transaction.ID = ""
	return sarama.NewAsyncProducer(w.c.Brokers, cfg)
}

// FillEventRate is the pace in event time of a bounded input written at
// once (Fill): its records are stamped as though written at this many
// records/s, the last about when the fill begins, the first as long
// before as the input lasts at that pace (a little over 20 minutes for
// 10,000,000 records). Stamped with the moment each was written, a fill at
// full speed would put a million records in one second of event time,
// which no shop's orders do: a join's state TTL (a minute of event time)
// would then never expire anything, and the join would hold every order
// never paid to the end of the run. Read at full speed, such an input is a
// backfill: a job goes through its event time far faster than the wall
// clock, as a Flink job replaying yesterday's topic does. An input written
// at a rate (Run) is stamped with the wall clock, as a live one is.
const FillEventRate = 8000

// Fill writes every record of a bounded generator that the topics do not
// hold yet, stamped at FillEventRate, and returns how many it wrote.
func (w *Writer) Fill(ctx context.Context) (int64, error) {
	w.SetRate(0)
	return w.write(ctx)
}

// Run writes an unbounded generator's records at about rate records/s
// until ctx ends.
func (w *Writer) Run(ctx context.Context, rate float64) error {
	w.SetRate(rate)
	_, err := w.write(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// inputs are the input's topics the writer writes: those WithTopics
// named, or all.
func (w *Writer) inputs() []string {
	if w.topics == nil {
		return w.gen.Topics()
	}
	var out []string
	for _, t := range w.gen.Topics() {
		if _, ok := w.topics[t]; ok {
			out = append(out, t)
		}
	}
	return out
}

// write writes the generator's records into the input topics, from where
// they end, at the writer's rate, until a bounded generator has no more or
// ctx ends; it returns how many it wrote.
func (w *Writer) write(ctx context.Context) (int64, error) {
	topics := w.inputs()
	next, total, err := w.resumeAt(topics)
	if err != nil {
		return 0, err
	}
	prod, err := w.producer()
	if err != nil {
		return 0, fmt.Errorf("input writer: %w", err)
	}
	errs := make(chan error, 1)
	go func() {
		for e := range prod.Errors() {
			select {
			case errs <- e:
			default:
			}
		}
	}()
	r := &writeRun{w: w, prod: prod, errs: errs, next: next, total: total, lastReport: time.Now(), pace: pacer{w: w, last: time.Now()}}
	if w.Rate() == 0 && total > 0 {
		r.stamps = newEventClock(time.Now(), total, FillEventRate)
	}
	closed := false
	defer func() {
		if !closed {
			wait := producerCloseWait
			if ctx.Err() != nil {
				wait = stoppedCloseWait
			}
			closeProducer(prod, wait)
		}
	}()
	for progressed := true; progressed; {
		if progressed, err = r.round(ctx, topics); err != nil {
			return r.written, err
		}
	}
	closed = true
	if err := prod.Close(); err != nil {
		return r.written, fmt.Errorf("input writer: %w", err)
	}
	select {
	case err := <-errs:
		return r.written, fmt.Errorf("input writer: %w", err)
	default:
	}
	return r.written, nil
}

// writeRun is a write under way: where each partition of the topics is
// written up to (next), and how much was written of the total.
type writeRun struct {
	w              *Writer
	prod           sarama.AsyncProducer
	errs           <-chan error
	next           map[string][]int64
	written, total int64
	lastReport     time.Time
	pace           pacer
	at             int // the partition Input.Due asks about
	// stamps gives the records' timestamps in a fill (zero: the
	// producer stamps each with the moment it is sent).
	stamps eventClock
}

// eventClock stamps the records of a fill at rate records/s of event
// time, so that the total-th record is stamped at end (FillEventRate).
// A fill that goes on from where another stopped begins after the last
// record that one stamped, as long as the wall clock has not gone back.
type eventClock struct {
	first time.Time
	rate  float64
}

func newEventClock(end time.Time, total int64, rate float64) eventClock {
	return eventClock{first: end.Add(-time.Duration(float64(total-1) / rate * float64(time.Second))), rate: rate}
}

// at is the timestamp of the record written after n others (zero time:
// none, the producer stamps it).
func (c eventClock) at(n int64) time.Time {
	if c.rate == 0 {
		return time.Time{}
	}
	return c.first.Add(time.Duration(float64(n) / c.rate * float64(time.Second)))
}

// round writes what is due of every partition of topics, one record each,
// and reports whether it wrote any. A record may wait for those of
// another topic (Input.Due): the orders job's payments for their block of
// orders, so that an order and its payment are written close together.
func (r *writeRun) round(ctx context.Context, topics []string) (progressed bool, err error) {
	for _, t := range topics {
		for p := 0; p < r.w.gen.Partitions(); p++ {
			if r.at = p; !r.w.gen.Due(t, p, r.next[t][p], r.writtenTo) {
				continue
			}
			b, ok := r.w.gen.Read(t, p, r.next[t][p])
			if !ok {
				continue
			}
			if err := r.send(ctx, t, p, b); err != nil {
				return progressed, err
			}
			progressed = true
		}
	}
	return progressed, nil
}

// writtenTo is where partition r.at of topic is written up to (ok false
// for a topic not written).
func (r *writeRun) writtenTo(topic string) (int64, bool) {
	offs, ok := r.next[topic]
	if !ok {
		return 0, false
	}
	return offs[r.at], true
}

// send writes record b at the next offset of topic's partition p, at the
// writer's pace, and reports progress.
func (r *writeRun) send(ctx context.Context, t string, p int, b []byte) error {
	if err := r.pace.wait(ctx); err != nil {
		return err
	}
	msg := &sarama.ProducerMessage{Topic: r.w.actual(t), Partition: int32(p), Value: sarama.ByteEncoder(b), Key: sarama.ByteEncoder(r.w.gen.Key(b)),
		Timestamp: r.stamps.at(r.written)}
	select {
	case r.prod.Input() <- msg:
	case err := <-r.errs:
		return fmt.Errorf("write %s/%d: %w", t, p, err)
	case <-ctx.Done():
		return ctx.Err()
	}
	r.next[t][p]++
	r.written++
	if r.w.progress != nil && r.written%1024 == 0 && time.Since(r.lastReport) >= r.w.progressEvery {
		r.w.progress(r.written, r.total)
		r.lastReport = time.Now()
	}
	return nil
}

// resumeAt returns the offset each partition of topics is written from
// (its end: what an earlier writer wrote stays), and, for a bounded
// generator, how many records are left to write.
func (w *Writer) resumeAt(topics []string) (next map[string][]int64, total int64, err error) {
	next = map[string][]int64{}
	for _, t := range topics {
		for p := 0; p < w.gen.Partitions(); p++ {
			end, err := w.cl.GetOffset(w.actual(t), int32(p), sarama.OffsetNewest)
			if err != nil {
				return nil, 0, fmt.Errorf("end offset of %s/%d: %w", t, p, err)
			}
			next[t] = append(next[t], end)
		}
	}
	if w.gen.Bounded() {
		for _, t := range topics {
			for p := 0; p < w.gen.Partitions(); p++ {
				total += max(w.gen.EndOffset(t, p)-next[t][p], 0)
			}
		}
	}
	return next, total, nil
}

// pacer holds the writer to its rate: allowed is how many records may go
// now; it grows with the rate as time passes, up to a fifth of a second's
// worth.
type pacer struct {
	w       *Writer
	allowed float64
	last    time.Time
}

// wait returns once one more record may go, or with ctx's error.
func (p *pacer) wait(ctx context.Context) error {
	rate := p.w.Rate()
	if rate <= 0 {
		return nil
	}
	for p.allowed < 1 {
		wait := max(time.Duration((1-p.allowed)/rate*float64(time.Second)), 5*time.Millisecond)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		now := time.Now()
		rate = p.w.Rate()
		p.allowed = min(p.allowed+rate*now.Sub(p.last).Seconds(), max(rate/5, 1))
		p.last = now
	}
	p.allowed--
	return nil
}

// producerCloseWait bounds how long a writer whose write failed waits for
// the records its producer still holds; stoppedCloseWait, one whose run
// was stopped, which must end within a few seconds (Ctrl-C, SIGTERM).
const (
	producerCloseWait = 5 * time.Second
	stoppedCloseWait  = 500 * time.Millisecond
)

// closeProducer closes p, waiting at most d for the records it still holds:
// with the broker gone, Sarama would retry each of them for a minute (see
// producer) before Close returned, and the run could not end. Nothing is
// lost by not waiting: a later run writes what the input topics lack.
func closeProducer(p sarama.AsyncProducer, d time.Duration) {
	done := make(chan struct{})
	go func() {
		p.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}
