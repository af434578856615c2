// Package sink is the Kafka output behind the engine's two-phase-commit
// sink (Flink: KafkaSink): with exactly-once, a Kafka transaction per
// sink transaction, its transactional ids drawn from a pool per subtask,
// committed by EndTxn from any process and recovered after a crash; with
// at-least-once, an idempotent producer flushed on every barrier; with
// none, an async producer. Its records go through a record writer of its
// own that builds Sarama's record batches and sends them with Sarama's
// protocol layer. The dead-letter writer and the poison fault's writer
// live here too.
package sink

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka"
)

// Guarantee is the sink's delivery guarantee (Flink: DeliveryGuarantee).
type Guarantee string

// Delivery guarantees.
const (
	ExactlyOnce Guarantee = "exactly-once"  // a Kafka transaction per checkpoint
	AtLeastOnce Guarantee = "at-least-once" // flushed on every barrier, no transactions
	None        Guarantee = "none"          // written as it comes
)

// KeyGuarantee is the key of the sink's delivery guarantee (Flink's Kafka
// connector: sink.delivery-guarantee).
const KeyGuarantee = "sink.delivery-guarantee"

// ParseGuarantee reads a delivery guarantee; an error is a
// *runtime.ConfigError.
func ParseGuarantee(s string) (Guarantee, error) {
	switch g := Guarantee(s); g {
	case ExactlyOnce, AtLeastOnce, None:
		return g, nil
	}
	return "", &runtime.ConfigError{Key: KeyGuarantee, Value: fmt.Sprintf("%q", s), Want: "exactly-once, at-least-once or none"}
}

// Output writes a sink's records to a Kafka topic (Flink: KafkaSink). With
// ExactlyOnce, each sink transaction is a Kafka transaction whose
// transactional id is the transaction's name: its writer initialises the
// id (which fences an earlier producer of it), Prepare flushes it and
// returns its transactional id, producer id and epoch, so that Commit can
// finish it even from another process, by sending EndTxn with them (Flink:
// FlinkKafkaInternalProducer.resumeTransaction). AbortLingering aborts
// left-over transactions by initialising their transactional ids, which
// fences the old producer and aborts its open transaction. With AtLeastOnce
// and None, records are written without transactions and Commit does
// nothing: at-least-once sends them in batches and Prepare (the barrier)
// waits until all are acknowledged; none hands every record to an async
// producer at once and never waits (Flink: DeliveryGuarantee.NONE), so a
// failure can lose what was in flight, and Flush waits for it at the end.
type Output struct {
	c          kafka.Client
	cl         sarama.Client
	topic      string
	guarantee  Guarantee
	txnTimeout time.Duration // the transactions' timeout (Kafka: transaction.timeout.ms)
	env        *requestEnv   // the writers' and the transactions' retries, the brokers' versions

	mu   sync.Mutex
	txns map[string]*txnWriter // exactly-once and at-least-once
	// pools are the sink subtasks' transactional ids (exactly-once), idem
	// their idempotent producers not in use (at-least-once), both by
	// poolKey (see txnpool.go).
	pools map[string]*idPool
	idem  map[string]*idempotent
	// prepared holds, per committable of this output's transactions, the
	// offsets after their records; committedEnd is, per partition, the
	// furthest of those that committed (see AwaitCommitted).
	prepared     map[string]map[int32]int64
	committedEnd map[int32]int64
	committed    map[string]string // transactional id → the committable last committed with it
	whole        map[string]bool   // committables Missing found whole (see committedAlready)
	none         *asyncOut         // none
	// noneClosed is set by Close (under mu): none itself never changes.
	noneClosed bool
	// last is the transaction the last Write wrote into (named lastName),
	// so that a sink writing a checkpoint's records finds it without a
	// lookup each time; nil after anything left the map.
	last     *txnWriter
	lastName string
}

// asyncOut is the guarantee none's producer: fire and forget, with a count
// of the records not acknowledged yet so that Flush can wait for them; the
// first error is reported by the next Write, Prepare or Flush.
type asyncOut struct {
	p      sarama.AsyncProducer
	done   chan struct{} // the drainer ended
	flight *inFlight
}

func newAsyncOut(p sarama.AsyncProducer) *asyncOut {
	a := &asyncOut{p: p, done: make(chan struct{}), flight: newInFlight()}
	go a.drain()
	return a
}

// drain counts acknowledgements and errors until the producer closes.
func (a *asyncOut) drain() {
	defer close(a.done)
	succ, errs := a.p.Successes(), a.p.Errors()
	for succ != nil || errs != nil {
		select {
		case _, ok := <-succ:
			if !ok {
				succ = nil
				continue
			}
			a.flight.settle(nil)
		case e, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			a.flight.settle(e)
		}
	}
}

func (a *asyncOut) send(msg *sarama.ProducerMessage) error {
	err := a.flight.take()
	a.flight.add()
	a.p.Input() <- msg
	return err
}

// wait waits until every record sent is acknowledged or failed.
func (a *asyncOut) wait() error {
	a.flight.wait()
	return a.flight.take()
}

// txnWriter is one open sink transaction: a Kafka transaction
// (exactly-once) or a batch of records flushed on the barrier
// (at-least-once).
type txnWriter struct {
	w     *recordWriter
	id    string // the Kafka transactional id (exactly-once)
	pid   int64
	epoch int16
	from  map[int32]int64 // the topic's end when the transaction began
	idem  *idempotent     // the idempotent producer (at-least-once)
	key   string          // its pool key
}

// DefaultTransactionTimeout is how long the broker lets an exactly-once
// sink transaction stay open before it aborts it: the producer's
// transaction.timeout.ms, as Flink's KafkaSink users set it. It is Kafka's
// default upper limit (the broker's transaction.max.timeout.ms), so that a
// frozen demo has a quarter of an hour before a transaction expires.
const DefaultTransactionTimeout = 15 * time.Minute

// NewOutput returns the output for topic; cl is a client of the same
// cluster, which the writers of exactly-once and at-least-once send with.
func NewOutput(c kafka.Client, cl sarama.Client, topic string, g Guarantee) (*Output, error) {
	o := &Output{c: c, cl: cl, topic: topic, guarantee: g, txns: map[string]*txnWriter{}, txnTimeout: DefaultTransactionTimeout,
		env: newRequestEnv(), pools: map[string]*idPool{}, idem: map[string]*idempotent{},
		prepared: map[string]map[int32]int64{}, committedEnd: map[int32]int64{}, committed: map[string]string{}, whole: map[string]bool{}}
	if g != None {
		return o, nil
	}
	cfg, err := c.Config()
	if err != nil {
		return nil, err
	}
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Partitioner = sarama.NewMurmur2Partitioner
	// Both are needed: Flush.Messages alone makes the producer hang.
	cfg.Producer.Flush.Messages = 1000
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	p, err := sarama.NewAsyncProducer(c.Brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("producer for %s: %w", topic, err)
	}
	o.none = newAsyncOut(p)
	return o, nil
}

// WithTransactionTimeout sets how long the broker lets a transaction stay
// open before it aborts it (DefaultTransactionTimeout unless set); call it
// before the first Write.
func (o *Output) WithTransactionTimeout(d time.Duration) *Output {
	o.txnTimeout = d
	return o
}

// WithRetryTimeout sets how long a request to Kafka that fails with an
// error that may pass is retried before the write, pre-commit or commit
// fails (kafka.DefaultRetryTimeout unless set); call it before the first
// Write. A broker that cannot be connected to fails it after two tries
// whatever the timeout.
func (o *Output) WithRetryTimeout(d time.Duration) *Output {
	o.env.retry.Timeout = d
	return o
}

// begin opens transaction txn. For exactly-once, it takes a transactional
// id from the subtask's pool, initialises it and notes where the
// transaction's records can be: at or after the topic's end now, kept in
// the committable so that a recovery can look for them. For at-least-once,
// it writes with the subtask's idempotent producer. o.mu is held.
func (o *Output) begin(txn string) (*txnWriter, error) {
	t := &txnWriter{pid: -1, epoch: -1, key: poolKey(txn)}
	var id *string
	switch o.guarantee {
	case ExactlyOnce:
		kid := o.takeID(txn)
		pid, epoch, err := o.initProducerID(kid)
		if err == nil {
			t.from, err = kafka.EndOffsets(o.cl, o.topic)
		}
		if err != nil {
			o.releaseID(kid)
			return nil, fmt.Errorf("begin transaction %s (transactional id %s): %w", txn, kid, err)
		}
		t.pid, t.epoch, t.id, id = pid, epoch, kid, &kid
	case AtLeastOnce:
		p, err := o.takeIdempotent(t.key)
		if err != nil {
			return nil, err
		}
		t.pid, t.epoch, t.idem = p.pid, p.epoch, p
	}
	var seq []int32
	if t.idem != nil {
		seq = t.idem.seq
	}
	w, err := newRecordWriter(o.cl, o.topic, id, t.pid, t.epoch, o.env, seq)
	if err != nil {
		if id != nil {
			o.releaseID(*id)
		}
		return nil, err
	}
	t.w = w
	return t, nil
}

// Write implements runtime.TxnOutput.
func (o *Output) Write(txn string, key, value []byte) error {
	return o.WriteAt(txn, key, value, time.Now())
}

// WriteAt implements runtime.TimedWriter: Write with the record's
// timestamp.
func (o *Output) WriteAt(txn string, key, value []byte, at time.Time) error {
	if o.none != nil {
		msg := producerMessage(o.topic, key, value)
		msg.Timestamp = at
		if err := o.none.send(msg); err != nil {
			return fmt.Errorf("write to %s: %w", o.topic, err)
		}
		return nil
	}
	o.mu.Lock()
	t := o.last
	if t == nil || o.lastName != txn {
		if t = o.txns[txn]; t == nil {
			var err error
			if t, err = o.begin(txn); err != nil {
				o.mu.Unlock()
				return err
			}
			o.txns[txn] = t
		}
		o.last, o.lastName = t, txn
	}
	o.mu.Unlock()
	if err := t.w.write(key, value, at); err != nil {
		return fmt.Errorf("write in transaction %s: %w", txn, err)
	}
	return nil
}

// Prepare implements runtime.TxnOutput: it flushes the transaction's
// records and stops its writer; what remains is its committable.
func (o *Output) Prepare(txn string) (string, error) {
	if o.none != nil {
		// No flush on a barrier: what is in flight may be lost.
		if err := o.none.flight.take(); err != nil {
			return "", fmt.Errorf("write to %s: %w", o.topic, err)
		}
		return "", nil
	}
	o.mu.Lock()
	t := o.txns[txn]
	delete(o.txns, txn)
	o.last = nil
	o.mu.Unlock()
	if t == nil {
		return "", nil
	}
	err := t.w.flush()
	t.w.close()
	if err != nil {
		// Its id stays held: the transaction is open until aborted.
		return "", fmt.Errorf("pre-commit transaction %s: %w", txn, err)
	}
	if t.idem != nil {
		o.putIdempotent(t.key, t.idem, t.w.seq)
	}
	if o.guarantee != ExactlyOnce {
		return "", nil
	}
	ends := map[int32]int64{}
	for p, e := range t.w.end {
		if e > 0 {
			ends[int32(p)] = e
		}
	}
	c := committable{txn: t.id, pid: t.pid, epoch: t.epoch, from: t.from, ends: ends}.String()
	o.mu.Lock()
	o.prepared[c] = ends
	o.mu.Unlock()
	return c, nil
}

// Commit implements runtime.TxnOutput: EndTxn with the committable's
// producer id and epoch, from this process or another.
func (o *Output) Commit(c string) error {
	if o.guarantee != ExactlyOnce || c == "" {
		return nil
	}
	pc, err := parseCommittable(c)
	if err != nil {
		return err
	}
	txn := pc.txn
	if o.committedAlready(txn, c) {
		return nil
	}
	if err := o.commitTxn(txn, pc.pid, pc.epoch); err != nil {
		return err
	}
	o.mu.Lock()
	o.committed[txn] = c
	o.releaseID(txn)
	for p, e := range o.prepared[c] {
		o.committedEnd[p] = max(o.committedEnd[p], e)
	}
	delete(o.prepared, c)
	o.mu.Unlock()
	return nil
}

// commitTxn commits a pre-committed transaction by sending EndTxn with its
// producer id and epoch, retried by the output's policy.
func (o *Output) commitTxn(txn string, pid int64, epoch int16) error {
	most := endTxnVersion(o.cl.Config().Version)
	return o.env.retry.Do(fmt.Sprintf("commit transaction %s (producer %d, epoch %d)", txn, pid, epoch), nil, func() error {
		coord, err := o.env.coordinator(o.cl, txn, nil)
		if err != nil {
			return err
		}
		v, err := o.env.version(coord, apiEndTxn, endTxnLeast, most)
		if err != nil {
			return err
		}
		resp, err := coord.EndTxn(&sarama.EndTxnRequest{Version: v, TransactionalID: txn, ProducerID: pid, ProducerEpoch: epoch, TransactionResult: true})
		if err != nil {
			o.env.broke(coord)
			_ = o.cl.RefreshTransactionCoordinator(txn)
			return err
		}
		o.env.throttled(coord, resp.ThrottleTime)
		switch {
		case errors.Is(resp.Err, sarama.ErrNoError):
			return nil
		case errors.Is(resp.Err, sarama.ErrInvalidTxnState), errors.Is(resp.Err, sarama.ErrProducerFenced),
			errors.Is(resp.Err, sarama.ErrInvalidProducerEpoch), errors.Is(resp.Err, sarama.ErrInvalidProducerIDMapping):
			// The coordinator no longer has it open: aborted (the broker
			// died with it, or it timed out) or never there.
			return fmt.Errorf("%w: %w", runtime.ErrTxnLost, resp.Err)
		}
		if kafka.NeedsCoordinatorRefresh(resp.Err) {
			_ = o.cl.RefreshTransactionCoordinator(txn)
		}
		return resp.Err
	})
}

// AbortLingering implements runtime.TxnOutput for the sink subtask whose
// transactions prefix names: the writers this process still has open for
// it stop, without sending what they hold (at-least-once too, whose
// idempotent producer goes with them); then every transactional id of
// the subtask's pool that was ever used is initialised, which aborts an
// open transaction (see txnpool.go). The transactions pre-committed for
// the restored checkpoint must be committed before: their ids are in the
// pool too.
func (o *Output) AbortLingering(prefix string, from int64) error {
	key := poolKey(prefix)
	var stale []*txnWriter
	o.mu.Lock()
	for name, t := range o.txns {
		if poolKey(name) == key {
			stale = append(stale, t)
			delete(o.txns, name)
			o.last = nil
		}
	}
	delete(o.idem, key)
	o.mu.Unlock()
	for _, t := range stale {
		t.w.abandon()
	}
	if o.guarantee != ExactlyOnce {
		return nil
	}
	return o.abortPool(key)
}

// initProducerID initialises transactional id txn and returns its
// producer id and epoch, retried by the output's policy (also while the
// broker finishes aborting the id's earlier transaction:
// CONCURRENT_TRANSACTIONS).
func (o *Output) initProducerID(txn string) (int64, int16, error) {
	return o.initProducer(&txn)
}

// initProducer asks for a producer id and epoch: of transactional id *txn
// from its coordinator, or, with txn nil, of an idempotent producer from
// any broker.
func (o *Output) initProducer(txn *string) (int64, int16, error) {
	var pid int64
	var epoch int16
	most := initProducerIDVersion(o.cl.Config().Version)
	what, refresh := "initialise an idempotent producer", func() {}
	if txn != nil {
		what = "initialise transactional id " + *txn
		refresh = func() { _ = o.cl.RefreshTransactionCoordinator(*txn) }
	}
	err := o.env.retry.Do(what, nil, func() error {
		var b *sarama.Broker
		var err error
		if txn != nil {
			b, err = o.env.coordinator(o.cl, *txn, nil)
		} else {
			b, err = o.env.anyBroker(o.cl, nil)
		}
		if err != nil {
			return err
		}
		v, err := o.env.version(b, apiInitProducerID, initProducerLeast, most)
		if err != nil {
			return err
		}
		resp, err := b.InitProducerID(&sarama.InitProducerIDRequest{Version: v, TransactionalID: txn, TransactionTimeout: o.txnTimeout, ProducerID: -1, ProducerEpoch: -1})
		if err != nil {
			o.env.broke(b)
			refresh()
			return err
		}
		o.env.throttled(b, resp.ThrottleTime)
		switch {
		case errors.Is(resp.Err, sarama.ErrNoError):
			pid, epoch = resp.ProducerID, resp.ProducerEpoch
			return nil
		case errors.Is(resp.Err, sarama.ErrInvalidTransactionTimeout):
			return fmt.Errorf("the broker refuses a transaction timeout of %s, more than its transaction.max.timeout.ms allows: lower the producer's transaction.timeout.ms: %w", o.txnTimeout, resp.Err)
		}
		if kafka.NeedsCoordinatorRefresh(resp.Err) {
			refresh()
		}
		return resp.Err
	})
	return pid, epoch, err
}

// PositionOf implements the sink's output positions: the topic and, per
// partition, the end offset when the transaction of committable began (its
// records are at or after it).
func (o *Output) PositionOf(committable string) (string, map[int32]int64, bool) {
	c, err := parseCommittable(committable)
	if err != nil {
		return "", nil, false
	}
	return o.topic, c.from, true
}

// The sink finds these by type assertion: a method renamed here would
// switch one off without a word (writing a lost transaction again, the
// fallback's skip set, the record timestamps), so the compiler checks
// them.
var (
	_ runtime.TxnOutput        = (*Output)(nil)
	_ runtime.TimedWriter      = (*Output)(nil)
	_ runtime.CommittedReader  = (*Output)(nil)
	_ runtime.CommittedChecker = (*Output)(nil)
	_ runtime.PositionReader   = (*Output)(nil)
)

// Close stops every writer without committing or aborting anything.
func (o *Output) Close() error {
	o.mu.Lock()
	open := o.txns
	o.txns = map[string]*txnWriter{}
	o.last = nil
	closeNone := o.none != nil && !o.noneClosed
	o.noneClosed = o.noneClosed || closeNone
	o.mu.Unlock()
	for _, t := range open {
		t.w.abandon()
	}
	if closeNone {
		err := o.none.p.Close()
		<-o.none.done
		return err
	}
	return nil
}

// Flush waits until every record written is acknowledged (guarantee none:
// at the end of a run, before its output is read); a no-op for the others,
// whose records are flushed by Prepare.
func (o *Output) Flush() error {
	if o.none == nil {
		return nil
	}
	if err := o.none.wait(); err != nil {
		return fmt.Errorf("write to %s: %w", o.topic, err)
	}
	return nil
}
