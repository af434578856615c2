package kafka

import (
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// recordWriter writes the records of one sink transaction to a topic's
// partitions as record batches, sent with Sarama's protocol layer
// (Broker.Produce, AddPartitionsToTxn) on the output's client (Flink:
// the KafkaWriter's producer). Sarama's producer hands every message
// through four goroutines and a channel each, which costs more than the
// rest of the job per record; this writer appends a record to its
// partition's open batch on the caller's goroutine, and one sender
// goroutine sends the full batches in order, one request at a time, so
// that the sequence numbers of an idempotent or transactional producer
// stay in order and a retry of a batch is deduplicated by the broker.
//
// A transactional writer (txnID set) adds each partition to the
// transaction before its first batch; committing or aborting is the
// caller's EndTxn with the writer's producer id and epoch. Without txnID
// the batches carry no producer id (at-least-once).
//
// write and flush are for one goroutine (the sink subtask's); the sender
// is the writer's own, and close waits for it.
type recordWriter struct {
	cl      sarama.Client
	topic   string
	parts   int32
	part    sarama.Partitioner
	txnID   *string
	pid     int64
	epoch   int16
	version int16 // of the produce request

	open []*sarama.RecordBatch // per partition, the batch being filled
	size []int                 // its estimated size in bytes
	seq  []int32               // per partition, the next sequence number
	msg  sarama.ProducerMessage
	recs []sarama.Record // allocated in blocks, handed out one by one

	sendq  chan writeBatch // to the sender, in order
	stop   chan struct{}   // closed by abandon: drop what is queued
	done   chan struct{}   // the sender ended
	flight *inFlight       // batches queued or being sent; the first failure, which every later write returns
}

type writeBatch struct {
	partition int32
	batch     *sarama.RecordBatch
}

// Batches are sent when they hold this many records or bytes (Kafka's
// default message.max.bytes is 1 MiB).
const (
	batchRecords = 4096
	batchBytes   = 512 << 10
	// Per record on the wire at most: attributes, varint lengths and
	// deltas.
	recordOverhead = 24
	// A batch that failed is sent again this many times, backoff apart,
	// before the write fails (and the sink subtask with it).
	sendTries   = 6
	sendBackoff = 100 * time.Millisecond
)

// newRecordWriter starts a writer for topic; txnID, pid and epoch are
// those of an initialised transactional producer, or nil, -1, -1.
func newRecordWriter(cl sarama.Client, topic string, txnID *string, pid int64, epoch int16) (*recordWriter, error) {
	parts, err := cl.Partitions(topic)
	if err != nil {
		return nil, fmt.Errorf("partitions of %s: %w", topic, err)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("topic %s has no partitions", topic)
	}
	n := int32(len(parts))
	w := &recordWriter{
		cl: cl, topic: topic, parts: n, part: sarama.NewHashPartitioner(topic),
		txnID: txnID, pid: pid, epoch: epoch, version: produceVersion(cl.Config().Version),
		open: make([]*sarama.RecordBatch, n), size: make([]int, n), seq: make([]int32, n),
		sendq: make(chan writeBatch, 2), stop: make(chan struct{}), done: make(chan struct{}), flight: newInFlight(),
	}
	w.msg.Topic = topic
	go w.run()
	return w, nil
}

// produceVersion is the produce request version Sarama's own producer
// uses for a configured Kafka version (at least 3: record batches).
func produceVersion(v sarama.KafkaVersion) int16 {
	return requestVersion(v, 3, versionStep{sarama.V3_7_0_0, 10}, versionStep{sarama.V2_8_0_0, 9},
		versionStep{sarama.V2_4_0_0, 8}, versionStep{sarama.V2_1_0_0, 7}, versionStep{sarama.V2_0_0_0, 6},
		versionStep{sarama.V1_0_0_0, 5})
}

// versionStep: from Kafka version kafka on, a request goes as version.
type versionStep struct {
	kafka   sarama.KafkaVersion
	version int16
}

// requestVersion is the version of the first step, newest first, that v
// reaches, or oldest.
func requestVersion(v sarama.KafkaVersion, oldest int16, newestFirst ...versionStep) int16 {
	for _, s := range newestFirst {
		if v.IsAtLeast(s.kafka) {
			return s.version
		}
	}
	return oldest
}

// write appends a record with timestamp now to its partition's batch (the
// partition Sarama's hash partitioner picks for key), sending the batch
// once it is full. key and value must not change afterwards.
func (w *recordWriter) write(key, value []byte, now time.Time) error {
	if err := w.flight.failed(); err != nil {
		return err
	}
	p := int32(0)
	if w.parts > 1 {
		w.msg.Key = sarama.ByteEncoder(key)
		var err error
		if p, err = w.part.Partition(&w.msg, w.parts); err != nil {
			return fmt.Errorf("partition for key %q: %w", key, err)
		}
	}
	b := w.open[p]
	if b == nil {
		b = &sarama.RecordBatch{
			Version: 2, FirstTimestamp: now, ProducerID: w.pid, ProducerEpoch: w.epoch,
			FirstSequence: -1, IsTransactional: w.txnID != nil,
			Records: make([]*sarama.Record, 0, batchRecords),
		}
		w.open[p], w.size[p] = b, 0
	}
	if len(w.recs) == 0 {
		w.recs = make([]sarama.Record, 256)
	}
	r := &w.recs[0]
	w.recs = w.recs[1:]
	*r = sarama.Record{Key: key, Value: value, TimestampDelta: now.Sub(b.FirstTimestamp), OffsetDelta: int64(len(b.Records))}
	b.Records = append(b.Records, r)
	b.MaxTimestamp = now
	w.size[p] += len(key) + len(value) + recordOverhead
	if len(b.Records) >= batchRecords || w.size[p] >= batchBytes {
		w.send(p)
	}
	return nil
}

// send hands partition p's open batch to the sender.
func (w *recordWriter) send(p int32) {
	b := w.open[p]
	if b == nil {
		return
	}
	w.open[p] = nil
	b.LastOffsetDelta = int32(len(b.Records) - 1)
	if w.pid >= 0 {
		b.FirstSequence = w.seq[p]
		w.seq[p] += int32(len(b.Records))
	}
	w.flight.add()
	select {
	case w.sendq <- writeBatch{partition: p, batch: b}:
	case <-w.stop:
		w.flight.settle(errWriterClosed)
	}
}

// flush sends every open batch and waits until the broker acknowledged
// all that was written (the pre-commit of a transaction).
func (w *recordWriter) flush() error {
	for p := range w.open {
		w.send(int32(p))
	}
	return w.flight.wait()
}

// close stops the sender once what is queued was sent; abandon stops it
// at once and fails what was not sent. Either may be called from any
// goroutine, also while write or flush run.
func (w *recordWriter) close() {
	w.flight.wait()
	w.abandon()
}

func (w *recordWriter) abandon() {
	if w.flight.stop() {
		close(w.stop)
	}
	<-w.done
}

// run is the sender: it sends the queued batches in order. After a batch
// failed, the later ones are not sent (their sequence numbers would be
// out of order) and fail too.
func (w *recordWriter) run() {
	defer close(w.done)
	added := make([]bool, w.parts)
	for {
		var wb writeBatch
		select {
		case <-w.stop:
			return
		case wb = <-w.sendq:
		}
		err := w.flight.failed()
		if err == nil && w.txnID != nil && !added[wb.partition] {
			err = w.addPartition(wb.partition)
			added[wb.partition] = err == nil
		}
		if err == nil {
			err = w.produce(wb)
		}
		w.flight.settle(err)
	}
}

// retriable reports whether a request that failed with err may succeed
// when sent again, after a metadata refresh.
func retriable(err error) bool {
	var kerr sarama.KError
	if !errors.As(err, &kerr) {
		return true // the connection broke
	}
	switch kerr {
	case sarama.ErrNotLeaderForPartition, sarama.ErrLeaderNotAvailable, sarama.ErrRequestTimedOut,
		sarama.ErrNotEnoughReplicas, sarama.ErrNotEnoughReplicasAfterAppend, sarama.ErrNetworkException,
		sarama.ErrUnknownTopicOrPartition, sarama.ErrKafkaStorageError, sarama.ErrConcurrentTransactions,
		sarama.ErrNotCoordinatorForConsumer, sarama.ErrConsumerCoordinatorNotAvailable, sarama.ErrOffsetsLoadInProgress:
		return true
	}
	return false
}

// retry runs f until it succeeds, fails for good, or sendTries ran out;
// between tries it waits, unless the writer is abandoned.
func (w *recordWriter) retry(what string, f func() error) error {
	var err error
	for try := 1; ; try++ {
		if err = f(); err == nil {
			return nil
		}
		if !retriable(err) || try == sendTries {
			return fmt.Errorf("%s: %w", what, err)
		}
		select {
		case <-w.stop:
			return fmt.Errorf("%s: %w", what, errWriterClosed)
		case <-time.After(sendBackoff):
		}
	}
}

func (w *recordWriter) addPartition(p int32) error {
	txn := *w.txnID
	return w.retry(fmt.Sprintf("add %s/%d to transaction %s", w.topic, p, txn), func() error {
		coord, err := w.cl.TransactionCoordinator(txn)
		if err != nil {
			return err
		}
		req := &sarama.AddPartitionsToTxnRequest{
			Version: addPartitionsVersion(w.cl.Config().Version), TransactionalID: txn,
			ProducerID: w.pid, ProducerEpoch: w.epoch, TopicPartitions: map[string][]int32{w.topic: {p}},
		}
		resp, err := coord.AddPartitionsToTxn(req)
		if err != nil {
			_ = coord.Close()
			_ = w.cl.RefreshTransactionCoordinator(txn)
			return err
		}
		for _, pe := range resp.Errors[w.topic] {
			if pe.Err != sarama.ErrNoError {
				if pe.Err == sarama.ErrNotCoordinatorForConsumer || pe.Err == sarama.ErrConsumerCoordinatorNotAvailable {
					_ = w.cl.RefreshTransactionCoordinator(txn)
				}
				return pe.Err
			}
		}
		return nil
	})
}

// addPartitionsVersion is the AddPartitionsToTxn version Sarama's own
// transaction manager uses.
func addPartitionsVersion(v sarama.KafkaVersion) int16 {
	return requestVersion(v, 0, versionStep{sarama.V2_8_0_0, 3}, versionStep{sarama.V2_7_0_0, 2}, versionStep{sarama.V2_0_0_0, 1})
}

func (w *recordWriter) produce(wb writeBatch) error {
	return w.retry(fmt.Sprintf("write to %s/%d", w.topic, wb.partition), func() error {
		b, err := w.cl.Leader(w.topic, wb.partition)
		if err != nil {
			_ = w.cl.RefreshMetadata(w.topic)
			return err
		}
		req := &sarama.ProduceRequest{
			RequiredAcks: sarama.WaitForAll, Timeout: int32(10 * time.Second / time.Millisecond),
			Version: w.version, TransactionalID: w.txnID,
		}
		req.AddBatch(w.topic, wb.partition, wb.batch)
		resp, err := b.Produce(req)
		if err != nil {
			_ = b.Close() // the client opens it again
			_ = w.cl.RefreshMetadata(w.topic)
			return err
		}
		blk := resp.GetBlock(w.topic, wb.partition)
		switch {
		case blk == nil:
			return fmt.Errorf("the broker did not answer for partition %d", wb.partition)
		case blk.Err == sarama.ErrNoError, blk.Err == sarama.ErrDuplicateSequenceNumber:
			return nil
		}
		if retriable(blk.Err) {
			_ = w.cl.RefreshMetadata(w.topic)
		}
		return blk.Err
	})
}
