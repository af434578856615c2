//go:build flinkbench

package flinkbench

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// outputWatch times an engine's output as a downstream reader sees it: when
// its first record is in the topic (read_uncommitted) and when the last of
// the expected records is committed (read_committed). Both engines are
// timed the same way, from outside, so that neither one's start-up (a
// JVM's and a MiniCluster's, or the embedded broker's connections) nor
// its tear-down counts.
type outputWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	first  atomic.Int64 // Unix ns of the first record seen (0: none yet)
	last   atomic.Int64 // Unix ns when the committed count reached the expected

	mu sync.Mutex
	// arrivals and commits are when each record was seen, read_uncommitted
	// (aborted ones too) and read_committed, in Unix ns.
	arrivals, commits []int64
}

// watchOutput creates topic (one partition, as either engine's sink would
// have it created) and returns once both readers consume it, so that a
// record's arrival is when it was written, give or take a fetch.
func watchOutput(t *testing.T, addr, topic string, expected int) *outputWatch {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	admin, err := sarama.NewClusterAdmin([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
	admin.Close()
	if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		t.Fatalf("create %s: %v", topic, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &outputWatch{cancel: cancel}
	ready := make(chan struct{}, 2)
	for _, iso := range []sarama.IsolationLevel{sarama.ReadUncommitted, sarama.ReadCommitted} {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.read(ctx, addr, topic, iso, expected, ready)
		}()
	}
	for range 2 {
		select {
		case <-ready:
		case <-time.After(30 * time.Second):
			t.Fatalf("the readers of %s did not start", topic)
		}
	}
	return w
}

// read consumes every partition of topic from its start, once it exists,
// until ctx ends or what it watches for happened.
func (w *outputWatch) read(ctx context.Context, addr, topic string, iso sarama.IsolationLevel, expected int, ready chan<- struct{}) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Consumer.IsolationLevel = iso
	cfg.Consumer.MaxWaitTime = 20 * time.Millisecond
	cfg.Metadata.AllowAutoTopicCreation = false
	var parts []int32
	var client sarama.Client
	for ctx.Err() == nil {
		var err error
		if client == nil {
			client, err = sarama.NewClient([]string{addr}, cfg)
		}
		if err == nil {
			client.RefreshMetadata(topic)
			parts, err = client.Partitions(topic)
		}
		if err == nil && len(parts) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if client == nil {
		return
	}
	defer client.Close()
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return
	}
	defer consumer.Close()
	var n atomic.Int64
	var pw sync.WaitGroup
	for _, p := range parts {
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			return
		}
		pw.Add(1)
		go func() {
			defer pw.Done()
			ready <- struct{}{}
			defer pc.AsyncClose()
			for {
				select {
				case <-ctx.Done():
					return
				case <-pc.Messages():
					now := time.Now().UnixNano()
					w.mu.Lock()
					if iso == sarama.ReadUncommitted {
						w.arrivals = append(w.arrivals, now)
					} else {
						w.commits = append(w.commits, now)
					}
					w.mu.Unlock()
					if iso == sarama.ReadUncommitted {
						w.first.CompareAndSwap(0, now)
						continue
					}
					if n.Add(1) == int64(expected) {
						w.last.Store(now)
						return
					}
				}
			}
		}()
	}
	pw.Wait()
}

// recovery is, for a failure at Unix ns at, how long until the output's
// first record after the restart (the first to arrive after a silence of
// at least gap, from at on) and until the committed output held as many
// records as the output had when the job failed (everything it had
// emitted then, committed or not, done again and committed). Call it
// after span.
func (w *outputWatch) recovery(at int64, gap time.Duration) (again, back time.Duration, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	arr := slices.Clone(w.arrivals)
	com := slices.Clone(w.commits)
	slices.Sort(arr)
	slices.Sort(com)
	before, _ := slices.BinarySearch(arr, at+1)
	prev := at
	for _, t := range arr[before:] {
		if t-prev >= int64(gap) {
			again = time.Duration(t - at)
			break
		}
		prev = t
	}
	if before == 0 || before > len(com) || again == 0 {
		return 0, 0, false
	}
	return again, time.Duration(com[before-1] - at), true
}

// span stops the watch and returns the time from the first output record
// to the last commit (0 when either was not seen).
func (w *outputWatch) span() time.Duration {
	deadline := time.Now().Add(30 * time.Second)
	for w.last.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	w.cancel()
	w.wg.Wait()
	if w.first.Load() == 0 || w.last.Load() == 0 {
		return 0
	}
	return time.Duration(w.last.Load() - w.first.Load())
}
