// Package live is the live verifier: while a job runs, it follows the input
// topics and the read_committed view of the output topic, and keeps counts
// of what is committed, duplicated and lost up to the newest checkpoint
// whose output is committed (the oracle of the final report, run
// continuously, for the terminal UI). Flink has no counterpart.
package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/flatjson"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/verify"
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
	ids      flatjson.Field // reads cfg.ID
	progress chan struct{}  // a consumer applied records (cap 1, never blocks)
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
	Client kafka.Client
	// Inputs maps the input topics of the relation (Expect.Inputs) to the
	// Kafka topics the job reads them from.
	Inputs map[string]string
	// InputFrom is, per generator topic, the offset of each partition the
	// job's input starts at (nil or missing: the beginning).
	InputFrom map[string]map[int32]int64
	// Output is the topic the sink writes; OutputFrom the offsets its
	// output starts at (nil: the beginning).
	Output     string
	OutputFrom map[int32]int64
	// Expect is what the output must hold: the relation, its input
	// topics, the id records are counted by, the state TTL.
	Expect verify.Expect
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
	v.ids, _ = flatjson.NewField(cfg.Expect.ID) // validate refuses a bad one
	v.st.inputs = cfg.inputs()
	v.st.ttl = cfg.Expect.StateTTL.Milliseconds()
	v.st.lenient = cfg.Lenient
	return v
}

func (cfg LiveConfig) validate() error {
	if n := len(cfg.inputs()); n == 0 || cfg.Expect.Joined && n < 2 {
		return fmt.Errorf("%w: verify kind %q names %d input topics", errLiveConfig, cfg.Expect.Kind, len(cfg.Expect.Inputs))
	}
	if cfg.Output == "" {
		return fmt.Errorf("%w: no output topic", errLiveConfig)
	}
	if _, err := flatjson.NewField(cfg.Expect.ID); err != nil {
		return fmt.Errorf("%w: the id field: %v", errLiveConfig, err)
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

// inputs are the input topics the expected records come from: the
// relation's first, and its second when joined.
func (cfg LiveConfig) inputs() []string {
	in := cfg.Expect.Inputs
	if cfg.Expect.Joined {
		return in[:min(len(in), 2)]
	}
	return in[:min(len(in), 1)]
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
