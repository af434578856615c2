package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"faultline/checkpoint"
	"faultline/runtime"
	"faultline/runtime/flatjson"
	"faultline/runtime/verify"
)

// LiveStatus is the live verification line: what a read_committed consumer
// of the output topic sees right now, checked against the input.
type LiveStatus struct {
	// Available is false until the first check has completed.
	Available bool
	// Committed counts the records in the committed output since the start
	// offsets; Duplicates the order ids seen more than once among them.
	// Both are live: they follow the output as it is committed.
	Committed  int
	Duplicates int
	// DuplicatesAtLeastOnce are those of Duplicates with a copy written
	// while the job ran at-least-once (LiveConfig.Lenient).
	DuplicatesAtLeastOnce int
	// Lost counts the expected records (paid orders, or orders for an
	// "orders" job) that checkpoint AsOf covers and that are not in the
	// committed output, once every transaction of AsOf is visible.
	Lost int
	AsOf int64
	// InFlight counts the expected records that checkpoint AsOf holds in
	// flight (an unaligned checkpoint stores them with its snapshot) and
	// that are not in the committed output yet: not counted as Lost.
	InFlight int
	// NotJoined counts the paid orders whose order and payment are more
	// than the state TTL apart in event time (not expected).
	NotJoined int
	// Err says why verification cannot go on (a topic that cannot be read),
	// when it cannot.
	Err string
}

// Committed tells the live verifier how far the job's output is committed:
// the newest checkpoint id whose sink transactions have all been committed,
// and its source offsets by generator topic ("orders", "payments") and
// partition, and the order ids of the records it holds in flight (an
// unaligned checkpoint: its output cannot hold them yet). ok is false
// while no checkpoint's output is committed.
type Committed func() (id int64, bounds checkpoint.Offsets, inFlight []string, ok bool)

// LiveVerifier follows, while a job runs, its input topics and the
// read_committed view of its output topic, and keeps LiveStatus up to date
// (the oracle of the final report, run continuously). See NewLiveVerifier.
//
// Run owns every goroutine: one per followed partition, each owning its
// Sarama partition consumer and applying what it consumes under mu, and
// Run's own, which asks committed() for new checkpoints and checks them.
// Status only copies under mu.
//
// A check of checkpoint c waits until the verifier has seen everything c
// covers, then judges, in up to two steps, so that a loss it shows is a
// loss:
//   - fast: the input consumers have read up to c's source offsets, and the
//     output consumer up to the output's last stable offset (LSO) asked for
//     after c was reported. If no record that c covers is missing, c is
//     confirmed at once — the common case in exactly-once mode.
//   - sure: otherwise the missing records may sit behind a transaction
//     still open (a parallel sink already writing checkpoint c+1, or a
//     broker that writes commit markers after answering EndTxn, as Kafka
//     does). Then the output consumer must also reach the high watermark
//     asked for after c was reported, which it can only once every
//     transaction below it is decided; every record of c's transactions
//     lies below it. What is missing then is lost.
//
// So Lost only ever rises when a check is confirmed; it drops at once
// should a missing record turn up later. A check is finished before the
// next begins, and a transaction that stays open (one left behind by a
// failed attempt, until the job aborts it) holds back only the checks that
// found something missing — never with a loss on screen meanwhile.
type LiveVerifier struct {
	cfg      LiveConfig
	progress chan struct{} // a consumer applied records (cap 1, never blocks)
	running  atomic.Bool
	sureWait atomic.Int64 // checks that needed the sure step (for tests)
	// beforeDeliver, when set (by tests, before Run), runs before a
	// consumer applies a batch: a test holds a consumer back with it.
	beforeDeliver func(input bool)

	mu       sync.Mutex
	st       liveState
	connErr  string    // connecting failed
	checkErr string    // the last check or broker ping failed
	pingOK   time.Time // the broker last answered a check or ping
	checked  bool      // a check has been confirmed
}

// LiveConfig says what a LiveVerifier reads.
type LiveConfig struct {
	Client Client
	// Inputs maps the generator's topics ("orders", and "payments" for a
	// paid-orders job) to the Kafka topics the job reads them from.
	Inputs map[string]string
	// InputFrom is, per generator topic, the offset of each partition the
	// job's input starts at (nil or missing: the beginning).
	InputFrom map[string]map[int32]int64
	// Output is the topic the sink writes; OutputFrom the offsets its
	// output starts at (nil: the beginning).
	Output     string
	OutputFrom map[int32]int64
	// Expect is the job spec's verify kind: "paid-orders" or "orders".
	Expect string
	// StateTTL is the join's state TTL: an order and its payment further
	// apart in event time are not expected (0: every paid order is).
	StateTTL time.Duration
	// Lenient are the at-least-once periods: duplicates with a copy
	// written in one are counted apart (nil: none).
	Lenient *verify.Periods
}

// errLiveConfig means a LiveConfig cannot be verified; fix the job spec or
// the flags.
var errLiveConfig = errors.New("live verification cannot start")

// errLiveRunning means Run was called while an earlier Run of the same
// verifier is still going; a verifier follows one run.
var errLiveRunning = errors.New("live verification is already running")

// Tuning of the live verifier.
const (
	livePoll       = 100 * time.Millisecond // how often committed() is asked
	liveMaxWait    = 100 * time.Millisecond // a consumer's fetch waits this long on the broker
	liveBatch      = 512                    // records applied under one lock
	liveProbes     = 16                     // probes per partition and round of a check
	liveErrHold    = 3 * time.Second        // a consumer's error shows at least this long (> liveBackoffMax)
	livePingEvery  = time.Second            // how often the broker is asked while an error shows
	liveBackoffMin = 250 * time.Millisecond
	liveBackoffMax = 2 * time.Second
)

// NewLiveVerifier returns a verifier for cfg; Run starts it.
func NewLiveVerifier(cfg LiveConfig) *LiveVerifier {
	v := &LiveVerifier{cfg: cfg, progress: make(chan struct{}, 1)}
	v.st.needPayment = cfg.Expect == "paid-orders"
	v.st.ttl = cfg.StateTTL.Milliseconds()
	v.st.lenient = cfg.Lenient
	v.st.firstTime, v.st.newest = map[idRef]int64{}, map[string]int64{}
	return v
}

func (cfg LiveConfig) validate() error {
	switch cfg.Expect {
	case "paid-orders", "orders":
	default:
		return fmt.Errorf("%w: verify kind %q: want paid-orders or orders", errLiveConfig, cfg.Expect)
	}
	if cfg.Output == "" {
		return fmt.Errorf("%w: no output topic", errLiveConfig)
	}
	for _, t := range cfg.inputs() {
		if cfg.Inputs[t] == "" {
			return fmt.Errorf("%w: no Kafka topic for the %s input", errLiveConfig, t)
		}
	}
	if len(cfg.Client.Brokers) == 0 {
		return fmt.Errorf("%w: no Kafka brokers given", errLiveConfig)
	}
	return nil
}

// inputs are the generator topics the expected records come from.
func (cfg LiveConfig) inputs() []string {
	if cfg.Expect == "paid-orders" {
		return []string{runtime.TopicOrders, runtime.TopicPayments}
	}
	return []string{runtime.TopicOrders}
}

// Run follows the topics until ctx ends, checking Lost each time committed
// reports a newer checkpoint. It returns nil when ctx ends, or the error
// that stopped it.
func (v *LiveVerifier) Run(ctx context.Context, committed Committed) error {
	if !v.running.CompareAndSwap(false, true) {
		return errLiveRunning
	}
	defer v.running.Store(false)
	err := v.cfg.validate()
	if err == nil {
		if _, cerr := v.cfg.Client.Config(); cerr != nil {
			err = fmt.Errorf("%w: %w", errLiveConfig, cerr)
		}
	}
	if err != nil {
		v.mu.Lock()
		v.connErr = err.Error()
		v.mu.Unlock()
		return err
	}
	conn, parts := v.connect(ctx)
	if conn == nil {
		return nil // ctx ended
	}
	defer conn.close()
	v.mu.Lock()
	if v.st.in == nil && v.st.out == nil {
		v.st.in, v.st.out = parts.in, parts.out
	}
	v.mu.Unlock()

	fctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
	}()
	for _, lp := range v.st.in {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v.follow(fctx, conn.inCons, lp)
		}()
	}
	for _, lp := range v.st.out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v.follow(fctx, conn.outCons, lp)
		}()
	}
	v.watch(ctx, conn.ctl, committed)
	return nil
}

// Positions is how far the verifier has read each partition it follows, by
// Kafka topic: the next offset. ok is false before it knows its partitions
// (it has read nothing yet, and needs everything from its start on).
func (v *LiveVerifier) Positions() (checkpoint.Offsets, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.st.in == nil && v.st.out == nil {
		return nil, false
	}
	out := checkpoint.Offsets{}
	for _, parts := range [][]*livePart{v.st.in, v.st.out} {
		for _, lp := range parts {
			if out[lp.topic] == nil {
				out[lp.topic] = map[int32]int64{}
			}
			out[lp.topic][lp.p] = lp.next
		}
	}
	return out, true
}

// Status is the latest verification; safe to call at any time, from any
// goroutine, and cheap (the UI calls it on every frame).
func (v *LiveVerifier) Status() LiveStatus {
	now := time.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
	s := LiveStatus{
		Available:             v.st.available,
		Committed:             v.st.committed,
		Duplicates:            v.st.duplicates,
		DuplicatesAtLeastOnce: v.st.dupLenient,
		AsOf:                  v.st.asOf,
		NotJoined:             v.st.notJoined,
		Err:                   v.errLocked(now),
	}
	s.InFlight = v.st.missingInFlight()
	s.Lost = v.st.unseenConf - s.InFlight
	return s
}

// errLocked says what is broken now, if anything.
func (v *LiveVerifier) errLocked(now time.Time) string {
	if v.connErr != "" {
		return v.connErr
	}
	if v.checkErr != "" {
		return v.checkErr
	}
	for _, parts := range [][]*livePart{v.st.in, v.st.out} {
		for _, lp := range parts {
			if lp.partErrLocked(now, v.pingOK) {
				return lp.err
			}
		}
	}
	if v.st.badOutput != "" {
		return fmt.Sprintf("%d output record(s) are not JSON, the first at %s: the final verification cannot read them", v.st.badOutputs, v.st.badOutput)
	}
	return ""
}

// partErrLocked: a consumer error shows until records flow again, or until
// it is older than liveErrHold and the broker has answered since.
func (lp *livePart) partErrLocked(now, pingOK time.Time) bool {
	if lp.err == "" || !lp.errAt.After(lp.msgAt) {
		return false
	}
	return now.Sub(lp.errAt) < liveErrHold || lp.errAt.After(pingOK)
}

func (v *LiveVerifier) anyErr() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.errLocked(time.Now()) != ""
}

// liveConn is the verifier's connections: a client per consumer, so that a
// fetch waiting on the broker never delays the other consumer or a check,
// and one for the checks' own requests.
type liveConn struct {
	in, out, ctl    sarama.Client
	inCons, outCons sarama.Consumer
}

func (c *liveConn) close() {
	for _, cons := range []sarama.Consumer{c.inCons, c.outCons} {
		if cons != nil {
			_ = cons.Close()
		}
	}
	for _, cl := range []sarama.Client{c.in, c.out, c.ctl} {
		if cl != nil {
			_ = cl.Close()
		}
	}
}

type liveParts struct{ in, out []*livePart }

// connect dials until it succeeds or ctx ends (nil).
func (v *LiveVerifier) connect(ctx context.Context) (*liveConn, liveParts) {
	for attempt := 0; ; attempt++ {
		conn, parts, err := v.dial()
		v.mu.Lock()
		if err != nil {
			v.connErr = fmt.Sprintf("live verification: %v (retrying)", err)
		} else {
			v.connErr = ""
		}
		v.mu.Unlock()
		if err == nil {
			return conn, parts
		}
		if !sleepCtx(ctx, liveBackoff(attempt)) {
			return nil, liveParts{}
		}
	}
}

func (v *LiveVerifier) dial() (conn *liveConn, parts liveParts, err error) {
	conn = &liveConn{}
	defer func() {
		if err != nil {
			conn.close()
			conn = nil
		}
	}()
	mk := func(committed bool) (sarama.Client, error) {
		cfg, err := v.cfg.Client.Config()
		if err != nil {
			return nil, err
		}
		cfg.Consumer.MaxWaitTime = liveMaxWait
		cfg.Consumer.Retry.Backoff = 500 * time.Millisecond
		if committed {
			cfg.Consumer.IsolationLevel = sarama.ReadCommitted
		}
		return v.cfg.Client.newClient(cfg)
	}
	if conn.ctl, err = mk(false); err != nil {
		return
	}
	if conn.in, err = mk(false); err != nil {
		return
	}
	if conn.out, err = mk(true); err != nil {
		return
	}
	if conn.inCons, err = sarama.NewConsumerFromClient(conn.in); err != nil {
		return
	}
	if conn.outCons, err = sarama.NewConsumerFromClient(conn.out); err != nil {
		return
	}
	bits := map[string][2]uint32{
		runtime.TopicOrders:   {orderConf, orderTent},
		runtime.TopicPayments: {paymentConf, paymentTent},
	}
	for _, gen := range v.cfg.inputs() {
		topic := v.cfg.Inputs[gen]
		ps, err := v.partitions(conn.ctl, topic, v.cfg.InputFrom[gen])
		if err != nil {
			return nil, liveParts{}, err
		}
		for _, lp := range ps {
			lp.gen, lp.input = gen, true
			lp.conf, lp.tent = bits[gen][0], bits[gen][1]
			lp.confBound, lp.tentBound = lp.start, lp.start
		}
		parts.in = append(parts.in, ps...)
	}
	if parts.out, err = v.partitions(conn.ctl, v.cfg.Output, v.cfg.OutputFrom); err != nil {
		return nil, liveParts{}, err
	}
	return conn, parts, nil
}

// partitions lists topic's partitions with the offsets they are read from.
func (v *LiveVerifier) partitions(cl sarama.Client, topic string, from map[int32]int64) ([]*livePart, error) {
	ps, err := cl.Partitions(topic)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	out := make([]*livePart, 0, len(ps))
	for _, p := range ps {
		start, ok := from[p]
		if !ok {
			if start, err = cl.GetOffset(topic, p, sarama.OffsetOldest); err != nil {
				return nil, fmt.Errorf("start offset of %s/%d: %w", topic, p, err)
			}
		}
		out = append(out, &livePart{topic: topic, p: p, start: start, next: start})
	}
	return out, nil
}

// follow consumes lp with a Sarama partition consumer until ctx ends. A
// consumer that fails to start, or that Sarama gives up on, is started
// again from where the last one stopped; Sarama itself retries a broker
// that went away.
func (v *LiveVerifier) follow(ctx context.Context, cons sarama.Consumer, lp *livePart) {
	var (
		batch  []*sarama.ConsumerMessage
		parsed []parsedID
	)
	for attempt := 0; ctx.Err() == nil; {
		v.mu.Lock()
		pos := lp.next
		v.mu.Unlock()
		pc, err := cons.ConsumePartition(lp.topic, lp.p, pos)
		if err != nil {
			v.partErr(lp, fmt.Errorf("read %s/%d from offset %d: %w (retrying)", lp.topic, lp.p, pos, err))
			attempt++
			if !sleepCtx(ctx, liveBackoff(attempt)) {
				return
			}
			continue
		}
		attempt = 0
		msgs, errs := pc.Messages(), pc.Errors()
		for msgs != nil {
			select {
			case <-ctx.Done():
				msgs = nil
			case m, ok := <-msgs:
				if !ok {
					msgs = nil
					break
				}
				batch = append(batch[:0], m)
			more:
				for len(batch) < liveBatch {
					select {
					case m, ok := <-msgs:
						if !ok {
							msgs = nil
							break more
						}
						batch = append(batch, m)
					default:
						break more
					}
				}
				parsed = v.deliver(lp, batch, parsed)
			case err, ok := <-errs:
				if !ok {
					errs = nil
					break
				}
				v.partErr(lp, fmt.Errorf("read %s/%d: %w (retrying)", lp.topic, lp.p, err))
			}
		}
		_ = pc.Close()
	}
}

// deliver applies a batch of lp's records; their ids are read before the
// lock is taken.
func (v *LiveVerifier) deliver(lp *livePart, batch []*sarama.ConsumerMessage, parsed []parsedID) []parsedID {
	if v.beforeDeliver != nil {
		v.beforeDeliver(lp.input)
	}
	parsed = parsed[:0]
	for _, m := range batch {
		id, ok := flatjson.OrderIDOf(m.Value)
		parsed = append(parsed, parsedID{off: m.Offset, id: id, ok: ok, ts: m.Timestamp.UnixMilli()})
	}
	now := time.Now()
	v.mu.Lock()
	if lp.input {
		v.st.addInput(lp, parsed)
	} else {
		v.st.addOutput(lp, parsed)
	}
	lp.msgAt = now
	v.mu.Unlock()
	select {
	case v.progress <- struct{}{}:
	default:
	}
	clear(parsed) // drop the references into the records
	return parsed
}

func (v *LiveVerifier) partErr(lp *livePart, err error) {
	v.mu.Lock()
	lp.err, lp.errAt = err.Error(), time.Now()
	v.mu.Unlock()
}

// liveWait is one partition a check waits on: until the verifier has
// consumed every record below target that its consumer is handed.
type liveWait struct {
	lp     *livePart
	iso    sarama.IsolationLevel
	target int64
	cursor int64     // [.., cursor) has been sorted by probes
	need   int64     // a record the consumer is handed there (-1: none)
	idle   time.Time // no probe before then
}

// liveCheck is the check of one checkpoint.
type liveCheck struct {
	id     int64
	bounds map[*livePart]int64 // inputs: the checkpoint's offsets
	waits  []*liveWait         // inputs, then outputs
	sure   map[*livePart]int64 // outputs: the high watermark
	step   int                 // 0 targets unknown, 1 fast, 2 sure
	// inFlight are the order ids the checkpoint holds in flight.
	inFlight []string
}

// watch asks committed() for newer checkpoints and checks them one after
// the other, until ctx ends. A check is finished before the next starts:
// switching to every newer one could starve a slow check for ever.
func (v *LiveVerifier) watch(ctx context.Context, cl sarama.Client, committed Committed) {
	tick := time.NewTicker(livePoll)
	defer tick.Stop()
	var (
		cur      *liveCheck
		lastPing time.Time
		retryAt  time.Time // after a failed request, not before then
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-v.progress:
			if cur == nil {
				continue
			}
		}
		if cur == nil {
			if id, bounds, inFlight, ok := committed(); ok {
				cur = v.newCheck(id, bounds, inFlight)
			}
		}
		if cur != nil && !time.Now().Before(retryAt) {
			done, err := v.advance(ctx, cl, cur)
			if err != nil {
				retryAt = time.Now().Add(livePoll)
				v.mu.Lock()
				v.checkErr = fmt.Sprintf("check of checkpoint %d: %v (retrying)", cur.id, err)
				v.mu.Unlock()
			}
			if done {
				cur = nil
			}
		}
		if now := time.Now(); now.Sub(lastPing) >= livePingEvery && v.anyErr() {
			lastPing = now
			v.ping(cl)
		}
	}
}

// ping asks the broker for the output's offsets, to learn whether it is
// back.
func (v *LiveVerifier) ping(cl sarama.Client) {
	_, err := listOffsets(cl, v.cfg.Output, partNumbers(v.st.out), sarama.ReadCommitted)
	if err != nil {
		v.mu.Lock()
		v.checkErr = fmt.Sprintf("live verification: %v (retrying)", err)
		v.mu.Unlock()
		return
	}
	v.answered()
}

// answered notes that the broker answered a request of the checks.
func (v *LiveVerifier) answered() {
	v.mu.Lock()
	v.checkErr = ""
	v.pingOK = time.Now()
	v.mu.Unlock()
}

func partNumbers(parts []*livePart) []int32 {
	out := make([]int32, len(parts))
	for i, lp := range parts {
		out[i] = lp.p
	}
	return out
}

// newCheck starts the check of checkpoint id, if it is newer than the last
// one checked.
func (v *LiveVerifier) newCheck(id int64, bounds checkpoint.Offsets, inFlight []string) *liveCheck {
	v.mu.Lock()
	newer := !v.checked || id > v.st.asOf
	v.mu.Unlock()
	if !newer {
		return nil
	}
	c := &liveCheck{id: id, bounds: map[*livePart]int64{}, sure: map[*livePart]int64{}, inFlight: inFlight}
	for _, lp := range v.st.in {
		// A partition the checkpoint does not name was not read at all.
		b := max(bounds[lp.gen][lp.p], lp.start)
		c.bounds[lp] = b
		c.waits = append(c.waits, &liveWait{lp: lp, iso: sarama.ReadUncommitted, target: b, need: -1})
	}
	return c
}

// advance takes check c as far as it can without blocking on consumers:
// done once c is confirmed.
func (v *LiveVerifier) advance(ctx context.Context, cl sarama.Client, c *liveCheck) (bool, error) {
	if c.step == 0 {
		// Both asked after committed() reported c: everything c's
		// transactions wrote is below the high watermark; below the LSO,
		// every transaction is decided.
		parts := partNumbers(v.st.out)
		lso, err := listOffsets(cl, v.cfg.Output, parts, sarama.ReadCommitted)
		if err != nil {
			return false, err
		}
		hwm, err := listOffsets(cl, v.cfg.Output, parts, sarama.ReadUncommitted)
		if err != nil {
			return false, err
		}
		v.answered()
		for _, lp := range v.st.out {
			c.waits = append(c.waits, &liveWait{lp: lp, iso: sarama.ReadCommitted, target: lso[lp.p], need: -1})
			c.sure[lp] = max(hwm[lp.p], lso[lp.p])
		}
		c.step = 1
	}
	for _, w := range c.waits {
		if ctx.Err() != nil {
			return false, nil
		}
		ok, err := v.reached(cl, w)
		if err != nil || !ok {
			return false, err
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if c.step == 1 {
		for _, lp := range v.st.in {
			v.st.tentative(lp, c.bounds[lp])
		}
		if v.st.unseenTent-v.st.missingAmong(c.inFlight) != v.st.unseenConf-v.st.missingInFlight() {
			// Something c covers is missing: make sure.
			c.step = 2
			v.sureWait.Add(1)
			for _, w := range c.waits {
				if t, ok := c.sure[w.lp]; ok && t > w.target {
					w.target = t
				}
			}
			return false, nil
		}
	}
	for _, lp := range v.st.in {
		v.st.confirm(lp)
	}
	v.st.setInFlight(c.inFlight)
	v.st.asOf, v.st.available, v.checked = c.id, true, true
	return true, nil
}

// reached reports whether the verifier has consumed every record below
// w.target that w's consumer is handed, probing the broker for what lies
// between the consumer's position and the target.
func (v *LiveVerifier) reached(cl sarama.Client, w *liveWait) (bool, error) {
	for range liveProbes {
		v.mu.Lock()
		next := w.lp.next
		v.mu.Unlock()
		if next >= w.target {
			return true, nil
		}
		if w.need >= 0 {
			if next <= w.need {
				return false, nil // the consumer has yet to hand it over
			}
			w.need = -1
		}
		from := max(w.cursor, next)
		if from >= w.target {
			return true, nil // nothing more is handed out below the target
		}
		if time.Now().Before(w.idle) {
			return false, nil
		}
		last, end, err := visibleIn(cl, w.lp.topic, w.lp.p, from, w.target, w.iso)
		if err != nil {
			return false, err
		}
		v.answered()
		if end <= from {
			// Not decided yet (an open transaction): ask again later, not
			// on every record consumed meanwhile.
			w.idle = time.Now().Add(livePoll)
			return false, nil
		}
		w.cursor = end
		if last >= 0 {
			w.need = last
		}
	}
	return false, nil
}

func liveBackoff(attempt int) time.Duration {
	return min(liveBackoffMin<<min(attempt, 5), liveBackoffMax)
}

// sleepCtx waits d, or less when ctx ends (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
