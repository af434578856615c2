// Package kafka is what faultline's Kafka roles share, through Sarama: the
// Client with its Sarama configuration, TLS and SASL (Flink's Kafka
// connector: its properties.*), the retry policy of requests, the reads
// of a topic (plain and read_committed, with the probes that find where a
// read_committed consumer's records end) that the verification oracle
// uses, and the creation of topics. The roles are the packages below it,
// none of which imports another: source (Flink: KafkaSource), sink (the
// transactional output behind the two-phase-commit sink; Flink: KafkaSink),
// broker (the embedded kfake broker, its log check and retention), live
// (the live verifier) and fill (the writer that fills the input topics from
// the seeded generator).
//
// Unlike the engine in package runtime, which reads and waits for time only
// on the job's clock (Config.Clock), these packages keep to the wall clock
// (time.Now, its timers and deadlines): they talk to a real broker, whose
// timeouts, retries and record timestamps are wall time that a fake clock
// could not move.
package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime"
)

// Client is how to reach a Kafka cluster.
type Client struct {
	Brokers []string
	// TLS turns on TLS; TLSCA is a PEM file of CAs to trust (default: the
	// system's).
	TLS   bool
	TLSCA string
	// SASLMechanism is "", "plain", "scram-sha-256" or "scram-sha-512".
	SASLMechanism string
	SASLUser      string
	SASLPassword  string
	// DialTimeout bounds every connection attempt, so that an unreachable
	// broker is reported in seconds rather than minutes.
	DialTimeout time.Duration
	// FetchBytes is the most a consumer asks of one partition per fetch
	// (0: 64 KiB from the embedded broker, 1 MiB, Kafka's and Sarama's
	// default, from a cluster).
	FetchBytes int32
	// Embedded says that Brokers is faultline's embedded broker, so that
	// errors speak of it rather than of TLS and SASL settings.
	Embedded bool
}

// embeddedFetchBytes is what a consumer of the embedded broker asks of one
// partition per fetch.
const embeddedFetchBytes = 64 << 10

// Keys of the client's TLS and SASL settings, as Kafka's clients name them
// (librdkafka, kcat; Flink's Kafka connector passes them on as
// properties.*).
const (
	KeySecurityProtocol = "security.protocol" // SSL: TLS on
	KeySSLCA            = "ssl.ca.location"
	KeySASLMechanism    = "sasl.mechanism"
	KeySASLUsername     = "sasl.username"
)

// probeTimeout bounds the first request to a broker that accepted the
// connection: a listener that never answers is reported in seconds.
const probeTimeout = 5 * time.Second

// ErrUnreachable means no broker of the list answered.
var ErrUnreachable = errors.New("no Kafka broker reachable")

// Config returns a Sarama configuration for c. Version 2.8 is the least
// kfake accepts and what every feature used here needs (transactions,
// read_committed).
func (c Client) Config() (*sarama.Config, error) {
	cfg := sarama.NewConfig()
	cfg.ClientID = "faultline"
	cfg.Version = sarama.V2_8_0_0
	d := c.DialTimeout
	if d <= 0 {
		d = 3 * time.Second
	}
	cfg.Net.DialTimeout = d
	cfg.Net.ReadTimeout = 10 * time.Second
	cfg.Net.WriteTimeout = 10 * time.Second
	cfg.Metadata.Retry.Max = 1
	cfg.Metadata.Retry.Backoff = 200 * time.Millisecond
	// faultline creates the topics it needs itself (EnsureTopics); asking
	// a broker about a misspelt topic must not create it.
	cfg.Metadata.AllowAutoTopicCreation = false
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Fetch.Default = 1 << 20
	if c.Embedded {
		// Over loopback a fetch costs little, and what a consumer holds
		// is about its fetches: the broker builds each answer whole, the
		// client reads it into one buffer that its records point into.
		// 64 KiB a partition keeps the job's memory some 50 MB lower at
		// full speed, at the same throughput (docs/PERFORMANCE.md).
		cfg.Consumer.Fetch.Default = embeddedFetchBytes
	}
	if c.FetchBytes > 0 {
		cfg.Consumer.Fetch.Default = c.FetchBytes
	}
	if c.TLSCA != "" && !c.TLS {
		// A CA file is read only for TLS: without it the connection
		// would go in the clear while the user believes otherwise.
		return nil, &runtime.ConfigError{Key: KeySSLCA, Value: c.TLSCA, Needs: KeySecurityProtocol}
	}
	if c.TLS {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.TLSCA != "" {
			pem, err := os.ReadFile(c.TLSCA)
			if err != nil {
				return nil, &runtime.ConfigError{Key: KeySSLCA, Value: c.TLSCA, Want: "a PEM file of CAs that can be read (" + err.Error() + ")"}
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, &runtime.ConfigError{Key: KeySSLCA, Value: c.TLSCA, Want: "a PEM file of CAs; this one holds no PEM certificate"}
			}
			tc.RootCAs = pool
		}
		cfg.Net.TLS.Enable = true
		cfg.Net.TLS.Config = tc
	}
	switch strings.ToLower(c.SASLMechanism) {
	case "":
	case "plain":
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	case "scram-sha-256":
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		cfg.Net.SASL.SCRAMClientGeneratorFunc = scramSHA256
	case "scram-sha-512":
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		cfg.Net.SASL.SCRAMClientGeneratorFunc = scramSHA512
	default:
		return nil, &runtime.ConfigError{Key: KeySASLMechanism, Value: fmt.Sprintf("%q", c.SASLMechanism), Want: "plain, scram-sha-256 or scram-sha-512"}
	}
	if cfg.Net.SASL.Enable {
		if c.SASLUser == "" {
			return nil, &runtime.ConfigError{Key: KeySASLMechanism, Value: c.SASLMechanism, Needs: KeySASLUsername}
		}
		cfg.Net.SASL.User = c.SASLUser
		cfg.Net.SASL.Password = c.SASLPassword
	}
	return cfg, nil
}

// NewClient connects to the cluster, failing within a few seconds with a
// message that names the addresses when none answers.
func (c Client) NewClient() (sarama.Client, error) {
	return c.NewClientContext(context.Background())
}

// NewReaderClient is NewClient for reading partitions up to offsets known
// beforehand: a fetch waits at most 50 ms for records (Sarama's default is
// 500 ms), as ReadCommitted's do, so that a partition consumer closed at
// its end is not held by a long poll, nor the client's next request
// (another partition's offsets) queued behind one.
func (c Client) NewReaderClient() (sarama.Client, error) {
	cfg, err := c.Config()
	if err != nil {
		return nil, err
	}
	cfg.Consumer.MaxWaitTime = 50 * time.Millisecond
	return c.NewClientWith(cfg)
}

// NewClientContext is NewClient that gives up when ctx ends (Ctrl-C while
// connecting).
func (c Client) NewClientContext(ctx context.Context) (sarama.Client, error) {
	cfg, err := c.Config()
	if err != nil {
		return nil, err
	}
	type connected struct {
		cl  sarama.Client
		err error
	}
	done := make(chan connected, 1)
	go func() {
		cl, err := c.NewClientWith(cfg)
		done <- connected{cl, err}
	}()
	select {
	case r := <-done:
		return r.cl, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.cl != nil {
				r.cl.Close()
			}
		}()
		return nil, fmt.Errorf("stopped while connecting to Kafka at %s", strings.Join(c.Brokers, ","))
	}
}

// SyncProducer is a plain (not transactional) producer that waits for each
// write to be acknowledged.
func (c Client) SyncProducer() (sarama.SyncProducer, error) {
	cfg, err := c.Config()
	if err != nil {
		return nil, err
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Retry.Max = 5
	cfg.Producer.Retry.Backoff = 200 * time.Millisecond
	return sarama.NewSyncProducer(c.Brokers, cfg)
}

// NewClientWith is NewClient with a configuration of the caller's: Config's,
// changed for one use (a consumer's isolation level or fetch wait). Like
// NewClient it fails within a few seconds, naming the addresses, when no
// broker answers.
func (c Client) NewClientWith(cfg *sarama.Config) (sarama.Client, error) {
	if len(c.Brokers) == 0 {
		return nil, errors.New("no Kafka brokers given")
	}
	// Try a plain TCP connection first: Sarama's own error for a refused
	// connection ("client has run out of available brokers") names nothing.
	var reachable bool
	var lastErr error
	for _, b := range c.Brokers {
		conn, err := net.DialTimeout("tcp", b, cfg.Net.DialTimeout)
		if err == nil {
			conn.Close()
			reachable = true
			break
		}
		lastErr = err
	}
	if !reachable {
		return nil, fmt.Errorf("%w at %s: %v", ErrUnreachable, strings.Join(c.Brokers, ","), lastErr)
	}
	if cfg.Net.TLS.Enable {
		if err := probeTLS(c.Brokers, cfg); err != nil {
			return nil, err
		}
	} else if err := c.probe(cfg); err != nil {
		return nil, err
	}
	cl, err := sarama.NewClient(c.Brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to Kafka at %s: %w%s", strings.Join(c.Brokers, ","), err, c.eofHint(err))
	}
	return cl, nil
}

// eofHint explains a connection the broker closed: the embedded broker
// does so while it is down (the broker-down fault); another listener, when
// the client's TLS or SASL is not what it expects.
func (c Client) eofHint(err error) string {
	switch {
	case !errors.Is(err, io.EOF):
		return ""
	case c.Embedded:
		return " (the embedded broker closed the connection: it is down, as the broker-down fault makes it, or stopping)"
	}
	return " (the broker closed the connection, as a listener does when the client's TLS or SASL is not what it expects: check its TLS (security.protocol) and SASL (sasl.mechanism))"
}

// probe asks the brokers for their API versions, the first request of
// every Kafka client, within probeTimeout, and returns nil once one
// answers. Sarama would wait its read timeout and retry for a minute on a
// listener that accepts connections and never answers.
func (c Client) probe(cfg *sarama.Config) error {
	pc := *cfg
	pc.Net.ReadTimeout = probeTimeout
	pc.Net.WriteTimeout = probeTimeout
	pc.Net.SASL.Enable = false    // ApiVersions comes before authentication
	pc.ApiVersionsRequest = false // the request below is the only one
	var err error
	for _, addr := range c.Brokers {
		b := sarama.NewBroker(addr)
		if err = b.Open(&pc); err == nil {
			_, err = b.ApiVersions(&sarama.ApiVersionsRequest{Version: 0})
		}
		b.Close()
		if err == nil {
			return nil
		}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err) {
		return fmt.Errorf("%w: %s accepted the connection but answered no request in %s: is it a Kafka broker (a TLS listener needs security.protocol SSL)?",
			ErrUnreachable, strings.Join(c.Brokers, ","), probeTimeout)
	}
	return fmt.Errorf("connect to Kafka at %s: %w%s", strings.Join(c.Brokers, ","), err, c.eofHint(err))
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// probeTLS makes a TLS handshake with the first broker that answers, within
// the dial timeout. Sarama's first request would wait its read timeout on a
// listener that does not speak TLS (a plaintext Kafka broker waits for the
// rest of what it takes for a huge request), and then retry; its error
// names neither TLS nor the certificate.
func probeTLS(brokers []string, cfg *sarama.Config) error {
	var err error
	for _, b := range brokers {
		d := tls.Dialer{Config: cfg.Net.TLS.Config}
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Net.DialTimeout) // dial and handshake
		var conn net.Conn
		conn, err = d.DialContext(ctx, "tcp", b)
		cancel()
		if err == nil {
			conn.Close()
			return nil
		}
		var verify *tls.CertificateVerificationError
		if errors.As(err, &verify) {
			err = fmt.Errorf("TLS handshake with %s: %w (ssl.ca.location names a PEM file of the CA that signed the broker's certificate)", b, err)
		} else {
			err = fmt.Errorf("TLS handshake with %s: %w (is it a TLS listener? a plaintext one needs no TLS)", b, err)
		}
	}
	return err
}
