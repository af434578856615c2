// Package broker is faultline's embedded Kafka broker (kfake): started when
// no --brokers are given, with its log in the state dir, the broker-down
// fault's switch, the check of its log before it reads it (what a killed
// process may leave, what the state dir needs of it), and the retention
// that deletes what no reader needs any more. Flink has no counterpart: it
// expects a Kafka cluster.
package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/faultline-dev/faultline/third_party/kfake"
)

// Version says which kfake the embedded broker is: upstream's version it
// was taken at, with faultline's patches (third_party/kfake's
// README.faultline.md, which a test holds to it).
const Version = "kfake v0.0.0-20260918054303-01f206a7e32c (franz-go 01f206a7e32c) with faultline's 9 patches"

// Embedded is the in-process Kafka broker (kfake) that faultline starts when
// no --brokers are given. It listens on 127.0.0.1 and keeps its log in a
// folder of the state dir, so that topics, committed offsets and committed
// transactions survive a killed process as a real broker's would. Sarama
// reaches it over TCP like any other broker.
type Embedded struct {
	cluster   *kfake.Cluster
	dataDir   string       // the log's folder ("": in memory)
	downUntil atomic.Int64 // unix ns; requests before then are refused
	// Addr is host:port of the broker.
	Addr string
	// Note says why the broker is not on the port asked for, if it is not.
	Note string
}

// The sizes of the broker's log segments (kfake's default is 100 MiB). In
// memory a segment is a slice that doubles as it fills, so a topic written
// fast pays for copying and zeroing up to a whole segment again and again;
// on disk, retention frees only whole segments (see Retention), so what it
// keeps is up to a segment per partition more than the readers need.
const (
	memorySegmentBytes = 4 << 20
	diskSegmentBytes   = 1 << 20
)

// EmbeddedOpt is an option of StartEmbedded.
type EmbeddedOpt func(*embeddedCfg)

type embeddedCfg struct {
	needs LogNeeds
}

// WithLogNeeds has StartEmbedded check that the log holds what a state dir
// needs of it (see LogNeeds) before the broker reads it.
func WithLogNeeds(n LogNeeds) EmbeddedOpt { return func(c *embeddedCfg) { c.needs = n } }

// StartEmbedded starts the broker on port (0: any free port), falling back
// to a free port when port is taken. dataDir "" keeps everything in memory;
// a log in dataDir is checked first (checkLog), and a damaged one is
// refused with ErrLogDamaged. topics are created with their partition
// counts if they do not exist. The broker's goroutines carry the profiler
// label operator=broker, beside the job's operators' (--pprof).
func StartEmbedded(port int, dataDir string, topics map[string]int32, options ...EmbeddedOpt) (e *Embedded, err error) {
	pprof.Do(context.Background(), pprof.Labels("operator", "broker"), func(context.Context) {
		e, err = startEmbedded(port, dataDir, topics, options...)
	})
	return e, err
}

func startEmbedded(port int, dataDir string, topics map[string]int32, options ...EmbeddedOpt) (*Embedded, error) {
	var cfg embeddedCfg
	for _, o := range options {
		o(&cfg)
	}
	opts := func(p int) []kfake.Opt {
		// Like Kafka by default (auto.create.topics.enable, num.partitions
		// 1), a topic a client asks for by name is created on first use:
		// kcat producing to a new topic works.
		o := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(p), kfake.ClusterID("faultline"),
			kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1)}
		segment := memorySegmentBytes
		if dataDir != "" {
			o = append(o, kfake.DataDir(dataDir), kfake.SyncWrites())
			segment = diskSegmentBytes
		}
		return append(o, kfake.BrokerConfigs(map[string]string{"log.segment.bytes": strconv.Itoa(segment)}))
	}
	if err := checkLog(dataDir, cfg.needs); err != nil {
		var d *logDamage
		if errors.As(err, &d) {
			return nil, fmt.Errorf("%w: %v", ErrLogDamaged, d)
		}
		return nil, err
	}
	e := &Embedded{dataDir: dataDir}
	c, err := kfake.NewCluster(opts(port)...)
	if err != nil && port != 0 && isAddrInUse(err) {
		e.Note = fmt.Sprintf("port %d is taken; the embedded broker listens on a free port instead", port)
		c, err = kfake.NewCluster(opts(0)...)
	}
	if err != nil {
		if dataDir != "" && !isAddrInUse(err) {
			return nil, fmt.Errorf("%w: %s cannot be read back (%v): its topics, offsets and transactions are lost", ErrLogDamaged, dataDir, err)
		}
		if dataDir != "" {
			return nil, fmt.Errorf("start the embedded Kafka broker (log in %s): %w", dataDir, err)
		}
		return nil, fmt.Errorf("start the embedded Kafka broker: %w", err)
	}
	e.cluster = c
	e.Addr = c.ListenAddrs()[0]
	// While the broker is down (the broker-down fault), every request closes
	// its client's connection, as a broker that went away would.
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if time.Now().UnixNano() < e.downUntil.Load() {
			return nil, errBrokerDown, true
		}
		return nil, nil, false
	})
	for name, parts := range topics {
		if c.TopicInfo(name) != nil {
			continue
		}
		if err := c.CreateTopic(name, parts, nil); err != nil {
			c.Close()
			return nil, fmt.Errorf("create topic %s: %w", name, err)
		}
	}
	return e, nil
}

// ErrLogDamaged means the embedded broker's log in the state dir cannot be
// read back, or does not hold what the state dir needs of it: a file of it
// is missing or damaged. Nothing in it can be trusted; `faultline run
// --fresh` or `faultline reset` starts again from nothing.
var ErrLogDamaged = errors.New("the embedded Kafka broker's log is damaged")

func isAddrInUse(err error) bool {
	var se *os.SyscallError
	if errors.As(err, &se) && errors.Is(se.Err, syscall.EADDRINUSE) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) && errors.Is(oe.Err, syscall.EADDRINUSE)
}

// Cluster is the kfake cluster behind the broker, for tests that answer
// its requests in its place (kfake's Control and ControlKey).
func (e *Embedded) Cluster() *kfake.Cluster { return e.cluster }

// Port is the port the broker listens on.
func (e *Embedded) Port() int {
	_, p, _ := net.SplitHostPort(e.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

var errBrokerDown = errors.New("the embedded broker is down (broker-down fault)")

// Down makes the broker refuse every request for d: each one closes its
// client's connection (the broker-down fault). Its log and transactions
// stay; clients reconnect once it is back.
func (e *Embedded) Down(d time.Duration) {
	e.downUntil.Store(time.Now().Add(d).UnixNano())
}

// IsDown reports whether the broker is refusing requests now.
func (e *Embedded) IsDown() bool { return time.Now().UnixNano() < e.downUntil.Load() }

// Close stops the broker, flushing its log.
//
// A log folder removed while the broker ran (the state dir deleted under
// a run) stays removed: kfake writes its state out as it closes, making
// its folders again, and what it wrote then is taken away.
func (e *Embedded) Close() {
	gone := false
	if e.dataDir != "" {
		_, err := os.Stat(filepath.Join(e.dataDir, "meta.json"))
		gone = errors.Is(err, os.ErrNotExist)
	}
	e.cluster.Close()
	if gone {
		os.RemoveAll(e.dataDir)
		os.Remove(filepath.Dir(e.dataDir)) // the state dir, when kfake made it again empty
	}
}
