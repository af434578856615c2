package sink

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime/kafka"
)

// The API keys of the requests the sink's writer sends by hand.
const (
	apiProduce            int16 = 0
	apiInitProducerID     int16 = 22
	apiAddPartitionsToTxn int16 = 24
	apiEndTxn             int16 = 26
)

var apiNames = map[int16]string{
	apiProduce: "Produce", apiInitProducerID: "InitProducerId",
	apiAddPartitionsToTxn: "AddPartitionsToTxn", apiEndTxn: "EndTxn",
}

// ErrNoCommonVersion means a broker supports no version of a request that
// faultline's sink can send: the broker is too old or too new for this
// build of faultline.
var ErrNoCommonVersion = errors.New("the broker and faultline share no version of a request")

// versionRange is the versions of one request a broker supports.
type versionRange struct{ min, max int16 }

// requestEnv is what the requests of one output share: how they are
// retried, and what is known of each broker — the request versions its
// ApiVersions answer lists (asked once per connection) and until when it
// throttles this client (KIP-219). Its methods are safe for concurrent
// use.
type requestEnv struct {
	retry kafka.RetryPolicy

	mu       sync.Mutex
	versions map[string]map[int16]versionRange // by brokerKey; nil map: the broker did not say
	quietTo  map[string]time.Time              // by brokerKey: no request before then
}

func newRequestEnv() *requestEnv {
	return &requestEnv{retry: requestRetryPolicy(), versions: map[string]map[int16]versionRange{}, quietTo: map[string]time.Time{}}
}

// requestRetryPolicy is how the sink's requests are retried: the default
// policy, which also gives up at once on a broker that shares no version
// of a request with faultline, or a record no batch can carry.
func requestRetryPolicy() kafka.RetryPolicy {
	p := kafka.DefaultRetryPolicy()
	p.Final = []error{ErrNoCommonVersion, ErrRecordTooLarge}
	return p
}

func brokerKey(b *sarama.Broker) string { return strconv.Itoa(int(b.ID())) + "@" + b.Addr() }

// ready connects b if it is not connected and waits while b throttles
// this client. A broker that cannot be connected to is an
// kafka.UnreachableError.
func (e *requestEnv) ready(conf *sarama.Config, b *sarama.Broker, stop <-chan struct{}) error {
	_ = b.Open(conf) // ErrAlreadyConnected when it is; a failure shows below
	if ok, err := b.Connected(); !ok {
		if err == nil {
			err = sarama.ErrNotConnected
		}
		e.forget(b)
		return &kafka.UnreachableError{What: "broker " + b.Addr(), Err: err}
	}
	e.mu.Lock()
	until := e.quietTo[brokerKey(b)]
	e.mu.Unlock()
	if d := until.Sub(e.retry.Now()); d > 0 && !e.retry.Sleep(d, stop) {
		return kafka.ErrWriterClosed
	}
	return nil
}

// throttled notes that b asked for no request for d (a response's
// ThrottleTime): the next request to it waits in ready.
func (e *requestEnv) throttled(b *sarama.Broker, d time.Duration) {
	if d <= 0 {
		return
	}
	until := e.retry.Now().Add(d)
	e.mu.Lock()
	defer e.mu.Unlock()
	if k := brokerKey(b); until.After(e.quietTo[k]) {
		e.quietTo[k] = until
	}
}

// broke closes b after its connection failed (the client opens it again)
// and forgets its versions: the broker may come back as another release.
func (e *requestEnv) broke(b *sarama.Broker) {
	e.forget(b)
	_ = b.Close()
}

func (e *requestEnv) forget(b *sarama.Broker) {
	e.mu.Lock()
	delete(e.versions, brokerKey(b))
	e.mu.Unlock()
}

// version picks the version of request key to send to b: the newest that
// b supports and that this client can send (from least to most), which
// is at most what Sarama encodes for the request and allows for the
// client's configured Kafka version. No overlap is ErrNoCommonVersion.
func (e *requestEnv) version(b *sarama.Broker, key, least, most int16) (int16, error) {
	e.mu.Lock()
	vs, known := e.versions[brokerKey(b)]
	e.mu.Unlock()
	if !known {
		resp, err := b.ApiVersions(&sarama.ApiVersionsRequest{Version: 3, ClientSoftwareName: "faultline", ClientSoftwareVersion: "1"})
		if err != nil {
			e.broke(b)
			return 0, fmt.Errorf("ApiVersions: %w", err)
		}
		if resp.ErrorCode == int16(sarama.ErrNoError) {
			vs = make(map[int16]versionRange, len(resp.ApiKeys))
			for _, k := range resp.ApiKeys {
				vs[k.ApiKey] = versionRange{k.MinVersion, k.MaxVersion}
			}
		}
		e.throttled(b, time.Duration(resp.ThrottleTimeMs)*time.Millisecond)
		e.mu.Lock()
		e.versions[brokerKey(b)] = vs
		e.mu.Unlock()
	}
	return pickVersion(vs, b.Addr(), key, least, most)
}

// pickVersion is the newest version of request key in both the broker's
// range (vs; nil when it did not say, and then most is sent and Sarama
// restricts it) and least to most.
func pickVersion(vs map[int16]versionRange, addr string, key, least, most int16) (int16, error) {
	if vs == nil {
		return most, nil
	}
	r, ok := vs[key]
	if !ok {
		return 0, fmt.Errorf("%w: broker %s does not support %s at all", ErrNoCommonVersion, addr, apiNames[key])
	}
	v := min(most, r.max)
	if v < r.min || v < least {
		return 0, fmt.Errorf("%w: broker %s supports %s v%d to v%d, faultline sends v%d to v%d", ErrNoCommonVersion, addr, apiNames[key], r.min, r.max, least, most)
	}
	return v, nil
}

// coordinator is txn's transaction coordinator, connected and not
// throttling. Failing to find any broker to ask counts as unreachable.
func (e *requestEnv) coordinator(cl sarama.Client, txn string, stop <-chan struct{}) (*sarama.Broker, error) {
	coord, err := cl.TransactionCoordinator(txn)
	if err != nil {
		var kerr sarama.KError
		if errors.As(err, &kerr) || errors.Is(err, sarama.ErrClosedClient) {
			return nil, err
		}
		return nil, &kafka.UnreachableError{What: "the coordinator of transactional id " + txn, Err: err}
	}
	if err := e.ready(cl.Config(), coord, stop); err != nil {
		_ = cl.RefreshTransactionCoordinator(txn)
		return nil, err
	}
	return coord, nil
}

// anyBroker is a broker of the cluster, connected and ready (for a request
// that any broker answers).
func (e *requestEnv) anyBroker(cl sarama.Client, stop <-chan struct{}) (*sarama.Broker, error) {
	b := cl.LeastLoadedBroker()
	if b == nil {
		return nil, sarama.ErrClosedClient
	}
	if err := e.ready(cl.Config(), b, stop); err != nil {
		return nil, err
	}
	return b, nil
}

// The oldest version of each request the writer can send: Produce before
// v3 carries no record batches (and Kafka 4.0 refuses it, KIP-896).
const (
	produceLeast       = 3
	initProducerLeast  = 0
	addPartitionsLeast = 0
	endTxnLeast        = 0
)

// initProducerIDVersion is the newest InitProducerID version Sarama sends
// for a configured Kafka version (and encodes: up to v4).
func initProducerIDVersion(v sarama.KafkaVersion) int16 {
	return requestVersion(v, 0, versionStep{sarama.V2_7_0_0, 4}, versionStep{sarama.V2_5_0_0, 3},
		versionStep{sarama.V2_4_0_0, 2}, versionStep{sarama.V2_0_0_0, 1})
}

// endTxnVersion is the newest EndTxn version Sarama sends for a configured
// Kafka version (and encodes: up to v3).
func endTxnVersion(v sarama.KafkaVersion) int16 {
	return requestVersion(v, 0, versionStep{sarama.V2_8_0_0, 3}, versionStep{sarama.V2_7_0_0, 2}, versionStep{sarama.V2_0_0_0, 1})
}
