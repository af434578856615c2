package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/faultline-dev/faultline/third_party/kfake"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
)

// testClock is the clock a test's retry policy waits on: a sleep steps it
// at once, so that backoffs, deadlines and throttles cost no time.
type testClock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func newTestClock() *testClock {
	return &testClock{now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) sleep(d time.Duration, _ <-chan struct{}) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.slept = append(c.slept, d)
	return true
}

func (c *testClock) sleeps() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.slept)
}

// policy is the default policy on this clock, without jitter.
func (c *testClock) policy(timeout time.Duration) kafka.RetryPolicy {
	p := requestRetryPolicy()
	p.Timeout, p.Now, p.Sleep = timeout, c.Now, c.sleep
	p.Jitter = func(d time.Duration) time.Duration { return d }
	return p
}

// requestLog counts the requests of some keys the broker got, with the
// version and the test clock's time of each.
type requestLog struct {
	mu       sync.Mutex
	clock    *testClock
	versions map[kmsg.Key][]int16
	at       map[kmsg.Key][]time.Time
}

// observe logs keys; call it before injecting answers for them, so that it
// sees the requests those answer too.
func observe(c *kfake.Cluster, clock *testClock, keys ...kmsg.Key) *requestLog {
	l := &requestLog{clock: clock, versions: map[kmsg.Key][]int16{}, at: map[kmsg.Key][]time.Time{}}
	for _, k := range keys {
		c.ControlKey(int16(k), func(req kmsg.Request) (kmsg.Response, error, bool) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.versions[k] = append(l.versions[k], req.GetVersion())
			if clock != nil {
				l.at[k] = append(l.at[k], clock.Now())
			}
			return nil, nil, false
		})
	}
	return l
}

func (l *requestLog) count(k kmsg.Key) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.versions[k])
}

// dropConnection closes the connection of the next request of key
// unanswered, as a broker that went away does.
func dropConnection(c *kfake.Cluster, key kmsg.Key) {
	c.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
		return nil, errors.New("connection dropped by the test"), true
	})
}

// onClock makes o retry on clock, with timeout.
func onClock(o *Output, clock *testClock, timeout time.Duration) *Output {
	o.env.retry = clock.policy(timeout)
	return o
}

// transact writes values in transaction txn and commits it.
func transact(o *Output, txn string, values ...string) error {
	for _, v := range values {
		if err := o.Write(txn, []byte(v), []byte(v)); err != nil {
			return err
		}
	}
	c, err := o.Prepare(txn)
	if err != nil {
		return err
	}
	return o.Commit(c)
}

// Each request of a transaction that fails with an error that may pass is
// sent again after a backoff — after a coordinator lookup or a metadata
// refresh where the error says the coordinator or leader moved — and the
// transaction commits every record once; an error that cannot pass fails
// at the first answer.
func TestTransactionRequestsRetryWhatMayPass(t *testing.T) {
	e, c, cl := kafkatest.EmbeddedClient(t)
	keys := []kmsg.Key{kmsg.InitProducerID, kmsg.AddPartitionsToTxn, kmsg.Produce, kmsg.EndTxn, kmsg.FindCoordinator, kmsg.Metadata}
	log := observe(e.Cluster(), nil, keys...)
	for i, tc := range []struct {
		key     kmsg.Key
		err     sarama.KError // 0: the connection drops
		fatal   bool
		refresh kmsg.Key // a request that must follow the error (-1: none)
	}{
		{kmsg.InitProducerID, sarama.ErrNotCoordinatorForConsumer, false, kmsg.FindCoordinator},
		{kmsg.InitProducerID, sarama.ErrConsumerCoordinatorNotAvailable, false, kmsg.FindCoordinator},
		{kmsg.InitProducerID, sarama.ErrOffsetsLoadInProgress, false, -1},
		{kmsg.InitProducerID, sarama.ErrConcurrentTransactions, false, -1},
		{kmsg.InitProducerID, sarama.ErrRequestTimedOut, false, -1},
		{kmsg.InitProducerID, 0, false, -1},
		{kmsg.InitProducerID, sarama.ErrTransactionalIDAuthorizationFailed, true, -1},
		{kmsg.AddPartitionsToTxn, sarama.ErrNotCoordinatorForConsumer, false, kmsg.FindCoordinator},
		{kmsg.AddPartitionsToTxn, sarama.ErrConcurrentTransactions, false, -1},
		{kmsg.AddPartitionsToTxn, sarama.ErrOffsetsLoadInProgress, false, -1},
		{kmsg.AddPartitionsToTxn, 0, false, -1},
		{kmsg.AddPartitionsToTxn, sarama.ErrInvalidProducerEpoch, true, -1},
		{kmsg.Produce, sarama.ErrNotLeaderForPartition, false, kmsg.Metadata},
		{kmsg.Produce, sarama.ErrLeaderNotAvailable, false, kmsg.Metadata},
		{kmsg.Produce, sarama.ErrNotEnoughReplicas, false, -1},
		{kmsg.Produce, sarama.ErrNotEnoughReplicasAfterAppend, false, -1},
		{kmsg.Produce, sarama.ErrRequestTimedOut, false, -1},
		{kmsg.Produce, 0, false, -1},
		{kmsg.Produce, sarama.ErrOutOfOrderSequenceNumber, true, -1},
		{kmsg.EndTxn, sarama.ErrConsumerCoordinatorNotAvailable, false, kmsg.FindCoordinator},
		{kmsg.EndTxn, sarama.ErrNotCoordinatorForConsumer, false, kmsg.FindCoordinator},
		{kmsg.EndTxn, sarama.ErrRequestTimedOut, false, -1},
		{kmsg.EndTxn, sarama.ErrConcurrentTransactions, false, -1},
		{kmsg.EndTxn, 0, false, -1},
		{kmsg.EndTxn, sarama.ErrInvalidTxnState, true, -1},
	} {
		name := fmt.Sprintf("%s/error-%d", kmsg.NameForKey(int16(tc.key)), int16(tc.err))
		if tc.err == 0 {
			name = kmsg.NameForKey(int16(tc.key)) + "/connection dropped"
		}
		t.Run(name, func(t *testing.T) {
			topic := fmt.Sprintf("retried-%d", i)
			if err := kafka.EnsureTopics(context.Background(), cl, map[string]int32{topic: 1}); err != nil {
				t.Fatal(err)
			}
			clock := newTestClock()
			o, err := NewOutput(c, cl, topic, ExactlyOnce)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			onClock(o, clock, time.Minute)
			before := log.count(tc.key)
			refreshes := 0
			if tc.refresh >= 0 {
				refreshes = log.count(tc.refresh)
			}
			if tc.err == 0 {
				dropConnection(e.Cluster(), tc.key)
			} else if tc.fatal {
				kafkatest.Inject(e.Cluster(), tc.key, 1, kafkatest.Code(tc.err), 0)
			} else {
				kafkatest.Inject(e.Cluster(), tc.key, 2, kafkatest.Code(tc.err), 0)
			}
			err = transact(o, fmt.Sprintf("retry-%d/0", i), "a", "b")
			sent := log.count(tc.key) - before
			if tc.fatal {
				if !errors.Is(err, tc.err) || sent != 1 {
					t.Fatalf("after %d requests: %v; want %v at the first", sent, err, tc.err)
				}
				if tc.err == sarama.ErrInvalidTxnState && !errors.Is(err, runtime.ErrTxnLost) {
					t.Fatalf("%v: want it reported as a lost transaction", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := 3
			if tc.err == 0 {
				want = 2
			}
			if sent != want {
				t.Errorf("%d requests sent, want %d", sent, want)
			}
			if tc.refresh >= 0 && log.count(tc.refresh) == refreshes {
				t.Errorf("no %s request after %s", kmsg.NameForKey(int16(tc.refresh)), tc.err)
			}
			if got := kafkatest.CommittedValues(t, c, topic); strings.Join(got, ",") != "a,b" {
				t.Fatalf("committed %v, want [a b]", got)
			}
		})
	}
}

// A request that keeps failing with an error that may pass is sent again
// until the next backoff would end past the retry timeout: 100 ms doubling
// up to 1 s, so eight tries in five seconds.
func TestRetriesEndAtTheRetryTimeout(t *testing.T) {
	e, c, cl := kafkatest.EmbeddedClient(t)
	log := observe(e.Cluster(), nil, kmsg.InitProducerID)
	clock := newTestClock()
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	onClock(o, clock, 5*time.Second)
	kafkatest.Inject(e.Cluster(), kmsg.InitProducerID, -1, kafkatest.Code(sarama.ErrConcurrentTransactions), 0)
	err = o.Write("stuck/0", nil, []byte("x"))
	if !errors.Is(err, sarama.ErrConcurrentTransactions) || !strings.Contains(err.Error(), "8 tries") {
		t.Fatalf("write: %v; want CONCURRENT_TRANSACTIONS after 8 tries", err)
	}
	if n := log.count(kmsg.InitProducerID); n != 8 {
		t.Errorf("%d InitProducerId requests, want 8", n)
	}
	if waited := clock.Now().Sub(newTestClock().Now()); waited > 5*time.Second {
		t.Errorf("waited %s, more than the timeout", waited)
	}
}

// A broker that cannot be reached fails a request after two tries, whatever
// the retry timeout, so that a failover is not held up.
func TestUnreachableBrokerFailsAfterTwoTries(t *testing.T) {
	e, c, cl := kafkatest.EmbeddedClient(t)
	clock := newTestClock()
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	onClock(o, clock, time.Hour)
	// The coordinator is known; then the broker goes away.
	if err := transact(o, "before/0", "a"); err != nil {
		t.Fatal(err)
	}
	e.Down(time.Minute)
	defer e.Down(0)
	sleeps := clock.sleeps()
	err = o.Write("down/0", nil, []byte("x"))
	var unreachable *kafka.UnreachableError
	if !errors.As(err, &unreachable) {
		t.Fatalf("write against a broker that is down: %v, want it unreachable", err)
	}
	if n := clock.sleeps() - sleeps; n != 1 {
		t.Errorf("%d backoffs, want 1 (two tries)", n)
	}
}

// A batch larger than the topic's max.message.bytes is split in halves
// until each fits, with sequence numbers the broker accepts (the batches
// written after the split continue them); a record that alone is too large
// fails the write with its size and the topic's limit.
func TestOversizedBatchesAreSplit(t *testing.T) {
	e, c, cl := kafkatest.EmbeddedClient(t)
	const topic = "small-messages"
	if err := e.Cluster().CreateTopic(topic, 1, map[string]string{"max.message.bytes": "16384"}); err != nil {
		t.Fatal(err)
	}
	if err := cl.RefreshMetadata(topic); err != nil {
		t.Fatal(err)
	}
	log := observe(e.Cluster(), nil, kmsg.Produce)
	o, err := NewOutput(c, cl, topic, ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	var want []string
	for i := 0; i < batchRecords+300; i++ { // a full batch of ~100 KB, then more
		v := fmt.Sprintf("record-%05d-%s", i, strings.Repeat("x", 10))
		want = append(want, v)
		if err := o.Write("split/0", nil, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	cm, err := o.Prepare("split/0")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(cm); err != nil {
		t.Fatal(err)
	}
	recs, err := kafka.ReadCommitted(context.Background(), c, topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records committed, want %d", len(recs), len(want))
	}
	for i, r := range recs {
		if string(r.Value) != want[i] {
			t.Fatalf("record %d is %q, want %q: order or duplicates", i, r.Value, want[i])
		}
	}
	if n := log.count(kmsg.Produce); n < 8 {
		t.Errorf("%d produce requests: the batch was not split", n)
	}

	err = o.Write("split/1", nil, make([]byte, 20000))
	if err == nil {
		_, err = o.Prepare("split/1")
	}
	if !errors.Is(err, ErrRecordTooLarge) || !strings.Contains(err.Error(), "20000 bytes") || !strings.Contains(err.Error(), "max.message.bytes is 16384") {
		t.Fatalf("a record of 20000 bytes: %v; want ErrRecordTooLarge naming its size and the limit", err)
	}
}

// A response with a throttle time holds the next request to that broker
// until it is over (KIP-219), also when the backoff is shorter.
func TestThrottledBrokerGetsNoRequestUntilTheThrottleEnds(t *testing.T) {
	e, c, cl := kafkatest.EmbeddedClient(t)
	const throttle = 80 * time.Millisecond
	for _, key := range []kmsg.Key{kmsg.InitProducerID, kmsg.Produce} {
		t.Run(kmsg.NameForKey(int16(key)), func(t *testing.T) {
			clock := newTestClock()
			log := observe(e.Cluster(), clock, key)
			o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			onClock(o, clock, time.Minute)
			o.env.retry.Backoff, o.env.retry.BackoffMax = time.Millisecond, time.Millisecond
			retriable := sarama.ErrNotEnoughReplicas
			if key == kmsg.InitProducerID {
				retriable = sarama.ErrConcurrentTransactions
			}
			kafkatest.Inject(e.Cluster(), key, 1, kafkatest.Code(retriable), int32(throttle/time.Millisecond))
			if err := transact(o, "throttled-"+kmsg.NameForKey(int16(key))+"/0", "a"); err != nil {
				t.Fatal(err)
			}
			log.mu.Lock()
			at := log.at[key]
			log.mu.Unlock()
			if len(at) < 2 {
				t.Fatalf("%d requests", len(at))
			}
			if gap := at[1].Sub(at[0]); gap < throttle {
				t.Fatalf("the next request came %s after a throttle of %s", gap, throttle)
			}
		})
	}
}

// Each request goes in the newest version both the broker (its ApiVersions
// answer) and Sarama can use for the configured Kafka version.
func TestRequestVersionsAreNegotiatedWithTheBroker(t *testing.T) {
	e, c, cl := kafkatest.EmbeddedClient(t)
	keys := []kmsg.Key{kmsg.InitProducerID, kmsg.AddPartitionsToTxn, kmsg.Produce, kmsg.EndTxn}
	log := observe(e.Cluster(), nil, keys...)
	o, err := NewOutput(c, cl, "revenue", ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := transact(o, "versions/0", "a"); err != nil {
		t.Fatal(err)
	}
	b, err := cl.Leader("revenue", 0)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := b.ApiVersions(&sarama.ApiVersionsRequest{Version: 3, ClientSoftwareName: "faultline", ClientSoftwareVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	broker := map[int16]int16{}
	for _, k := range resp.ApiKeys {
		broker[k.ApiKey] = k.MaxVersion
	}
	v := cl.Config().Version
	for _, tc := range []struct {
		key  kmsg.Key
		most int16
	}{
		{kmsg.Produce, produceVersion(v)}, {kmsg.InitProducerID, initProducerIDVersion(v)},
		{kmsg.AddPartitionsToTxn, addPartitionsVersion(v)}, {kmsg.EndTxn, endTxnVersion(v)},
	} {
		want := min(tc.most, broker[int16(tc.key)])
		log.mu.Lock()
		sent := log.versions[tc.key]
		log.mu.Unlock()
		if len(sent) == 0 || sent[0] != want {
			t.Errorf("%s sent as %v; want v%d (broker up to v%d, Sarama up to v%d)", kmsg.NameForKey(int16(tc.key)), sent, want, broker[int16(tc.key)], tc.most)
		}
	}
}

// A broker that supports no version the writer can send fails the write
// at once, with the versions of both sides.
func TestNoCommonRequestVersionFailsAtOnce(t *testing.T) {
	e, _, cl := kafkatest.EmbeddedClient(t)
	b, err := cl.Leader("revenue", 0)
	if err != nil {
		t.Fatal(err)
	}
	real, err := b.ApiVersions(&sarama.ApiVersionsRequest{Version: 3, ClientSoftwareName: "faultline", ClientSoftwareVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	// A broker from the future: Produce v20 and later only.
	e.Cluster().ControlKey(int16(kmsg.ApiVersions), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.Cluster().KeepControl()
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, k := range real.ApiKeys {
			rk := kmsg.NewApiVersionsResponseApiKey()
			rk.ApiKey, rk.MinVersion, rk.MaxVersion = k.ApiKey, k.MinVersion, k.MaxVersion
			if k.ApiKey == int16(kmsg.Produce) {
				rk.MinVersion, rk.MaxVersion = 20, 21
			}
			resp.ApiKeys = append(resp.ApiKeys, rk)
		}
		return resp, nil, true
	})
	log := observe(e.Cluster(), nil, kmsg.Produce)
	w, err := newRecordWriter(cl, "revenue", nil, -1, -1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.abandon()
	clock := newTestClock()
	w.env.retry = clock.policy(time.Minute)
	if err := w.write(nil, []byte("x"), time.Now()); err != nil {
		t.Fatal(err)
	}
	err = w.flush()
	if !errors.Is(err, ErrNoCommonVersion) || !strings.Contains(err.Error(), "Produce v20 to v21") {
		t.Fatalf("flush: %v; want ErrNoCommonVersion naming the broker's Produce versions", err)
	}
	if clock.sleeps() != 0 || log.count(kmsg.Produce) != 0 {
		t.Errorf("%d backoffs, %d produce requests; want none", clock.sleeps(), log.count(kmsg.Produce))
	}
}

// pickVersion: the newest version in both ranges, and an error naming both
// when they do not meet.
func TestPickVersion(t *testing.T) {
	for _, tc := range []struct {
		name        string
		broker      map[int16]versionRange
		least, most int16
		want        int16
		noCommon    bool
	}{
		{"broker newer", map[int16]versionRange{0: {3, 12}}, 3, 9, 9, false},
		{"broker older", map[int16]versionRange{0: {0, 7}}, 3, 9, 7, false},
		{"Kafka 4 keeps v0-v2 listed", map[int16]versionRange{0: {0, 12}}, 3, 9, 9, false},
		{"broker too old", map[int16]versionRange{0: {0, 2}}, 3, 9, 0, true},
		{"broker too new", map[int16]versionRange{0: {10, 12}}, 3, 9, 0, true},
		{"request unknown", map[int16]versionRange{1: {0, 12}}, 3, 9, 0, true},
		{"broker did not say", nil, 3, 9, 9, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pickVersion(tc.broker, "b:9092", apiProduce, tc.least, tc.most)
			if errors.Is(err, ErrNoCommonVersion) != tc.noCommon || !tc.noCommon && got != tc.want {
				t.Fatalf("v%d, %v; want v%d, no common version %v", got, err, tc.want, tc.noCommon)
			}
		})
	}
}
