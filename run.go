package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"faultline/checkpoint"
	"faultline/internal/clock"
	"faultline/internal/diskroom"
	"faultline/internal/supervise"
	"faultline/restart"
	"faultline/runtime"
	"faultline/runtime/barrier"
	"faultline/runtime/kafka"
	"faultline/runtime/spec"
	"faultline/runtime/verify"
	"faultline/tui"
)

// runOptions are the flags of `faultline run`, named after Flink's options
// where Flink has one.
type runOptions struct {
	headless bool
	jobFile  string
	records  int64
	rate     float64
	seed     int64
	mode     string

	interval      time.Duration
	timeout       time.Duration
	minPause      time.Duration
	maxConcurrent int
	tolerable     int

	parallelism []string
	stateDir    string
	logFile     string
	inject      []string

	restartStrategy  string
	failoverStrategy string
	restartAttempts  int
	restartDelay     time.Duration
	restartOpts      restart.Options

	channelCapacity int
	batchSize       int

	resume          bool
	fresh           bool
	allowFreshStart bool
	retained        int
	retention       time.Duration
	stateBackend    string
	incremental     bool
	savepointOnExit bool
	fromSavepoint   int64
	allowNonRestore bool

	onBadRecord     string
	deadLetterTopic string

	// stateTTL overrides the join's state_ttl when setTTL (the flag was
	// given).
	stateTTL time.Duration
	setTTL   bool
	// setRate is whether --rate was given (its default, -1, means "the
	// default for the input").
	setRate bool

	kafka kafkaOptions
}

// kafkaOptions are the flags that say which Kafka to use and how.
type kafkaOptions struct {
	brokers       string
	listen        int
	generate      bool
	bounded       bool
	topics        []string
	group         string
	startup       string
	sinkGuarantee string
	txnPrefix     string
	txnTimeout    time.Duration
	tls           bool
	tlsCA         string
	saslMechanism string
	saslUser      string
	saslPassword  string
}

func (k *kafkaOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&k.brokers, "brokers", "", "host:port,… of a Kafka cluster to use instead of the embedded broker")
	f.IntVar(&k.listen, "listen", 9092, "port of the embedded broker (a free port is used when it is taken)")
	f.BoolVar(&k.generate, "generate", false, "with --brokers: write the generator's orders and payments into the cluster too (always on with the embedded broker)")
	f.BoolVar(&k.bounded, "bounded", false, "read the input topics only up to their end at start, then finish (implied by --records)")
	f.StringArrayVar(&k.topics, "topic", nil, "Kafka topic of a source or sink operator, e.g. orders-source=shop.orders (repeatable)")
	f.StringVar(&k.group, "group", "", "consumer group the sources commit their offsets to on every completed checkpoint (default faultline-<job>)")
	f.StringVar(&k.startup, "startup", "earliest", "where sources start without a checkpoint: earliest, latest or committed (the group's offsets)")
	f.StringVar(&k.sinkGuarantee, "sink-guarantee", "exactly-once", "the sink's delivery guarantee: exactly-once (Kafka transactions), at-least-once or none")
	f.StringVar(&k.txnPrefix, "txn-prefix", "", "prefix of the sink's transactional ids (default faultline-<job>)")
	f.DurationVar(&k.txnTimeout, "sink-transaction-timeout", kafka.DefaultTransactionTimeout, "how long the broker lets an exactly-once sink transaction stay open before aborting it (the producer's transaction.timeout.ms); longer than --checkpoint-interval, at most the broker's transaction.max.timeout.ms (15m on the embedded broker)")
	f.BoolVar(&k.tls, "tls", false, "connect to --brokers with TLS")
	f.StringVar(&k.tlsCA, "tls-ca", "", "PEM file of the CAs to trust for --tls (default: the system's)")
	f.StringVar(&k.saslMechanism, "sasl-mechanism", "", "SASL: plain, scram-sha-256 or scram-sha-512")
	f.StringVar(&k.saslUser, "sasl-user", "", "SASL user")
	f.StringVar(&k.saslPassword, "sasl-password", "", "SASL password (default: $FAULTLINE_SASL_PASSWORD)")
}

func newRunCmd() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a job (the default orders ⋈ payments job unless --job names another)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.setTTL = cmd.Flags().Changed("state-ttl")
			o.setRate = cmd.Flags().Changed("rate")
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.headless, "headless", false, "no terminal UI: print JSON events and a final JSON report (also when stdout is not a terminal)")
	f.StringVar(&o.jobFile, "job", "", "job spec file (default: the built-in orders job, fixtures/jobs/orders.yaml)")
	f.Int64Var(&o.records, "records", 0, "bounded input of this many records (orders plus payments); 0 runs until stopped")
	f.Float64Var(&o.rate, "rate", -1, "input records/s the generator writes (default: all at once with --records, 400 otherwise)")
	f.Int64Var(&o.seed, "seed", 1, "seed of the input generator")
	f.StringVar(&o.mode, "mode", "exactly-once", "checkpointing mode: exactly-once (aligned barriers) or at-least-once")
	f.DurationVar(&o.interval, "checkpoint-interval", 2*time.Second, "time between periodic checkpoints; 0 turns checkpointing off")
	f.DurationVar(&o.timeout, "checkpoint-timeout", checkpoint.DefaultTimeout, "a checkpoint not complete after this long expires")
	f.DurationVar(&o.minPause, "min-pause", 0, "least time from the end of one checkpoint to the start of the next")
	f.IntVar(&o.maxConcurrent, "max-concurrent-checkpoints", checkpoint.DefaultMaxConcurrent, "most checkpoints in progress at once")
	f.IntVar(&o.tolerable, "tolerable-failed-checkpoints", 0, "consecutive failed checkpoints tolerated before the job fails over")
	f.StringSliceVar(&o.parallelism, "parallelism", nil, "operator parallelism overrides, e.g. join=3,revenue=1")
	f.StringVar(&o.stateDir, "state-dir", "", "the folder where everything a run keeps lives (default: faultline under the user's data directory)")
	f.StringVar(&o.logFile, "log-file", "", "diagnostic log (default: faultline.log in the state dir)")
	f.StringArrayVar(&o.inject, "inject", nil, "inject a fault, e.g. 'after=3s,task=join/1,fault=panic' or 'after-records=20000,task=join/1,fault=error' (repeatable)")
	ro := restart.DefaultOptions()
	o.restartOpts = ro
	f.StringVar(&o.restartStrategy, "restart-strategy", "fixed-delay", "what to do after a failure: fixed-delay, failure-rate, exponential-delay or none (restart-strategy.type)")
	f.StringVar(&o.failoverStrategy, "failover-strategy", "full", "what restarts after a failure: full (every task), region (the failed task's pipelined region), individual (only the failed task, from its checkpointed state, without replaying its input: loses data) or none (jobmanager.execution.failover-strategy)")
	f.IntVar(&o.restartAttempts, "restart-attempts", 10, "fixed-delay: restarts allowed (restart-strategy.fixed-delay.attempts)")
	f.DurationVar(&o.restartDelay, "restart-delay", time.Second, "fixed-delay: wait before each restart (restart-strategy.fixed-delay.delay)")
	f.IntVar(&o.restartOpts.FailureRateMaxFailures, "failure-rate-max-failures", ro.FailureRateMaxFailures, "failure-rate: failures allowed within the interval (restart-strategy.failure-rate.max-failures-per-interval)")
	f.DurationVar(&o.restartOpts.FailureRateInterval, "failure-rate-interval", ro.FailureRateInterval, "failure-rate: the sliding window (restart-strategy.failure-rate.failure-rate-interval)")
	f.DurationVar(&o.restartOpts.FailureRateDelay, "failure-rate-delay", ro.FailureRateDelay, "failure-rate: wait before each restart (restart-strategy.failure-rate.delay)")
	f.DurationVar(&o.restartOpts.Exponential.Initial, "backoff-initial", ro.Exponential.Initial, "exponential-delay: first wait (restart-strategy.exponential-delay.initial-backoff)")
	f.DurationVar(&o.restartOpts.Exponential.Max, "backoff-max", ro.Exponential.Max, "exponential-delay: longest wait (restart-strategy.exponential-delay.max-backoff)")
	f.Float64Var(&o.restartOpts.Exponential.Multiplier, "backoff-multiplier", ro.Exponential.Multiplier, "exponential-delay: growth per failure (restart-strategy.exponential-delay.backoff-multiplier)")
	f.Float64Var(&o.restartOpts.Exponential.JitterFactor, "backoff-jitter", ro.Exponential.JitterFactor, "exponential-delay: random ± fraction of each wait (restart-strategy.exponential-delay.jitter-factor)")
	f.DurationVar(&o.restartOpts.Exponential.ResetThreshold, "backoff-reset-threshold", ro.Exponential.ResetThreshold, "exponential-delay: a quiet period this long resets the backoff (restart-strategy.exponential-delay.reset-backoff-threshold)")
	f.IntVar(&o.restartOpts.Exponential.AttemptsBeforeReset, "backoff-attempts-before-reset", ro.Exponential.AttemptsBeforeReset, "exponential-delay: attempts allowed without a reset (restart-strategy.exponential-delay.attempts-before-reset-backoff)")
	f.IntVar(&o.channelCapacity, "channel-capacity", 4, "batches each channel holds before its sender blocks (back-pressure)")
	f.IntVar(&o.batchSize, "batch-size", 256, "most elements in one batch on a channel")
	f.BoolVar(&o.resume, "resume", false, "start from the newest valid checkpoint of this job in the state dir (as after a crash)")
	f.BoolVar(&o.fresh, "fresh", false, "delete everything earlier runs left in the state dir (checkpoints, savepoints, the embedded broker's log, the verification ledger) and start from nothing")
	f.BoolVar(&o.allowFreshStart, "allow-fresh-start", false, "when every checkpoint of the job is damaged, start from the beginning instead of failing")
	f.IntVar(&o.retained, "retained-checkpoints", 3, "completed checkpoints kept in the state dir (savepoints are always kept)")
	f.DurationVar(&o.retention, "retention-interval", 10*time.Second, "how often the embedded broker's log is trimmed of the records no recovery and no verification needs any more; 0 keeps every record")
	f.StringVar(&o.stateBackend, "state-backend", "heap", "where keyed state lives while the job runs: heap (in memory) or badger (on disk, in the state dir)")
	f.BoolVar(&o.incremental, "incremental", false, "with --state-backend badger: checkpoints store only what changed since the previous one (state.backend.incremental)")
	f.BoolVar(&o.savepointOnExit, "savepoint-on-exit", false, "when stopped (Ctrl-C, SIGTERM), take a savepoint before cancelling the job")
	f.Int64Var(&o.fromSavepoint, "from-savepoint", 0, "start from this savepoint id (see: faultline checkpoints list), also at other parallelisms")
	f.BoolVar(&o.allowNonRestore, "allow-non-restored-state", false, "with --from-savepoint: drop state of operators the job no longer has")
	f.StringVar(&o.onBadRecord, "on-bad-record", runtime.BadRecordFail, "what parsing does with a record it cannot parse: fail (the task fails and the job restarts), skip (drop and count it) or dead-letter (write it to --dead-letter-topic and count it)")
	f.StringVar(&o.deadLetterTopic, "dead-letter-topic", "dead-letter", "with --on-bad-record dead-letter: the topic unparseable records go to")
	f.DurationVar(&o.stateTTL, "state-ttl", 0, "how long the join keeps an order or a payment waiting for the other, in event time (the records' Kafka timestamps): an order and a payment further apart are not joined, and the verification expects exactly that; 0 keeps them for ever (default: the job spec's state_ttl, 1m for the default job)")
	o.kafka.addFlags(f)
	return cmd
}

// defaultStateDir is faultline's folder under the user's data directory.
func defaultStateDir() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "faultline"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory to put the state dir in; give --state-dir: %w", err)
	}
	return filepath.Join(home, ".local", "share", "faultline"), nil
}

// prepared is a run put together from the flags, before anything starts.
type prepared struct {
	job      *spec.Job
	mode     barrier.Mode
	strategy restart.BackoffStrategy
	failover runtime.FailoverStrategy
	faults   []runtime.Fault
	rate     float64
	client   kafka.Client
	topicMap map[string]string // operator → Kafka topic
	startup  kafka.StartupMode
	sinkG    kafka.Guarantee
}

// check turns the flags into a prepared run, or a usage error (exit 2).
func (o *runOptions) check() (*prepared, error) {
	p := &prepared{topicMap: map[string]string{}}
	var err error
	if o.jobFile == "" {
		p.job = spec.Default()
	} else if p.job, err = spec.Load(o.jobFile); err != nil {
		return nil, usageError{err}
	}
	if len(o.parallelism) > 0 {
		ps := map[string]int{}
		for _, kv := range o.parallelism {
			name, v, ok := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil {
				return nil, usagef("--parallelism %q: want operator=N, e.g. join=3", kv)
			}
			ps[name] = n
		}
		if err := p.job.SetParallelisms(ps); err != nil {
			return nil, usagef("--parallelism: %v", err)
		}
	}
	if o.setTTL {
		if o.stateTTL < 0 || (o.stateTTL > 0 && o.stateTTL < time.Millisecond) {
			return nil, usagef("--state-ttl %s: want 0 (keep for ever) or at least 1ms", o.stateTTL)
		}
		joins := 0
		for _, op := range p.job.Operators {
			if op.Type == spec.TypeJoin {
				op.StateTTL = o.stateTTL
				joins++
			}
		}
		if joins == 0 {
			return nil, usagef("--state-ttl: job %s has no join, so nothing waits in state", p.job.Name)
		}
	}
	switch o.mode {
	case "exactly-once":
		p.mode = barrier.ExactlyOnce
	case "at-least-once":
		p.mode = barrier.AtLeastOnce
	default:
		return nil, usagef("--mode %q: want exactly-once or at-least-once", o.mode)
	}
	switch {
	case o.setRate && (o.rate < 0 || math.IsNaN(o.rate) || math.IsInf(o.rate, 0)):
		return nil, usagef("--rate %v: want records per second, 0 or more (0: all at once with --records)", o.rate)
	case o.records < 0:
		return nil, usagef("--records %d: want 0 (unbounded) or more", o.records)
	case o.interval < 0:
		return nil, usagef("--checkpoint-interval %s: want 0 (off) or a positive duration", o.interval)
	case o.interval > 0 && o.interval < 10*time.Millisecond:
		return nil, usagef("--checkpoint-interval %s: the least is 10ms (as in Flink)", o.interval)
	case o.timeout < 10*time.Millisecond:
		return nil, usagef("--checkpoint-timeout %s: the least is 10ms", o.timeout)
	case o.minPause < 0:
		return nil, usagef("--min-pause %s: want 0 or more", o.minPause)
	case o.maxConcurrent < 1:
		return nil, usagef("--max-concurrent-checkpoints %d: want 1 or more", o.maxConcurrent)
	case o.tolerable < 0:
		return nil, usagef("--tolerable-failed-checkpoints %d: want 0 or more", o.tolerable)
	case o.restartAttempts < 0:
		return nil, usagef("--restart-attempts %d: want 0 or more", o.restartAttempts)
	case o.restartDelay < 0:
		return nil, usagef("--restart-delay %s: want 0 or more", o.restartDelay)
	case o.channelCapacity < 1 || o.channelCapacity > 4096:
		return nil, usagef("--channel-capacity %d: want 1 to 4096", o.channelCapacity)
	case o.batchSize < 1 || o.batchSize > 65536:
		return nil, usagef("--batch-size %d: want 1 to 65536", o.batchSize)
	case o.stateBackend != "heap" && o.stateBackend != "badger":
		return nil, usagef("--state-backend %q: want heap or badger", o.stateBackend)
	case o.incremental && o.stateBackend != "badger":
		return nil, usagef("--incremental needs --state-backend badger (as in Flink, where only RocksDB has incremental checkpoints)")
	case o.fromSavepoint < 0:
		return nil, usagef("--from-savepoint %d: want a savepoint id", o.fromSavepoint)
	case o.fromSavepoint > 0 && o.resume:
		return nil, usagef("--from-savepoint and --resume: give one of them")
	case o.fresh && o.resume:
		return nil, usagef("--fresh and --resume: --fresh deletes what --resume would go on from; give one of them")
	case o.fresh && o.fromSavepoint > 0:
		return nil, usagef("--fresh and --from-savepoint: --fresh deletes the savepoints too; give one of them")
	case o.retained < 1:
		return nil, usagef("--retained-checkpoints %d: want 1 or more", o.retained)
	case o.retention < 0:
		return nil, usagef("--retention-interval %s: want 0 (keep every record) or a positive duration", o.retention)
	case o.onBadRecord == runtime.BadRecordDeadLetter && o.deadLetterTopic == "":
		return nil, usagef("--dead-letter-topic: give a topic name for --on-bad-record dead-letter")
	case o.onBadRecord == runtime.BadRecordDeadLetter && !spec.IsTopicName(o.deadLetterTopic):
		return nil, usagef("--dead-letter-topic %q is not a Kafka topic name: %s", o.deadLetterTopic, spec.TopicNameRule)
	case o.kafka.listen < 0 || o.kafka.listen > 65535:
		return nil, usagef("--listen %d: want a port from 0 to 65535", o.kafka.listen)
	case o.kafka.txnTimeout <= 0:
		return nil, usagef("--sink-transaction-timeout %s: want a positive duration, e.g. 15m", o.kafka.txnTimeout)
	case o.interval > 0 && o.kafka.txnTimeout <= o.interval:
		return nil, usagef("--sink-transaction-timeout %s is not longer than --checkpoint-interval %s: a sink transaction stays open from one checkpoint to the commit after the next, so the broker would abort every one; make the timeout longer or the interval shorter", o.kafka.txnTimeout, o.interval)
	case o.kafka.brokers == "" && o.kafka.txnTimeout > kafka.DefaultTransactionTimeout:
		return nil, usagef("--sink-transaction-timeout %s: the embedded broker allows at most %s, as Kafka does by default (transaction.max.timeout.ms)", o.kafka.txnTimeout, kafka.DefaultTransactionTimeout)
	}
	ropts := o.restartOpts
	ropts.Attempts, ropts.Delay = o.restartAttempts, o.restartDelay
	if p.strategy, err = restart.Parse(o.restartStrategy, ropts); err != nil {
		return nil, usageError{err}
	}
	if p.failover, err = runtime.ParseFailoverStrategy(o.failoverStrategy); err != nil {
		return nil, usageError{err}
	}
	if _, err = runtime.ParseOnBadRecord(o.onBadRecord); err != nil {
		return nil, usageError{err}
	}
	for _, s := range o.inject {
		f, err := runtime.ParseFault(s)
		if err != nil {
			return nil, usageError{err}
		}
		if err := runtime.CheckFaultTask(f, p.job); err != nil {
			return nil, usageError{err}
		}
		if f.Kind == runtime.FaultBrokerDown && o.kafka.brokers != "" {
			return nil, usagef("--inject %q: broker-down takes down the embedded broker, and with --brokers there is none; to see the job lose its brokers, stop one of your cluster's", s)
		}
		p.faults = append(p.faults, f)
	}
	p.rate = o.rate
	if p.rate < 0 {
		p.rate = 0
		if o.records == 0 {
			p.rate = 400
		}
	}
	if p.startup, err = kafka.ParseStartupMode(o.kafka.startup); err != nil {
		return nil, usageError{err}
	}
	if p.sinkG, err = kafka.ParseGuarantee(o.kafka.sinkGuarantee); err != nil {
		return nil, usageError{err}
	}
	for _, op := range p.job.Operators {
		if op.Type == spec.TypeSource || op.Type == spec.TypeSink {
			p.topicMap[op.Name] = op.Topic
		}
	}
	for _, kv := range o.kafka.topics {
		name, topic, ok := strings.Cut(kv, "=")
		if !ok || topic == "" {
			return nil, usagef("--topic %q: want operator=topic, e.g. orders-source=shop.orders", kv)
		}
		if _, known := p.topicMap[name]; !known {
			return nil, usagef("--topic %q: %q is not a source or sink of job %s", kv, name, p.job.Name)
		}
		if !spec.IsTopicName(topic) {
			return nil, usagef("--topic %q: %q is not a Kafka topic name: %s", kv, topic, spec.TopicNameRule)
		}
		p.topicMap[name] = topic
	}
	password := o.kafka.saslPassword
	if password == "" {
		password = os.Getenv("FAULTLINE_SASL_PASSWORD")
	}
	p.client = kafka.Client{TLS: o.kafka.tls, TLSCA: o.kafka.tlsCA, SASLMechanism: o.kafka.saslMechanism,
		SASLUser: o.kafka.saslUser, SASLPassword: password}
	if o.kafka.brokers != "" {
		for _, b := range strings.Split(o.kafka.brokers, ",") {
			if b = strings.TrimSpace(b); b != "" {
				p.client.Brokers = append(p.client.Brokers, b)
			}
		}
	}
	if _, err := p.client.Config(); err != nil {
		return nil, usageError{err}
	}
	if o.kafka.group == "" {
		o.kafka.group = "faultline-" + p.job.Name
	}
	if o.kafka.txnPrefix == "" {
		o.kafka.txnPrefix = "faultline-" + p.job.Name
	}
	return p, nil
}

// logicalTopics maps the generator's topics (orders, payments) to the
// Kafka topics the job's sources read them from.
func (p *prepared) logicalTopics() map[string]string {
	out := map[string]string{}
	for _, op := range p.job.Operators {
		if op.Type == spec.TypeSource {
			out[op.Topic] = p.topicMap[op.Name]
		}
	}
	return out
}

func (o *runOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := o.check()
	if err != nil {
		return err
	}
	stateDir := o.stateDir
	if stateDir == "" {
		if stateDir, err = defaultStateDir(); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	// A full disk under Badger's mapped files kills the process (SIGBUS):
	// start only with room for them, and stop cleanly when it runs out.
	if err := diskroom.Check(stateDir, diskroom.FreshStore, diskroom.Free); err != nil {
		return exitError{code: 1, err: err}
	}
	if !o.headless && !isTerminal(stdout) {
		fmt.Fprintln(stderr, "faultline: stdout is not a terminal; running headless (JSON events on stdout)")
		o.headless = true
	}
	// The checkpoint store's lock is the state dir's: take it before
	// anything else in the dir (the embedded broker's log) is touched.
	open := openStore
	if o.fresh {
		open = openStoreFresh
	}
	store, err := open(checkpointDir(stateDir), o.retained)
	if err != nil {
		return exitError{code: 1, err: err}
	}
	defer store.Close()
	embeddedBroker := len(p.client.Brokers) == 0
	if o.fresh {
		if err := clearStateDir(ctx, store, stateDir, stderr); err != nil {
			return exitError{code: 1, err: err}
		}
	} else if o.headless && !o.resume && o.fromSavepoint == 0 {
		// The terminal UI goes on from the state dir by default; a
		// headless run is told to.
		held, err := earlierRuns(ctx, store, stateDir, embeddedBroker)
		if err != nil {
			return exitError{code: 1, err: err}
		}
		if len(held) > 0 {
			return refuseSecondCopy(stateDir, held)
		}
	}
	input, err := o.checkInput(stateDir, p.job.Name, embeddedBroker || o.kafka.generate)
	if err != nil {
		return err
	}
	if err := writeInputRecord(stateDir, input); err != nil {
		return exitError{code: 1, err: err}
	}
	// The badger state backend's databases: one per subtask and attempt,
	// left over only by a killed process, so emptied at start.
	workDir := filepath.Join(stateDir, "work")
	if err := os.RemoveAll(workDir); err != nil {
		return exitError{code: 1, err: fmt.Errorf("clear %s: %w", workDir, err)}
	}
	logPath := o.logFile
	if logPath == "" {
		logPath = filepath.Join(stateDir, "faultline.log")
	}
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		if o.logFile != "" {
			return usagef("--log-file %s: %v", o.logFile, errors.Unwrap(err))
		}
		return fmt.Errorf("log file: %w", err)
	}
	defer lf.Close()
	logger := log.New(lf, "", log.LstdFlags|log.Lmicroseconds)
	sarama.Logger = log.New(lf, "sarama ", log.LstdFlags|log.Lmicroseconds)
	// The verification ledger: what the oracle has accounted for of the
	// records the embedded broker deleted. A run that goes on from this
	// job's checkpoints goes on from it; any other starts a new one.
	expect := runtime.ExpectOf(p.job)
	ledgerPath := filepath.Join(stateDir, "verify", "ledger")
	continues := o.fromSavepoint != 0
	if !continues && (o.resume || !o.headless) {
		if c, err := store.Latest(ctx); err == nil && c != nil && c.Job == p.job.Name {
			continues = true
		}
	}
	ledger, err := openLedger(ledgerPath, expect, continues, stateDir)
	if err != nil {
		return err
	}
	ctx, stop := notifyStop(ctx, stderr)
	defer stop()
	ctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	// A state dir removed under the run takes its checkpoints, its log and
	// the embedded broker's data with it: nothing the run writes from then
	// on can be recovered, so it stops and says why.
	go watchStateDir(ctx, checkpointDir(stateDir), time.Second, func() {
		stopRun(fmt.Errorf("the state dir %s was removed while the job ran: its checkpoints and the embedded broker's log are gone", stateDir))
	})
	var short error
	go watchFor(ctx, 250*time.Millisecond, func() bool {
		short = diskroom.Check(stateDir, 0, diskroom.Free)
		return errors.Is(short, diskroom.ErrShort)
	}, func() {
		stopRun(fmt.Errorf("stopped the job: %w", short))
	})

	obs := runtime.NewObserver(clock.Real{}, 8192)
	enc := json.NewEncoder(stdout)
	printed := make(chan struct{})
	if o.headless {
		go func() {
			defer close(printed)
			for e := range obs.Events() {
				enc.Encode(e)
			}
		}()
	} else {
		// The terminal UI reads the events.
		close(printed)
	}
	closeEvents := sync.OnceFunc(func() {
		obs.Close()
		<-printed
	})
	defer closeEvents()

	// Kafka: the embedded broker unless --brokers names a cluster.
	generate := o.kafka.generate
	var brokerDown func(time.Duration) error
	var embedded *kafka.Embedded
	if len(p.client.Brokers) == 0 {
		sinkTopics := map[string]int32{}
		for _, op := range p.job.Operators {
			if op.Type == spec.TypeSink {
				sinkTopics[p.topicMap[op.Name]] = 1
			}
		}
		topics := map[string]int32{}
		for _, t := range p.logicalTopics() {
			topics[t] = runtime.GeneratorPartitions
		}
		for t, n := range sinkTopics {
			topics[t] = n
		}
		broker, err := kafka.StartEmbedded(o.kafka.listen, filepath.Join(stateDir, "kafka"), topics)
		if err != nil {
			return exitError{code: 1, err: err}
		}
		defer broker.Close()
		embedded = broker
		brokerDown = func(d time.Duration) error {
			broker.Down(d)
			time.AfterFunc(d, func() { obs.Emit("broker_up", map[string]any{"address": broker.Addr}) })
			return nil
		}
		p.client.Brokers = []string{broker.Addr}
		p.client.Embedded = true
		generate = true
		f := map[string]any{"address": broker.Addr, "embedded": true, "log_dir": filepath.Join(stateDir, "kafka")}
		if broker.Note != "" {
			f["note"] = broker.Note
			fmt.Fprintln(stderr, "faultline:", broker.Note)
		}
		obs.Emit("broker_started", f)
	}
	cl, err := p.client.NewClientContext(ctx)
	if err != nil {
		return exitError{code: 1, err: err}
	}
	defer cl.Close()
	topics := map[string]int32{}
	for _, op := range p.job.Operators {
		switch op.Type {
		case spec.TypeSource:
			topics[p.topicMap[op.Name]] = runtime.GeneratorPartitions
		case spec.TypeSink:
			topics[p.topicMap[op.Name]] = 1
		}
	}
	if o.onBadRecord == runtime.BadRecordDeadLetter {
		topics[o.deadLetterTopic] = 1
	}
	if !generate {
		// Nothing writes into a source topic faultline would create: a
		// misspelt --topic would read nothing and look like success.
		readBy := map[string]string{} // source topic → its operator
		for _, op := range p.job.Operators {
			if op.Type == spec.TypeSource {
				readBy[p.topicMap[op.Name]] = op.Name
			}
		}
		missing, err := kafka.MissingTopics(cl, slices.Collect(maps.Keys(readBy)))
		if err != nil {
			return exitError{code: 1, err: err}
		}
		if len(missing) > 0 {
			var names []string
			for _, m := range missing {
				names = append(names, fmt.Sprintf("%s (read by %s)", m, readBy[m]))
			}
			topic, it := "topic", "it"
			if len(missing) > 1 {
				topic, it = "topics", "them"
			}
			return exitError{code: 1, err: fmt.Errorf("no %s %s at %s: create %s, name another with --topic, or add --generate to have faultline create %s and write the generator's records into %s",
				topic, strings.Join(names, ", "), strings.Join(p.client.Brokers, ","), it, it, it)}
		}
	}
	if err := kafka.EnsureTopics(cl, topics); err != nil {
		return exitError{code: 1, err: err}
	}

	gen := runtime.NewGenerator(o.seed, o.records, runtime.GeneratorPartitions)
	var writerDone chan error
	var uiWriter *kafka.Writer
	if generate {
		w := kafka.NewWriter(p.client, cl, gen).WithTopics(p.logicalTopics())
		if o.records > 0 && p.rate == 0 {
			start := time.Now()
			var shown, total int64
			w.WithProgress(time.Second, func(written, of int64) {
				shown, total = written, of
				if o.headless {
					obs.Emit("input_progress", map[string]any{"records": written, "of": of})
				} else {
					// Before the UI takes the screen: one line, rewritten.
					fmt.Fprintf(stdout, "\rfaultline: writing the input into Kafka: %s of %s records (%d%%)", tui.Thousands(written), tui.Thousands(of), written*100/max(of, 1))
				}
			})
			n, err := w.Fill(ctx)
			if shown > 0 && !o.headless {
				fmt.Fprintln(stdout)
			}
			if err != nil {
				if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
					return exitError{code: 1, err: fmt.Errorf("%w (while writing the input into Kafka, with about %s of its %s records written)", cause, tui.Thousands(n), tui.Thousands(max(total, n)))}
				}
				if ctx.Err() != nil {
					return exitError{code: 1, err: fmt.Errorf("stopped while writing the input into Kafka, with about %s of its %s records written (the next run writes the rest)", tui.Thousands(n), tui.Thousands(max(total, n)))}
				}
				return exitError{code: 1, err: fmt.Errorf("fill the input topics: %w", err)}
			}
			obs.Emit("input_written", map[string]any{"records": n, "duration_ms": time.Since(start).Milliseconds()})
		} else {
			writerDone = make(chan error, 1)
			wctx, wcancel := context.WithCancel(ctx)
			defer func() {
				wcancel()
				<-writerDone
			}()
			uiWriter = w
			go func() {
				err := w.Run(wctx, p.rate)
				if err != nil {
					// Without its input the job cannot go on: stop the run.
					err = fmt.Errorf("the input writer failed: %w", err)
					obs.Emit("input_writer_failed", map[string]any{"error": err.Error()})
					stopRun(err)
				}
				writerDone <- err
			}()
		}
	}

	env := &runtime.Env{Sources: map[string]runtime.Source{}, Outputs: map[string]runtime.TxnOutput{}, TxnPrefix: o.kafka.txnPrefix}
	sources := map[string]*kafka.Source{}
	outputStart := map[string]map[int32]int64{}
	outputs := map[string]*kafka.Output{}
	bounded := o.records > 0 || o.kafka.bounded
	for _, op := range p.job.Operators {
		topic := p.topicMap[op.Name]
		switch op.Type {
		case spec.TypeSource:
			if sources[topic] != nil {
				continue
			}
			var ends map[int32]int64
			switch {
			case generate && o.records > 0:
				// The generator's input ends where it says, even while
				// the writer is still filling the topic at --rate.
				ends = map[int32]int64{}
				for p := 0; p < runtime.GeneratorPartitions; p++ {
					ends[int32(p)] = gen.EndOffset(op.Topic, p)
				}
			case bounded:
				if ends, err = kafka.EndOffsets(cl, topic); err != nil {
					return exitError{code: 1, err: err}
				}
			}
			s, err := kafka.NewSource(p.client, cl, topic, p.startup, o.kafka.group, ends)
			if err != nil {
				return exitError{code: 1, err: err}
			}
			sources[topic] = s
		case spec.TypeSink:
			if outputs[topic] != nil {
				continue
			}
			if outputStart[topic], err = kafka.EndOffsets(cl, topic); err != nil {
				return exitError{code: 1, err: err}
			}
			out, err := kafka.NewOutput(p.client, cl, topic, p.sinkG)
			if err != nil {
				return exitError{code: 1, err: err}
			}
			out.WithTransactionTimeout(o.kafka.txnTimeout)
			defer out.Close()
			outputs[topic] = out
		}
	}
	if o.onBadRecord == runtime.BadRecordDeadLetter {
		dlq := kafka.NewDeadLetters(p.client, o.deadLetterTopic)
		defer dlq.Close()
		env.DeadLetters = dlq
	}
	// The poison fault writes into the Kafka topic behind a generator
	// topic; a bounded source reads one record more there.
	env.Poison = func(topic string, partition int32) (int64, error) {
		actual := p.logicalTopics()[topic]
		src := sources[actual]
		if src == nil {
			return 0, fmt.Errorf("the job reads no %s topic", topic)
		}
		src.ExtendEnd(partition, 1)
		off, err := kafka.WritePoison(p.client, actual, partition)
		if err != nil {
			src.ExtendEnd(partition, -1)
		}
		return off, err
	}
	// The job names topics as its spec does; the env serves them from Kafka.
	for _, op := range p.job.Operators {
		switch op.Type {
		case spec.TypeSource:
			env.Sources[op.Topic] = sources[p.topicMap[op.Name]]
		case spec.TypeSink:
			env.Outputs[op.Topic] = outputs[p.topicMap[op.Name]]
		}
	}

	job, err := runtime.New(runtime.Config{
		Job:  p.job,
		Env:  env,
		Mode: p.mode,
		Checkpoint: checkpoint.Config{
			Interval: o.interval, MinPause: o.minPause, Timeout: o.timeout,
			MaxConcurrent: o.maxConcurrent, TolerableFailures: o.tolerable,
		},
		Store:           store,
		StateBackend:    o.stateBackend,
		Incremental:     o.incremental,
		WorkDir:         workDir,
		AllowFreshStart: o.allowFreshStart,
		Restart:         p.strategy,
		Failover:        p.failover,
		OnBadRecord:     o.onBadRecord,
		BrokerDown:      brokerDown,
		Faults:          p.faults,
		Clock:           clock.Real{},
		Observer:        obs,
		ChannelCapacity: o.channelCapacity,
		BatchSize:       o.batchSize,
		Logf:            logger.Printf,
		Crash:           o.crashFunc(stdout, stderr),
	})
	if err != nil {
		return usageError{err}
	}
	obs.Emit("run_started", map[string]any{
		"job": p.job.Name, "mode": o.mode, "state_dir": stateDir, "log_file": logPath,
		"records": o.records, "seed": o.seed, "checkpoint_interval_ms": o.interval.Milliseconds(),
		"brokers": strings.Join(p.client.Brokers, ","), "sink_guarantee": string(p.sinkG),
		"checkpoint_dir": store.Dir(), "state_backend": o.stateBackend, "incremental": o.incremental,
	})
	runOpts := runtime.RunOptions{Resume: o.resume, FromSavepoint: o.fromSavepoint,
		AllowNonRestoredState: o.allowNonRestore, SavepointOnExit: o.savepointOnExit}

	if !o.headless && o.fromSavepoint == 0 {
		// The UI goes on from where the state dir left off, as after a
		// crash, unless told where to start.
		runOpts.Resume = true
	}
	// The UI's live verifier goes on from the ledger, as the final
	// verification does.
	var live *kafka.LiveVerifier
	if !o.headless && len(outputStart) == 1 {
		for topic, start := range outputStart {
			lc := kafka.LiveConfig{Client: p.client, Inputs: p.logicalTopics(), Output: topic, OutputFrom: start, Expect: p.job.Verify, StateTTL: expect.StateTTL}
			if continues {
				lc.OutputFrom = nil
			}
			live = kafka.NewLiveVerifier(lc)
			live.Seed(ledger)
		}
	}
	stopRetention := func() {}
	if embedded != nil && o.retention > 0 && len(outputStart) == 1 {
		stopRetention = o.startRetention(ctx, retentionSetup{client: p.client, inputs: p.logicalTopics(), outputStart: outputStart,
			sources: sources, continues: continues, ledger: ledger, path: ledgerPath, store: store, job: job,
			live: live, logf: logger.Printf})
	}
	defer stopRetention()

	var res *runtime.Result
	var runErr error
	if o.headless {
		res, runErr = job.Run(ctx, runOpts)
	} else {
		info := tui.JobInfo{Name: p.job.Name, Title: jobTitle(p.job), Interval: o.interval,
			Broker: strings.Join(p.client.Brokers, ","), Embedded: embedded != nil,
			StateBackend: o.stateBackend, Incremental: o.incremental, StateDir: stateDir}
		info.FreezeLimit, info.FreezeLimitWhy = o.freezeLimit(p)
		info.StateTTL = expect.StateTTL
		ctrl := newUIController(job, p.job, info, uiWriter, live, embedded)
		res, runErr = o.runUI(ctx, job, ctrl, live, obs, p, runOpts, stdout, logger)
	}
	// The ledger is the oracle's again once retention has stopped.
	stopRetention()
	if runErr != nil {
		if errors.Is(runErr, runtime.ErrNoSavepoint) {
			return usageError{runErr}
		}
		return exitError{code: 1, err: runErr}
	}

	// A sink without delivery guarantee never waited for its records: they
	// are all acknowledged before the oracle reads them.
	for topic, out := range outputs {
		if err := out.Flush(); err != nil {
			logger.Printf("output %s: %v", topic, err)
		}
	}

	// The oracle: what a read_committed consumer of the output sees, against
	// the inputs read straight from Kafka. Over a large input it takes
	// seconds: say so before.
	obs.Emit("verify_started", map[string]any{"job_status": string(res.Status)})
	var bounds checkpoint.Offsets
	if res.Status != runtime.JobFinished || !bounded {
		bounds = checkpoint.Offsets{}
		if res.Latest != nil {
			for topic, offs := range res.Latest.SourceOffsets() {
				for logical, actual := range p.logicalTopics() {
					if actual == topic {
						bounds[logical] = offs
					}
				}
			}
		}
	} else {
		bounds = checkpoint.Offsets{}
		for logical, actual := range p.logicalTopics() {
			bounds[logical] = sources[actual].EndOffsets()
		}
	}
	from := map[string]map[int32]int64{}
	for topic, s := range sources {
		from[topic] = s.StartOffsets()
	}
	if res.Resumed != 0 {
		// A resumed run continues the runs before it: check the output
		// from the beginning of the topic, as the input is.
		for topic := range outputStart {
			outputStart[topic] = nil
		}
	}
	// What the ledger accounted for is read from where it stopped: the
	// broker may have deleted what lies before.
	for topic := range sources {
		for part, off := range ledger.Positions[topic] {
			if from[topic] == nil {
				from[topic] = map[int32]int64{}
			}
			from[topic][part] = off
		}
	}
	for topic, start := range outputStart {
		if pos := ledger.Positions[topic]; len(pos) > 0 {
			m := maps.Clone(start)
			if m == nil {
				m = map[int32]int64{}
			}
			maps.Copy(m, pos)
			outputStart[topic] = m
		}
	}
	var committed []runtime.OutputRecord
	for topic, start := range outputStart {
		recs, err := kafka.ReadCommitted(context.Background(), p.client, topic, start)
		if err != nil {
			return exitError{code: 1, err: fmt.Errorf("verify: read %s: %w", topic, err)}
		}
		committed = append(committed, recs...)
	}
	guarantee := o.mode
	if p.sinkG != kafka.ExactlyOnce {
		guarantee = "at-least-once"
	}
	v, err := runtime.VerifyOn(ledger, kafka.Inputs{C: p.client, Topics: p.logicalTopics(), From: from}, guarantee, bounds, committed)
	if err != nil {
		return exitError{code: 1, err: fmt.Errorf("verify: %w", err)}
	}
	closeEvents()
	report := runtime.NewReport(p.job.Name, o.mode, res, v, obs.Dropped())
	if o.headless {
		if err := enc.Encode(report); err != nil {
			return exitError{code: 1, err: err}
		}
	} else {
		b, _ := json.Marshal(report)
		logger.Printf("%s", b)
		printSummary(stdout, report, stateDir)
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return exitError{code: 1, err: cause}
	}
	switch {
	case res.Status == runtime.JobFailed:
		return exitError{code: 3, err: errors.New("the job FAILED: " + res.GaveUp)}
	case !v.OK:
		return exitError{code: 4, err: fmt.Errorf("verification failed: %d duplicates, %d lost, %d unexpected", v.Duplicates, v.Lost, v.Unexpected)}
	}
	return nil
}

// openLedger opens the verification ledger at path: the saved one when the
// run goes on from the job's checkpoints (a new one when none was saved),
// else a new one, removing what an earlier run left.
func openLedger(path string, expect runtime.Expect, continues bool, stateDir string) (*verify.Ledger, error) {
	if !continues {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, exitError{code: 1, err: fmt.Errorf("remove the old verification ledger: %w", err)}
		}
		return verify.New(expect.Kind, expect.StateTTL), nil
	}
	l, err := verify.Load(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return verify.New(expect.Kind, expect.StateTTL), nil
	case err != nil:
		return nil, exitError{code: 1, err: fmt.Errorf("%w: it holds what the verification counted of the records the embedded broker has deleted, so the output can no longer be checked from the start; start afresh in another --state-dir", err)}
	case l.Kind() != expect.Kind || l.TTL() != expect.StateTTL:
		return nil, usagef("the runs before this one on %s expected %s with a state TTL of %s, this one would expect %s with %s: give the job and --state-ttl they had, or start afresh in another --state-dir",
			stateDir, l.Kind(), l.TTL(), expect.Kind, expect.StateTTL)
	}
	return l, nil
}

// retentionSetup is what the broker's retention needs from a run.
type retentionSetup struct {
	client      kafka.Client
	inputs      map[string]string
	outputStart map[string]map[int32]int64
	sources     map[string]*kafka.Source
	continues   bool
	ledger      *verify.Ledger
	path        string
	store       *checkpoint.BadgerStore
	job         *runtime.Job
	live        *kafka.LiveVerifier // the UI's, or nil
	logf        func(string, ...any)
}

// startRetention trims the embedded broker's log every --retention-interval
// once the job's output is committed up to a checkpoint of this run, and
// returns what stops it (and waits for it).
func (o *runOptions) startRetention(ctx context.Context, s retentionSetup) func() {
	var output string
	var outStart map[int32]int64
	for t, start := range s.outputStart {
		output, outStart = t, maps.Clone(start)
	}
	ret := kafka.NewRetention(kafka.RetentionConfig{
		Client: s.client, Inputs: s.inputs, Output: output, Ledger: s.ledger, Path: s.path,
		Checkpoints: func(ctx context.Context) ([]*checkpoint.Completed, error) {
			if _, _, ok := s.job.CommittedCheckpoint(); !ok {
				return nil, nil // this run's sources have not started, or nothing of it is committed
			}
			return s.store.All(ctx)
		},
		Start: func(topic string) map[int32]int64 {
			switch {
			case s.continues:
				return nil // the ledger goes on from the start of the log
			case topic == output:
				return outStart
			case s.sources[topic] != nil:
				return s.sources[topic].StartOffsets()
			}
			return nil
		},
		Readers: func() (checkpoint.Offsets, bool) {
			if s.live == nil {
				return nil, true
			}
			return s.live.Positions()
		},
		Every: o.retention,
		Logf:  s.logf,
	})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ret.Run(rctx)
	}()
	return sync.OnceFunc(func() {
		cancel()
		<-done
	})
}

// freezeLimit is how long the UI's freeze can last before the job fails
// over, and what expires then: a pending checkpoint (when no failed
// checkpoint is tolerated) or the sink's open Kafka transaction, whichever
// comes first; 0 when neither does.
func (o *runOptions) freezeLimit(p *prepared) (time.Duration, string) {
	var limit time.Duration
	why := ""
	if o.interval > 0 && o.tolerable == 0 {
		limit, why = o.timeout, "the pending checkpoint expires (--checkpoint-timeout)"
	}
	if p.sinkG == kafka.ExactlyOnce && (limit == 0 || o.kafka.txnTimeout < limit) {
		limit, why = o.kafka.txnTimeout, "the sink's open transaction expires (--sink-transaction-timeout)"
	}
	return limit, why
}

// watchStateDir calls gone, once, when dir stops being a directory,
// checking every interval until ctx ends.
func watchStateDir(ctx context.Context, dir string, interval time.Duration, gone func()) {
	watchFor(ctx, interval, func() bool { return dirGone(dir) }, gone)
}

// dirGone reports whether path no longer exists or is no directory (an
// error that says neither, such as a denied look, is not taken for it).
func dirGone(path string) bool {
	fi, err := os.Stat(path)
	return errors.Is(err, os.ErrNotExist) || err == nil && !fi.IsDir()
}

// notifyStop returns a context that a stop signal (Ctrl-C, SIGTERM, SIGHUP)
// ends: the run then stops, settles its outputs and verifies them. A second
// stop signal quits at once, without the verification, leaving the state
// dir as a crash would (the next run goes on from its last completed
// checkpoint). Two copies of one Ctrl-C, the terminal's and the one the
// supervisor passes on, arrive within supervise.Again and count once.
func notifyStop(parent context.Context, stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stopSignals()...)
	done := make(chan struct{})
	go func() {
		var first time.Time
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				switch {
				case first.IsZero():
					first = time.Now()
					cancel()
				case time.Since(first) >= supervise.Again:
					fmt.Fprintf(stderr, "faultline: %s again: quitting now, without checking the output; the state dir is as a crash leaves it, and the next run goes on from its last completed checkpoint\n", sig)
					os.Exit(1)
				}
			}
		}
	}()
	return ctx, sync.OnceFunc(func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	})
}

// openStore opens the checkpoint store in dir, which holds the state dir's
// lock. A faultline whose supervisor was just killed (a SIGKILL of the
// whole program) may still hold it for a moment while the kernel ends it:
// openStore waits for that, and only for that, up to a few seconds.
func openStore(dir string, retained int) (*checkpoint.BadgerStore, error) {
	return waitForDying(dir, func() (*checkpoint.BadgerStore, error) { return checkpoint.OpenBadgerStore(dir, retained) })
}

// waitForDying calls open until it does not fail with ErrLocked by a
// holder that is dying (see openStore), for up to 5 s.
func waitForDying(dir string, open func() (*checkpoint.BadgerStore, error)) (*checkpoint.BadgerStore, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := open()
		if err == nil || !errors.Is(err, checkpoint.ErrLocked) || time.Now().After(deadline) || !supervise.Dying(lockHolder(dir)) {
			return s, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockHolder is the pid that Badger wrote into dir's LOCK file (0: none).
func lockHolder(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "LOCK"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
