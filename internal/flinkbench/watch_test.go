//go:build flinkbench

package flinkbench

import (
	"context"
	"sync"
	"sync/atomic"
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
}

func watchOutput(addr, topic string, expected int) *outputWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &outputWatch{cancel: cancel}
	for _, iso := range []sarama.IsolationLevel{sarama.ReadUncommitted, sarama.ReadCommitted} {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.read(ctx, addr, topic, iso, expected)
		}()
	}
	return w
}

// read consumes every partition of topic from its start, once it exists,
// until ctx ends or what it watches for happened.
func (w *outputWatch) read(ctx context.Context, addr, topic string, iso sarama.IsolationLevel, expected int) {
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
			defer pc.AsyncClose()
			for {
				select {
				case <-ctx.Done():
					return
				case <-pc.Messages():
					now := time.Now().UnixNano()
					if iso == sarama.ReadUncommitted {
						w.first.CompareAndSwap(0, now)
						return
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
