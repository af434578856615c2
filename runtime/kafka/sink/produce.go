package sink

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime/kafka"
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
// A record with a key goes to the partition Kafka's Java producer picks
// for it (murmur2 of the key, see keyPlacer); records without one fill one
// partition's batch, then the next (the Java producer's sticky
// partitioning).
//
// Every request goes in the newest version that both its broker (its
// ApiVersions answer) and Sarama can use, and is retried with a growing
// backoff for as long as the output's retry timeout allows while it
// fails with an error that may pass (a leader or coordinator that moved,
// a broken connection, not enough replicas, …); a broker that cannot be
// connected to twice in a row fails it at once (requestEnv, kafka.RetryPolicy).
// A broker that throttles this client gets no request until the time it
// asked for is over (KIP-219). A batch larger than the topic accepts is
// split in two and sent again.
//
// write and flush are for one goroutine (the sink subtask's); the sender
// is the writer's own, and close waits for it.
type recordWriter struct {
	cl      sarama.Client
	topic   string
	parts   int32
	sticky  int32 // where records without a key go
	keys    *keyPlacer
	txnID   *string
	pid     int64
	epoch   int16
	version int16 // the newest produce request version Sarama sends here
	// env is the output's retry policy and what it knows of the brokers:
	// set before the first write, read by the sender.
	env *requestEnv

	open []*sarama.RecordBatch // per partition, the batch being filled
	size []int                 // its estimated size in bytes
	seq  []int32               // per partition, the next sequence number
	// end is, per partition, the offset after the last record the broker
	// acknowledged (written by the sender; read once flush returned).
	end  []int64
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
)

// newRecordWriter starts a writer for topic; txnID, pid and epoch are
// those of an initialised transactional producer, or nil, -1, -1. env is
// the output's request environment (nil: one of its own, with the default
// retry policy, that learns the brokers' versions for itself); seq, when
// not nil, is where each partition's sequence numbers go on from (an
// idempotent producer's, carried over from its last writer).
func newRecordWriter(cl sarama.Client, topic string, txnID *string, pid int64, epoch int16, env *requestEnv, seq []int32) (*recordWriter, error) {
	parts, err := cl.Partitions(topic)
	if err != nil {
		return nil, fmt.Errorf("partitions of %s: %w", topic, err)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("topic %s has no partitions", topic)
	}
	if env == nil {
		env = newRequestEnv()
	}
	n := int32(len(parts))
	w := &recordWriter{
		cl: cl, topic: topic, parts: n, env: env, keys: newKeyPlacer(topic),
		txnID: txnID, pid: pid, epoch: epoch, version: produceVersion(cl.Config().Version),
		open: make([]*sarama.RecordBatch, n), size: make([]int, n), seq: make([]int32, n), end: make([]int64, n),
		sendq: make(chan writeBatch, 2), stop: make(chan struct{}), done: make(chan struct{}), flight: newInFlight(),
	}
	copy(w.seq, seq)
	go w.run()
	return w, nil
}

// produceVersion is the newest produce request version Sarama sends for a
// configured Kafka version (it refuses to send a version newer than that
// release had; it encodes up to v10); at least 3, record batches.
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

// write appends a record with timestamp now to its partition's batch
// (the Java producer's for a key, the sticky partition without one), sending the
// batch once it is full. key and value must not change afterwards.
func (w *recordWriter) write(key, value []byte, now time.Time) error {
	if err := w.flight.failed(); err != nil {
		return err
	}
	p := w.sticky
	if key != nil && w.parts > 1 {
		p = w.keys.partition(key, w.parts)
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
	if p == w.sticky {
		w.sticky = (p + 1) % w.parts
	}
	b.LastOffsetDelta = int32(len(b.Records) - 1)
	if w.pid >= 0 {
		b.FirstSequence = w.seq[p]
		w.seq[p] += int32(len(b.Records))
	}
	w.flight.add()
	select {
	case w.sendq <- writeBatch{partition: p, batch: b}:
	case <-w.stop:
		w.flight.settle(kafka.ErrWriterClosed)
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

// ErrRecordTooLarge means a single record is larger than the topic's
// max.message.bytes (or the broker's message.max.bytes): no batch can
// carry it. Raise the topic's limit or make the record smaller.
var ErrRecordTooLarge = errors.New("a record is larger than the topic accepts")

func (w *recordWriter) addPartition(p int32) error {
	txn := *w.txnID
	conf := w.cl.Config()
	return w.env.retry.Do(fmt.Sprintf("add %s/%d to transaction %s", w.topic, p, txn), w.stop, func() error {
		coord, err := w.env.coordinator(w.cl, txn, w.stop)
		if err != nil {
			return err
		}
		v, err := w.env.version(coord, apiAddPartitionsToTxn, addPartitionsLeast, addPartitionsVersion(conf.Version))
		if err != nil {
			return err
		}
		req := &sarama.AddPartitionsToTxnRequest{
			Version: v, TransactionalID: txn,
			ProducerID: w.pid, ProducerEpoch: w.epoch, TopicPartitions: map[string][]int32{w.topic: {p}},
		}
		resp, err := coord.AddPartitionsToTxn(req)
		if err != nil {
			w.env.broke(coord)
			_ = w.cl.RefreshTransactionCoordinator(txn)
			return err
		}
		w.env.throttled(coord, resp.ThrottleTime)
		for _, pe := range resp.Errors[w.topic] {
			if pe.Err != sarama.ErrNoError {
				if kafka.NeedsCoordinatorRefresh(pe.Err) {
					_ = w.cl.RefreshTransactionCoordinator(txn)
				}
				return pe.Err
			}
		}
		return nil
	})
}

// addPartitionsVersion is the newest AddPartitionsToTxn version Sarama
// sends for a configured Kafka version (and encodes: up to v3; v4 and
// later are for brokers only).
func addPartitionsVersion(v sarama.KafkaVersion) int16 {
	return requestVersion(v, 0, versionStep{sarama.V2_8_0_0, 3}, versionStep{sarama.V2_7_0_0, 2}, versionStep{sarama.V2_0_0_0, 1})
}

// produce sends a batch, retried by the writer's policy. A batch the
// broker finds too large is split in two halves, each sent in turn (and
// split again if need be); the halves take the failed batch's sequence
// numbers in order, since the broker wrote none of it.
func (w *recordWriter) produce(wb writeBatch) error {
	err := w.env.retry.Do(fmt.Sprintf("write to %s/%d", w.topic, wb.partition), w.stop, func() error { return w.produceOnce(wb) })
	if !errors.Is(err, sarama.ErrMessageSizeTooLarge) && !errors.Is(err, sarama.ErrMessageSetSizeTooLarge) {
		return err
	}
	if len(wb.batch.Records) == 1 {
		return w.recordTooLarge(wb, err)
	}
	first, second := splitBatch(wb.batch)
	if err := w.produce(writeBatch{partition: wb.partition, batch: first}); err != nil {
		return err
	}
	return w.produce(writeBatch{partition: wb.partition, batch: second})
}

func (w *recordWriter) produceOnce(wb writeBatch) error {
	b, err := w.cl.Leader(w.topic, wb.partition)
	if err != nil {
		_ = w.cl.RefreshMetadata(w.topic)
		var kerr sarama.KError
		if errors.As(err, &kerr) || errors.Is(err, sarama.ErrClosedClient) {
			return err
		}
		return &kafka.UnreachableError{What: fmt.Sprintf("the leader of %s/%d", w.topic, wb.partition), Err: err}
	}
	if err := w.env.ready(w.cl.Config(), b, w.stop); err != nil {
		_ = w.cl.RefreshMetadata(w.topic)
		return err
	}
	v, err := w.env.version(b, apiProduce, produceLeast, w.version)
	if err != nil {
		return err
	}
	req := &sarama.ProduceRequest{
		RequiredAcks: sarama.WaitForAll, Timeout: int32(10 * time.Second / time.Millisecond),
		Version: v, TransactionalID: w.txnID,
	}
	req.AddBatch(w.topic, wb.partition, wb.batch)
	resp, err := b.Produce(req)
	if err != nil {
		w.env.broke(b)
		_ = w.cl.RefreshMetadata(w.topic)
		return err
	}
	w.env.throttled(b, resp.ThrottleTime)
	blk := resp.GetBlock(w.topic, wb.partition)
	switch {
	case blk == nil:
		return fmt.Errorf("the broker did not answer for partition %d", wb.partition)
	case blk.Err == sarama.ErrNoError:
		w.end[wb.partition] = max(w.end[wb.partition], blk.Offset+int64(len(wb.batch.Records)))
		return nil
	case blk.Err == sarama.ErrDuplicateSequenceNumber:
		return nil // an earlier send of it was written
	}
	if needsMetadataRefresh(blk.Err) {
		_ = w.cl.RefreshMetadata(w.topic)
	}
	return blk.Err
}

// splitBatch splits a batch that was not written into two halves, with
// its producer id, epoch and sequence numbers in order. The records are
// copied, their offset and timestamp deltas counted from their half.
func splitBatch(b *sarama.RecordBatch) (*sarama.RecordBatch, *sarama.RecordBatch) {
	half := len(b.Records) / 2
	second := b.FirstSequence
	if second >= 0 {
		second += int32(half)
	}
	return subBatch(b, b.Records[:half], b.FirstSequence), subBatch(b, b.Records[half:], second)
}

func subBatch(b *sarama.RecordBatch, recs []*sarama.Record, firstSeq int32) *sarama.RecordBatch {
	first := b.FirstTimestamp.Add(recs[0].TimestampDelta)
	out := &sarama.RecordBatch{
		Version: 2, FirstTimestamp: first, MaxTimestamp: first, ProducerID: b.ProducerID, ProducerEpoch: b.ProducerEpoch,
		FirstSequence: firstSeq, IsTransactional: b.IsTransactional, LastOffsetDelta: int32(len(recs) - 1),
		Records: make([]*sarama.Record, len(recs)),
	}
	copies := make([]sarama.Record, len(recs))
	for i, r := range recs {
		at := b.FirstTimestamp.Add(r.TimestampDelta)
		copies[i] = *r
		copies[i].TimestampDelta = at.Sub(first)
		copies[i].OffsetDelta = int64(i)
		out.Records[i] = &copies[i]
		if at.After(out.MaxTimestamp) {
			out.MaxTimestamp = at
		}
	}
	return out
}

// recordTooLarge is the error for a batch of one record that the broker
// refused as too large: it names the record's size and, if the broker
// tells, the topic's max.message.bytes.
func (w *recordWriter) recordTooLarge(wb writeBatch, err error) error {
	r := wb.batch.Records[0]
	var kerr sarama.KError
	if errors.As(err, &kerr) {
		err = kerr
	}
	limit := ""
	if m, ok := w.maxMessageBytes(); ok {
		limit = fmt.Sprintf(" (its max.message.bytes is %d)", m)
	}
	return fmt.Errorf("write to %s/%d: a record of %d bytes (key and value) does not fit in a batch topic %s accepts%s: %w: %w",
		w.topic, wb.partition, len(r.Key)+len(r.Value), w.topic, limit, ErrRecordTooLarge, err)
}

// maxMessageBytes asks a broker for the topic's max.message.bytes.
func (w *recordWriter) maxMessageBytes() (int, bool) {
	b, err := w.cl.Leader(w.topic, 0)
	if err != nil {
		return 0, false
	}
	resp, err := b.DescribeConfigs(&sarama.DescribeConfigsRequest{
		Version:   1,
		Resources: []*sarama.ConfigResource{{Type: sarama.TopicResource, Name: w.topic, ConfigNames: []string{"max.message.bytes"}}},
	})
	if err != nil || len(resp.Resources) == 0 {
		return 0, false
	}
	for _, c := range resp.Resources[0].Configs {
		if c.Name == "max.message.bytes" {
			n, err := strconv.Atoi(c.Value)
			return n, err == nil
		}
	}
	return 0, false
}

// needsMetadataRefresh: the partition's leader moved or is not known yet.
func needsMetadataRefresh(err error) bool {
	for _, e := range []sarama.KError{sarama.ErrNotLeaderForPartition, sarama.ErrLeaderNotAvailable,
		sarama.ErrUnknownTopicOrPartition, sarama.ErrFencedLeaderEpoch, sarama.ErrUnknownLeaderEpoch, sarama.ErrKafkaStorageError} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
