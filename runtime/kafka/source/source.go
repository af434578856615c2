// Package source is the Kafka source of a job (Flink: KafkaSource): the
// partitions of one topic, read by the source subtasks with Sarama
// partition consumers from explicit offsets (a checkpoint's, or where the
// startup mode says), bounded or not, with per-partition watermarks, and
// the checkpoint's offsets committed to the consumer group in the
// background.
package source

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka"
)

// StartupMode is where a source starts reading a partition that the
// restored checkpoint has no offset for (Flink: OffsetsInitializer).
type StartupMode string

// Startup modes.
const (
	StartEarliest  StartupMode = "earliest"
	StartLatest    StartupMode = "latest"
	StartCommitted StartupMode = "committed" // the group's committed offsets, else earliest
)

// KeyStartup is the key of the startup mode (Flink's Kafka connector:
// scan.startup.mode).
const KeyStartup = "scan.startup.mode"

// ParseStartupMode reads a startup mode; an error is a
// *runtime.ConfigError.
func ParseStartupMode(s string) (StartupMode, error) {
	switch m := StartupMode(s); m {
	case StartEarliest, StartLatest, StartCommitted:
		return m, nil
	}
	return "", &runtime.ConfigError{Key: KeyStartup, Value: fmt.Sprintf("%q", s), Want: "earliest, latest or committed"}
}

// Source is one Kafka topic as a job source (Flink: KafkaSource): its
// partitions are assigned to the source subtasks, each of which reads its
// partitions with Sarama partition consumers from explicit offsets. A
// bounded source stops each partition at the end offset it had when the
// source was created.
type Source struct {
	c       kafka.Client
	cl      sarama.Client
	topic   string
	parts   int
	startup StartupMode
	group   string
	bounded bool

	mu     sync.Mutex
	end    map[int32]int64 // bounded: stop offsets (see ExtendEnd)
	starts map[int32]int64 // where a fresh start began, per partition
}

// StartOffsets is where the source first started reading each partition
// that no checkpoint gave an offset for.
func (s *Source) StartOffsets() map[int32]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int32]int64{}
	for p, o := range s.starts {
		out[p] = o
	}
	return out
}

// NewSource describes topic of cluster c, with cl a client of it for
// metadata, offsets and commits; every reader gets a connection of its own,
// so that one reader's waiting fetch never delays another's. ends makes the
// source bounded: each partition is read up to its end offset there (see
// kafka.EndOffsets for the topic's end now); nil reads on forever.
func NewSource(c kafka.Client, cl sarama.Client, topic string, startup StartupMode, group string, ends map[int32]int64) (*Source, error) {
	parts, err := cl.Partitions(topic)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	s := &Source{c: c, cl: cl, topic: topic, parts: len(parts), startup: startup, group: group}
	if ends != nil {
		s.bounded = true
		s.end = map[int32]int64{}
		for _, p := range parts {
			s.end[p] = ends[p]
		}
	}
	return s, nil
}

// Topic implements runtime.Source.
func (s *Source) Topic() string { return s.topic }

// Partitions implements runtime.Source.
func (s *Source) Partitions() int { return s.parts }

// EndOffsets are the stop offsets of a bounded source (nil when unbounded).
func (s *Source) EndOffsets() map[int32]int64 {
	if !s.bounded {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int32]int64, len(s.end))
	for p, o := range s.end {
		out[p] = o
	}
	return out
}

// endOf is partition p's stop offset (-1: unbounded).
func (s *Source) endOf(p int32) int64 {
	if !s.bounded {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end[p]
}

// ExtendEnd moves a bounded source's stop offset of partition p by n: a
// record written into the partition after the source was created (a poison
// record) is read too. Readers that already stopped at the old end stay
// stopped.
func (s *Source) ExtendEnd(p int32, n int64) {
	if !s.bounded {
		return
	}
	s.mu.Lock()
	s.end[p] += n
	s.mu.Unlock()
}

// Reader implements runtime.Source.
func (s *Source) Reader(partitions []int32, offsets map[int32]int64) (runtime.SourceReader, error) {
	cfg, err := s.c.Config()
	if err != nil {
		return nil, err
	}
	// A fetch that finds nothing waits this long on the broker; it bounds
	// how late the reader notices the end of a bounded partition.
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	rcl, err := s.c.NewClientWith(cfg)
	if err != nil {
		return nil, fmt.Errorf("consumer for %s: %w", s.topic, err)
	}
	consumer, err := sarama.NewConsumerFromClient(rcl)
	if err != nil {
		rcl.Close()
		return nil, fmt.Errorf("consumer for %s: %w", s.topic, err)
	}
	r := &reader{s: s, cl: rcl, consumer: consumer, next: map[int32]int64{},
		msgs: make(chan []*sarama.ConsumerMessage, 16), errs: make(chan error, 1), ends: make(chan int32, len(partitions)), stop: make(chan struct{}),
		index: make(map[int32]int, len(partitions)), wm: runtime.NewWatermarks(len(partitions))}
	var committed map[int32]int64
	for i, p := range partitions {
		r.index[p] = i
		start, ok := offsets[p]
		if !ok {
			switch s.startup {
			case StartLatest:
				start, err = s.cl.GetOffset(s.topic, p, sarama.OffsetNewest)
			case StartCommitted:
				if committed == nil {
					committed, err = s.committed(partitions)
				}
				var has bool
				if start, has = committed[p]; !has && err == nil {
					start, err = s.cl.GetOffset(s.topic, p, sarama.OffsetOldest)
				}
			default:
				start, err = s.cl.GetOffset(s.topic, p, sarama.OffsetOldest)
			}
			if err != nil {
				r.Close()
				return nil, fmt.Errorf("start offset of %s/%d: %w", s.topic, p, err)
			}
			s.mu.Lock()
			if s.starts == nil {
				s.starts = map[int32]int64{}
			}
			if _, seen := s.starts[p]; !seen {
				s.starts[p] = start
			}
			s.mu.Unlock()
		}
		r.next[p] = start
		if s.bounded && start >= s.endOf(p) {
			r.wm.End(i)
			continue
		}
		pc, err := consumer.ConsumePartition(s.topic, p, start)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("consume %s/%d from offset %d: %w", s.topic, p, start, err)
		}
		r.start(p, pc)
	}
	return r, nil
}

// committed fetches the group's committed offsets; a group that never
// committed has none.
func (s *Source) committed(partitions []int32) (map[int32]int64, error) {
	out := map[int32]int64{}
	if s.group == "" {
		return out, nil
	}
	coord, err := s.cl.Coordinator(s.group)
	if err != nil {
		return nil, fmt.Errorf("coordinator of group %s: %w", s.group, err)
	}
	req := &sarama.OffsetFetchRequest{Version: 1, ConsumerGroup: s.group}
	for _, p := range partitions {
		req.AddPartition(s.topic, p)
	}
	resp, err := coord.FetchOffset(req)
	if err != nil {
		return nil, fmt.Errorf("committed offsets of group %s: %w", s.group, err)
	}
	if errors.Is(resp.Err, sarama.ErrGroupIDNotFound) {
		return out, nil
	}
	for _, p := range partitions {
		b := resp.GetBlock(s.topic, p)
		if b == nil || errors.Is(b.Err, sarama.ErrGroupIDNotFound) || b.Offset < 0 {
			continue
		}
		if b.Err != sarama.ErrNoError {
			return nil, fmt.Errorf("committed offset of %s/%d: %w", s.topic, p, b.Err)
		}
		out[p] = b.Offset
	}
	return out, nil
}

type reader struct {
	s        *Source
	cl       sarama.Client // the reader's own connection
	consumer sarama.Consumer
	pcs      []sarama.PartitionConsumer
	parts    []int32 // the partition of each of pcs
	next     map[int32]int64
	live     int // partitions still being read

	msgs    chan []*sarama.ConsumerMessage
	pending []*sarama.ConsumerMessage // taken from msgs, not yet polled
	waited  time.Duration             // in Poll, for records to come (the task's goroutine only)
	times   runtime.EventTimes        // the polled records' event times
	// wm is the reader's watermark over its partitions, by their place in
	// index: the least of the newest event time polled of each (Flink: a
	// KafkaSource's per-partition watermarks, combined by its
	// SourceReader). A bounded partition read to its end no longer holds it
	// back; one that delivers nothing holds it at none (see
	// runtime.Watermarks: there is no idleness).
	wm    runtime.Watermarks
	index map[int32]int

	errs chan error
	ends chan int32 // a bounded partition reached its end
	stop chan struct{}
	wg   sync.WaitGroup

	commitOnce sync.Once
	commits    chan map[int32]int64
	commitMu   sync.Mutex
	commitErr  error
}

// start runs one forwarder per partition consumer: messages of every
// partition arrive on one channel, in order per partition.
func (r *reader) start(p int32, pc sarama.PartitionConsumer) {
	r.pcs, r.parts = append(r.pcs, pc), append(r.parts, p)
	r.live++
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		// Messages go on in batches: one channel hand-over per batch, not
		// per record.
		var batch []*sarama.ConsumerMessage
		for {
			select {
			case m, ok := <-pc.Messages():
				if !ok {
					return
				}
				end := r.s.endOf(p)
				// A new slice for each batch (the poller keeps the last),
				// as large as what is already waiting.
				batch = append(make([]*sarama.ConsumerMessage, 0, min(512, 1+len(pc.Messages()))), m)
				atEnd := end >= 0 && m.Offset+1 >= end
			more:
				for len(batch) < 512 && !atEnd {
					select {
					case m, ok := <-pc.Messages():
						if !ok {
							break more
						}
						batch = append(batch, m)
						atEnd = end >= 0 && m.Offset+1 >= end
					default:
						break more
					}
				}
				select {
				case r.msgs <- batch:
				case <-r.stop:
					return
				}
				if atEnd {
					select {
					case r.ends <- p:
					case <-r.stop:
					}
					return
				}
			case err, ok := <-pc.Errors():
				if !ok {
					return
				}
				select {
				case r.errs <- fmt.Errorf("read %s/%d: %w", r.s.topic, p, err):
				case <-r.stop:
					return
				}
			case <-r.stop:
				return
			}
		}
	}()
}

// Poll implements runtime.SourceReader.
func (r *reader) Poll(ctx context.Context, dst []runtime.Record, max int) ([]runtime.Record, bool, error) {
	bounded := r.s.bounded
	n := 0
	take := func() {
		if n >= max || len(r.pending) == 0 {
			return
		}
		k := min(max-n, len(r.pending))
		// A batch is of one partition.
		last := r.pending[k-1]
		i := r.index[last.Partition]
		for _, m := range r.pending[:k] {
			// The record's event time is its Kafka timestamp; the
			// watermark stamped on it counts it.
			t := m.Timestamp.UnixMilli()
			from := runtime.Origin{Topic: r.s.topic, Partition: m.Partition, Offset: m.Offset}
			dst = append(dst, runtime.Record{Bytes: m.Value, Value: r.times.New(t, r.wm.Advance(i, t), from)})
		}
		r.next[last.Partition] = last.Offset + 1
		if bounded && last.Offset+1 >= r.s.endOf(last.Partition) {
			r.wm.End(i)
		}
		r.pending = r.pending[k:]
		n += k
	}
	take()
	var idle *time.Timer
	defer func() {
		if idle != nil {
			idle.Stop()
		}
	}()
	for n < max {
		select {
		case b := <-r.msgs:
			r.pending = b
			take()
			continue
		case err := <-r.errs:
			return dst, false, err
		case <-r.ends:
			r.live--
			continue
		default:
		}
		if n > 0 || (bounded && r.live == 0) {
			break
		}
		// Nothing ready: wait a little, then give the task its mailbox back.
		if idle == nil {
			idle = time.NewTimer(20 * time.Millisecond)
		}
		waitFrom := time.Now()
		select {
		case b := <-r.msgs:
			r.pending = b
			take()
		case err := <-r.errs:
			return dst, false, err
		case <-r.ends:
			r.live--
		case <-idle.C:
			r.waited += time.Since(waitFrom)
			return dst, false, nil
		case <-ctx.Done():
			return dst, false, nil
		}
		r.waited += time.Since(waitFrom)
	}
	return dst, bounded && r.live == 0 && len(r.msgs) == 0 && len(r.pending) == 0, nil
}

// Watermark implements runtime.WatermarkReader.
func (r *reader) Watermark() int64 { return r.wm.Current() }

// Waited implements runtime.WaitingReader: the time Poll spent waiting
// for records.
func (r *reader) Waited() time.Duration { return r.waited }

// What the source task finds by type assertion, checked by the compiler.
var (
	_ runtime.Source          = (*Source)(nil)
	_ runtime.SourceReader    = (*reader)(nil)
	_ runtime.WaitingReader   = (*reader)(nil)
	_ runtime.OffsetCommitter = (*reader)(nil)
	_ runtime.CommitReporter  = (*reader)(nil)
	_ runtime.LagReporter     = (*reader)(nil)
)

// Offsets implements runtime.SourceReader.
func (r *reader) Offsets() map[int32]int64 {
	out := make(map[int32]int64, len(r.next))
	for p, o := range r.next {
		out[p] = o
	}
	return out
}

// CommitOffsets hands offsets to the reader's committer, which commits them
// to the consumer group in the background, as Flink's KafkaSource does when
// a checkpoint completes, so that Kafka tools show the job's progress and
// lag. The job does not depend on these commits, and the task never waits
// for one: when commits fall behind, only the newest offsets are committed.
func (r *reader) CommitOffsets(offsets map[int32]int64) error {
	if r.s.group == "" || len(offsets) == 0 {
		return nil
	}
	r.commitOnce.Do(func() {
		r.commits = make(chan map[int32]int64, 1)
		r.wg.Add(1)
		go r.committer()
	})
	for {
		select {
		case r.commits <- offsets:
			return nil
		default:
		}
		select {
		case <-r.commits: // drop the older offsets not committed yet
		default:
		}
	}
}

// LastCommitError is the error of the last offset commit, if it failed.
func (r *reader) LastCommitError() error {
	r.commitMu.Lock()
	defer r.commitMu.Unlock()
	return r.commitErr
}

func (r *reader) committer() {
	defer r.wg.Done()
	for {
		var offs map[int32]int64
		select {
		case offs = <-r.commits:
		case <-r.stop:
			// Offsets handed over just before Close are committed still:
			// a bounded source commits its final checkpoint's offsets and
			// closes at once, and select may see the stop first.
			select {
			case offs = <-r.commits:
			default:
				return
			}
		}
		if !r.closing() {
			if r.commitKeepingError(offs, commitRetryTimeout, r.stop) == nil || !r.closing() {
				continue
			}
			// Close came while these offsets waited for another try:
			// they, or newer ones handed over since, are the last.
			select {
			case offs = <-r.commits:
			default:
			}
		}
		// The last offsets, tried as long as Close waits for them.
		r.commitKeepingError(offs, lastCommitTimeout, nil)
		return
	}
}

// closing reports whether Close has begun.
func (r *reader) closing() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

// commitKeepingError commits offsets and keeps the error for
// LastCommitError, which it returns.
func (r *reader) commitKeepingError(offsets map[int32]int64, timeout time.Duration, stop <-chan struct{}) error {
	err := r.commit(offsets, timeout, stop)
	r.commitMu.Lock()
	r.commitErr = err
	r.commitMu.Unlock()
	return err
}

// commitRetryTimeout bounds the retries of one offset commit (a newer
// checkpoint's offsets follow soon), and lastCommitTimeout those of the
// commit of offsets handed over as the reader closes, which Close waits
// for.
const (
	commitRetryTimeout = 10 * time.Second
	lastCommitTimeout  = 3 * time.Second
)

// commit commits offsets to the group's coordinator, retrying while the
// coordinator is not ready: on a cluster that never had a consumer group,
// the first commit creates the offsets topic and is answered "coordinator
// not available" until it has loaded.
func (r *reader) commit(offsets map[int32]int64, timeout time.Duration, stop <-chan struct{}) error {
	if r.s.group == "" || len(offsets) == 0 {
		return nil
	}
	req := &sarama.OffsetCommitRequest{Version: 2, ConsumerGroup: r.s.group, ConsumerGroupGeneration: -1, RetentionTime: -1}
	parts := make([]int32, 0, len(offsets))
	for p := range offsets {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		req.AddBlock(r.s.topic, p, offsets[p], 0, "")
	}
	policy := kafka.DefaultRetryPolicy()
	policy.Timeout = timeout
	return policy.Do("commit offsets of group "+r.s.group, stop, func() error {
		coord, err := r.s.cl.Coordinator(r.s.group)
		if err != nil {
			return fmt.Errorf("coordinator of group %s: %w", r.s.group, err)
		}
		resp, err := coord.CommitOffset(req)
		if err != nil {
			_ = coord.Close() // the client opens it again
			_ = r.s.cl.RefreshCoordinator(r.s.group)
			return err
		}
		for _, p := range parts {
			if e := resp.Errors[r.s.topic][p]; e != sarama.ErrNoError {
				if kafka.NeedsCoordinatorRefresh(e) {
					_ = r.s.cl.RefreshCoordinator(r.s.group)
				}
				return fmt.Errorf("commit offset of %s/%d: %w", r.s.topic, p, e)
			}
		}
		return nil
	})
}

// Close implements runtime.SourceReader.
func (r *reader) Close() error {
	if r.stop != nil {
		close(r.stop)
	}
	for _, pc := range r.pcs {
		pc.AsyncClose()
	}
	r.wg.Wait()
	err := r.consumer.Close()
	r.cl.Close()
	return err
}
