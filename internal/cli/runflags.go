package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/barrier"
	"github.com/faultline-dev/faultline/runtime/fault"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
	"github.com/faultline-dev/faultline/runtime/kafka/source"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/view"
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
	// unaligned and alignedTimeout: --unaligned and
	// --aligned-checkpoint-timeout.
	unaligned      bool
	alignedTimeout time.Duration

	interval      time.Duration
	timeout       time.Duration
	minPause      time.Duration
	maxConcurrent int
	tolerable     int

	parallelism        []string
	defaultParallelism int
	stateDir           string
	logFile            string
	inject             []string

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
	// checkpointStorage is where completed checkpoints live
	// (state.checkpoint-storage): filesystem (the state dir) or
	// jobmanager (the process's memory, gone with it).
	checkpointStorage string
	incremental       bool
	savepointOnExit   bool
	// config is the run's settings by Flink's keys (configOf).
	config          map[string]string
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

	// configFile, defines and printConfig are --config, -D and
	// --print-config (config.go).
	configFile  string
	defines     []string
	printConfig bool

	// metricsAddr and pprof: --metrics-addr and --pprof (runmetrics.go).
	metricsAddr string
	pprof       bool
	// restAddr: --rest-addr (runrest.go); controlTopic: --control-topic
	// (runcontrol.go); eventsFile: --events-file (record.go); logLevel,
	// logFormat: --log-level, --log-format (runlog.go).
	restAddr, controlTopic, eventsFile, logLevel, logFormat string
	noMouse                                   bool // --no-mouse (ui_run.go)

	// front, when set, stands in front of the running job in place of the
	// terminal UI and the headless printer (a guided tour): it gets the
	// UI's controller and the job's events, and the job stops when it
	// returns. It returns errFrontDone when it ended the run itself (a
	// tour's steps done), not a person quitting: the output is then
	// checked without a stop's time limit.
	front func(ctx context.Context, ctrl *uiController, events <-chan view.Stamped) error
}

// errFrontDone is what a front returns when it ended the run itself.
var errFrontDone = errors.New("the tour ended its run")

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
	f.StringVar(&k.startup, "startup", "earliest", "where sources start without a checkpoint: earliest, latest or committed (the group's offsets) ("+source.KeyStartup+")")
	f.StringVar(&k.sinkGuarantee, "sink-guarantee", "exactly-once", "the sink's delivery guarantee: exactly-once (Kafka transactions), at-least-once or none ("+sink.KeyGuarantee+")")
	f.StringVar(&k.txnPrefix, "txn-prefix", "", "prefix of the sink's transactional ids (default faultline-<job>)")
	f.DurationVar(&k.txnTimeout, "sink-transaction-timeout", sink.DefaultTransactionTimeout, "how long the broker lets an exactly-once sink transaction stay open before aborting it (the producer's transaction.timeout.ms); longer than --checkpoint-interval, at most the broker's transaction.max.timeout.ms (15m on the embedded broker)")
	k.addClientFlags(f)
}

// addClientFlags adds the flags of how to reach --brokers, TLS and SASL:
// run's, and verify's, which reads the same clusters.
func (k *kafkaOptions) addClientFlags(f *pflag.FlagSet) {
	f.BoolVar(&k.tls, "tls", false, "connect to --brokers with TLS (security.protocol; SSL, or SASL_SSL with --sasl-mechanism)")
	f.StringVar(&k.tlsCA, "tls-ca", "", "PEM file of the CAs to trust for --tls (ssl.ca.location; default: the system's)")
	f.StringVar(&k.saslMechanism, "sasl-mechanism", "", "SASL: plain, scram-sha-256 or scram-sha-512 (sasl.mechanism)")
	f.StringVar(&k.saslUser, "sasl-user", "", "SASL user (sasl.username)")
	f.StringVar(&k.saslPassword, "sasl-password", "", "SASL password (default: $FAULTLINE_SASL_PASSWORD)")
}

func newRunCmd() *cobra.Command {
	cmd, _ := newRunCmdOptions()
	return cmd
}

// newRunCmdOptions is the run command and the options its flags fill in
// (a tour runs its job with run's flags).
func newRunCmdOptions() (*cobra.Command, *runOptions) {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a job (the default orders ⋈ payments job unless --job names another)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			from, err := applyConfig(cmd.Flags(), o.configFile, o.defines, os.LookupEnv)
			if err != nil {
				return err
			}
			if o.printConfig {
				printConfig(cmd.OutOrStdout(), cmd.Flags(), from)
				return nil
			}
			o.config = configOf(cmd.Flags())
			o.setTTL = cmd.Flags().Changed("state-ttl")
			o.setRate = cmd.Flags().Changed("rate")
			return namedAsGiven(o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()), from)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.headless, "headless", false, "no terminal UI: print JSON events and a final JSON report (also when stdout is not a terminal)")
	f.StringVar(&o.jobFile, "job", "", "job spec file (default: the built-in orders job, fixtures/jobs/orders.yaml)")
	f.Int64Var(&o.records, "records", 0, "bounded input of this many records (orders plus payments); 0 runs until stopped")
	f.Float64Var(&o.rate, "rate", -1, "input records/s the generator writes (default: all at once with --records, 400 otherwise)")
	f.Lookup("rate").DefValue = "0" // no "(default -1)": the usage says it
	f.Int64Var(&o.seed, "seed", 1, "seed of the input generator")
	f.StringVar(&o.mode, "mode", "exactly-once", "checkpointing mode: exactly-once (aligned barriers), unaligned (exactly-once with unaligned barriers, as --unaligned) or at-least-once")
	f.BoolVar(&o.unaligned, "unaligned", false, "unaligned exactly-once checkpoints: barriers overtake the queued records, which are stored with the snapshot (savepoints stay aligned)")
	f.DurationVar(&o.alignedTimeout, "aligned-checkpoint-timeout", 0, "start checkpoints aligned and switch one to unaligned once it is older than this; 0 never switches")
	f.DurationVar(&o.interval, "checkpoint-interval", 2*time.Second, "time between periodic checkpoints; 0 turns checkpointing off ("+checkpoint.KeyInterval+")")
	f.DurationVar(&o.timeout, "checkpoint-timeout", checkpoint.DefaultTimeout, "a checkpoint not complete after this long expires ("+checkpoint.KeyTimeout+")")
	f.DurationVar(&o.minPause, "min-pause", 0, "least time from the end of one checkpoint to the start of the next ("+checkpoint.KeyMinPause+")")
	f.IntVar(&o.maxConcurrent, "max-concurrent-checkpoints", checkpoint.DefaultMaxConcurrent, "most checkpoints in progress at once ("+checkpoint.KeyMaxConcurrent+")")
	f.IntVar(&o.tolerable, "tolerable-failed-checkpoints", 0, "consecutive failed checkpoints tolerated before the job fails over ("+checkpoint.KeyTolerableFailures+")")
	f.StringSliceVar(&o.parallelism, "parallelism", nil, "operator parallelism overrides, e.g. join=3,revenue=1")
	f.IntVar(&o.defaultParallelism, "default-parallelism", 0, "parallelism of the operators whose job spec gives none and --parallelism does not name (parallelism.default; 0: 1)")
	f.StringArrayVarP(&o.defines, "define", "D", nil, "a setting by its Flink key, e.g. -D execution.checkpointing.interval=500ms (repeatable; see --print-config)")
	f.StringVar(&o.configFile, "config", "", "a Flink 2.x config.yaml of settings by key, nested or flat (flags, -D and FAULTLINE_<FLAG> variables override it)")
	o.addServingFlags(f)
	f.BoolVar(&o.printConfig, "print-config", false, "print the settings as Flink keys, with where each comes from, and exit")
	f.StringVar(&o.stateDir, "state-dir", "", "the folder where everything a run keeps lives (default: faultline under the user's data directory)")
	f.StringVar(&o.logFile, "log-file", "", "diagnostic log (default: faultline.log in the state dir)")
	f.StringArrayVar(&o.inject, "inject", nil, "inject a fault, e.g. 'after=3s,task=join/1,fault=panic' or 'after-records=20000,task=join/1,fault=error' (repeatable)")
	ro := restart.DefaultOptions()
	o.restartOpts = ro
	f.StringVar(&o.restartStrategy, "restart-strategy", "fixed-delay", "what to do after a failure: fixed-delay, failure-rate, exponential-delay, none, or throwing (grants a restart and throws when it happens: Flink's ThrowingRestartStrategy) (restart-strategy.type)")
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
	f.IntVar(&o.restartOpts.Exponential.AttemptsBeforeReset, "backoff-attempts-before-reset", ro.Exponential.AttemptsBeforeReset, "exponential-delay: attempts allowed without a reset (restart-strategy.exponential-delay.attempts-before-reset-backoff; default: no limit)")
	f.Lookup("backoff-attempts-before-reset").DefValue = "0" // no "(default 2147483647)": the usage says it
	f.IntVar(&o.channelCapacity, "channel-capacity", 4, "batches each channel holds before its sender blocks (back-pressure)")
	f.IntVar(&o.batchSize, "batch-size", 256, "most elements in one batch on a channel")
	f.BoolVar(&o.resume, "resume", false, "start from the newest valid checkpoint of this job in the state dir (as after a crash)")
	f.BoolVar(&o.fresh, "fresh", false, "delete everything earlier runs left in the state dir (checkpoints, savepoints, the embedded broker's log, the verification ledger) and start from nothing")
	f.BoolVar(&o.allowFreshStart, "allow-fresh-start", false, "when every checkpoint of the job is damaged, start from the beginning, skipping what the output already holds, instead of failing")
	f.IntVar(&o.retained, "retained-checkpoints", 3, "completed checkpoints kept in the state dir (savepoints are always kept)")
	f.DurationVar(&o.retention, "retention-interval", 10*time.Second, "how often the embedded broker's log is trimmed of the records no recovery and no verification needs any more; 0 keeps every record")
	f.StringVar(&o.stateBackend, "state-backend", "heap", "where keyed state lives while the job runs: heap (in memory) or badger (on disk, in the state dir) ("+runtime.KeyStateBackend+")")
	f.StringVar(&o.checkpointStorage, "checkpoint-storage", "filesystem", "where completed checkpoints live (state.checkpoint-storage): filesystem (the state dir: they survive a crash) or jobmanager (the process's memory: a crash loses them, and the next run starts over)")
	f.BoolVar(&o.incremental, "incremental", false, "with --state-backend badger: checkpoints store only what changed since the previous one (state.backend.incremental)")
	f.BoolVar(&o.savepointOnExit, "savepoint-on-exit", false, "when stopped (Ctrl-C, SIGTERM), take a savepoint before cancelling the job")
	f.Int64Var(&o.fromSavepoint, "from-savepoint", 0, "start from this savepoint id (see: faultline checkpoints list), also at other parallelisms")
	f.BoolVar(&o.allowNonRestore, "allow-non-restored-state", false, "with --from-savepoint: drop state of operators the job no longer has")
	f.StringVar(&o.onBadRecord, "on-bad-record", runtime.BadRecordFail, "what parsing does with a record it cannot parse: fail (the task fails and the job restarts), skip (drop and count it) or dead-letter (write it to --dead-letter-topic and count it) ("+runtime.KeyOnBadRecord+")")
	f.StringVar(&o.deadLetterTopic, "dead-letter-topic", "dead-letter", "with --on-bad-record dead-letter: the topic unparseable records go to")
	f.DurationVar(&o.stateTTL, "state-ttl", 0, "how long the join keeps an order or a payment waiting for the other, in event time (the records' Kafka timestamps): an order and a payment further apart are not joined, and the verification expects exactly that; 0 keeps them for ever (default: the job spec's state_ttl, 1m for the default job)")
	o.kafka.addFlags(f)
	return cmd, o
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
	failover restart.FailoverStrategy
	faults   []runtime.Fault
	rate     float64
	client   kafka.Client
	topicMap map[string]string // operator → Kafka topic
	startup  source.StartupMode
	sinkG    sink.Guarantee
}

// check turns the flags into a prepared run, or a usage error (exit 2).
// Its checks run in this order, and the first that fails is the error.
func (o *runOptions) check() (*prepared, error) {
	p := &prepared{topicMap: map[string]string{}}
	if err := o.checkJob(p); err != nil {
		return nil, err
	}
	if err := o.checkMode(p); err != nil {
		return nil, err
	}
	for _, check := range []func() error{
		o.checkInputFlags, o.checkCheckpointFlags, o.checkRestartFlags, o.checkChannelFlags,
		o.checkStateBackendFlags, o.checkStateDirFlags, o.checkDeadLetterFlags, o.checkBrokerFlags, o.checkMetricsFlags, o.checkRESTFlag, o.checkLogFlags, checkTheme,
	} {
		if err := check(); err != nil {
			return nil, err
		}
	}
	if err := o.checkRestartStrategy(p); err != nil {
		return nil, err
	}
	if _, err := runtime.ParseOnBadRecord(o.onBadRecord); err != nil {
		return nil, asFlagError(err)
	}
	if err := o.checkInject(p); err != nil {
		return nil, err
	}
	p.rate = o.rate
	if p.rate < 0 {
		p.rate = 0
		if o.records == 0 {
			p.rate = 400
		}
	}
	if err := o.checkKafkaFlags(p); err != nil {
		return nil, err
	}
	if err := o.checkClientFlags(p); err != nil {
		return nil, err
	}
	if o.kafka.group == "" {
		o.kafka.group = "faultline-" + p.job.Name
	}
	if o.kafka.txnPrefix == "" {
		o.kafka.txnPrefix = "faultline-" + p.job.Name
	}
	return p, nil
}

// checkJob loads the job into p (--job, or the built-in one) and applies
// --parallelism and --state-ttl to it.
func (o *runOptions) checkJob(p *prepared) error {
	var err error
	if o.jobFile == "" {
		p.job = orders.Default()
	} else if p.job, err = spec.Load(o.jobFile, orders.Catalogue()); err != nil {
		return usageError{err}
	}
	if err := o.setParallelisms(p.job); err != nil {
		return err
	}
	if o.setTTL {
		if o.stateTTL < 0 || (o.stateTTL > 0 && o.stateTTL < time.Millisecond) {
			return usagef("--state-ttl %s: want 0 (keep for ever) or at least 1ms", o.stateTTL)
		}
		joins := 0
		for _, op := range p.job.Operators {
			if op.Type == orders.TypeJoin {
				op.StateTTL = o.stateTTL
				joins++
			}
		}
		if joins == 0 {
			return usagef("--state-ttl: job %s has no join, so nothing waits in state", p.job.Name)
		}
	}
	return nil
}

// checkMode reads the checkpointing mode (--mode) into p and checks that
// --unaligned and --aligned-checkpoint-timeout go with it.
func (o *runOptions) checkMode(p *prepared) error {
	switch o.mode {
	case "exactly-once", "aligned":
		p.mode, o.mode = barrier.ExactlyOnce, "exactly-once"
	case "unaligned", "exactly-once-unaligned", "exactly-once unaligned":
		// The UI calls unaligned a mode (m cycles through it): the same
		// as --unaligned.
		p.mode, o.unaligned, o.mode = barrier.ExactlyOnce, true, "exactly-once"
	case "at-least-once":
		p.mode = barrier.AtLeastOnce
	default:
		return usagef("--mode %q: want exactly-once, unaligned (exactly-once with --unaligned) or at-least-once", o.mode)
	}
	switch {
	case o.alignedTimeout < 0:
		return usagef("--aligned-checkpoint-timeout %s: want 0 (never) or a positive duration", o.alignedTimeout)
	case p.mode == barrier.AtLeastOnce && (o.unaligned || o.alignedTimeout > 0):
		return usagef("--unaligned and --aligned-checkpoint-timeout are for exactly-once checkpoints; --mode at-least-once does not align at all")
	}
	return nil
}

// checkInputFlags checks the generated input's flags: --rate and --records.
func (o *runOptions) checkInputFlags() error {
	switch {
	case o.setRate && (o.rate < 0 || math.IsNaN(o.rate) || math.IsInf(o.rate, 0)):
		return usagef("--rate %v: want records per second, 0 or more (0: all at once with --records)", o.rate)
	case o.records < 0:
		return usagef("--records %d: want 0 (unbounded) or more", o.records)
	}
	return nil
}

// checkCheckpointFlags checks the periodic checkpoints' flags: their
// interval, timeout, pause, concurrency and tolerated failures.
func (o *runOptions) checkCheckpointFlags() error {
	cfg := checkpoint.Config{Interval: o.interval, Timeout: o.timeout, MinPause: o.minPause,
		MaxConcurrent: o.maxConcurrent, TolerableFailures: o.tolerable}
	if err := cfg.Check(); err != nil {
		return asFlagError(err)
	}
	return nil
}

// checkRestartFlags checks the fixed-delay restart strategy's flags:
// --restart-attempts and --restart-delay.
func (o *runOptions) checkRestartFlags() error {
	switch {
	case o.restartAttempts < 0:
		return usagef("--restart-attempts %d: want 0 or more", o.restartAttempts)
	case o.restartDelay < 0:
		return usagef("--restart-delay %s: want 0 or more", o.restartDelay)
	}
	return nil
}

// checkChannelFlags checks the channels' flags: --channel-capacity and
// --batch-size.
func (o *runOptions) checkChannelFlags() error {
	switch {
	case o.channelCapacity < 1 || o.channelCapacity > 4096:
		return usagef("--channel-capacity %d: want 1 to 4096", o.channelCapacity)
	case o.batchSize < 1 || o.batchSize > 65536:
		return usagef("--batch-size %d: want 1 to 65536", o.batchSize)
	}
	return nil
}

// checkStateBackendFlags checks --checkpoint-storage, and --state-backend with
// --incremental as the engine checks them (runtime.StateConfig.Check).
func (o *runOptions) checkStateBackendFlags() error {
	if o.checkpointStorage != "filesystem" && o.checkpointStorage != "jobmanager" {
		return usagef("--checkpoint-storage %q: want filesystem (checkpoints in the state dir) or jobmanager (in the process's memory)", o.checkpointStorage)
	}
	if err := (runtime.StateConfig{StateBackend: o.stateBackend, Incremental: o.incremental}).Check(); err != nil {
		return asFlagError(err)
	}
	return nil
}

// checkStateDirFlags checks the flags of what a run starts from and keeps
// in the state dir: --from-savepoint, --resume and --fresh (one of them
// at most), --retained-checkpoints and --retention-interval.
func (o *runOptions) checkStateDirFlags() error {
	switch {
	case o.fromSavepoint < 0:
		return usagef("--from-savepoint %d: want a savepoint id", o.fromSavepoint)
	case o.fromSavepoint > 0 && o.resume:
		return usagef("--from-savepoint and --resume: give one of them")
	case o.fresh && o.resume:
		return usagef("--fresh and --resume: --fresh deletes what --resume would go on from; give one of them")
	case o.fresh && o.fromSavepoint > 0:
		return usagef("--fresh and --from-savepoint: --fresh deletes the savepoints too; give one of them")
	case o.retained < 1:
		return usagef("--retained-checkpoints %d: want 1 or more", o.retained)
	case o.retention < 0:
		return usagef("--retention-interval %s: want 0 (keep every record) or a positive duration", o.retention)
	}
	return nil
}

// checkDeadLetterFlags checks --dead-letter-topic, with --on-bad-record
// dead-letter.
func (o *runOptions) checkDeadLetterFlags() error {
	switch {
	case o.onBadRecord == runtime.BadRecordDeadLetter && o.deadLetterTopic == "":
		return usagef("--dead-letter-topic: give a topic name for --on-bad-record dead-letter")
	case o.onBadRecord == runtime.BadRecordDeadLetter && !spec.IsTopicName(o.deadLetterTopic):
		return usagef("--dead-letter-topic %q is not a Kafka topic name: %s", o.deadLetterTopic, spec.TopicNameRule)
	}
	return nil
}

// checkBrokerFlags checks the embedded broker's port (--listen) and the
// sink's transaction timeout, against the checkpoint interval and the
// embedded broker's limit.
func (o *runOptions) checkBrokerFlags() error {
	switch {
	case o.kafka.listen < 0 || o.kafka.listen > 65535:
		return usagef("--listen %d: want a port from 0 to 65535", o.kafka.listen)
	case o.kafka.txnTimeout <= 0:
		return usagef("--sink-transaction-timeout %s: want a positive duration, e.g. 15m", o.kafka.txnTimeout)
	case o.interval > 0 && o.kafka.txnTimeout <= o.interval:
		return usagef("--sink-transaction-timeout %s is not longer than --checkpoint-interval %s: a sink transaction stays open from one checkpoint to the commit after the next, so the broker would abort every one; make the timeout longer or the interval shorter", o.kafka.txnTimeout, o.interval)
	case o.kafka.brokers == "" && o.kafka.txnTimeout > sink.DefaultTransactionTimeout:
		return usagef("--sink-transaction-timeout %s: the embedded broker allows at most %s, as Kafka does by default (transaction.max.timeout.ms)", o.kafka.txnTimeout, sink.DefaultTransactionTimeout)
	}
	return nil
}

// checkRestartStrategy parses the restart strategy, with its options, and
// the failover strategy into p.
func (o *runOptions) checkRestartStrategy(p *prepared) error {
	var err error
	ropts := o.restartOpts
	ropts.Attempts, ropts.Delay = o.restartAttempts, o.restartDelay
	if p.strategy, err = restart.Parse(o.restartStrategy, ropts); err != nil {
		return asFlagError(err)
	}
	if p.failover, err = restart.ParseFailoverStrategy(o.failoverStrategy); err != nil {
		return asFlagError(err)
	}
	return nil
}

// checkInject parses the --inject faults into p, each checked against the
// job and the brokers.
func (o *runOptions) checkInject(p *prepared) error {
	for _, s := range o.inject {
		f, err := fault.Parse(s)
		if err != nil {
			return usagef("--inject %w", err)
		}
		if err := runtime.CheckFault(&f, p.job, func(string) int { return orders.GeneratorPartitions }); err != nil {
			return usagef("--inject %w", err)
		}
		if f.Kind == runtime.FaultBrokerDown && o.kafka.brokers != "" {
			return usagef("--inject %q: broker-down takes down the embedded broker, and with --brokers there is none; to see the job lose its brokers, stop one of your cluster's", s)
		}
		p.faults = append(p.faults, f)
	}
	return nil
}

// checkKafkaFlags parses where the sources start (--startup) and the
// sink's guarantee into p, and maps each source and sink to its Kafka
// topic: the job's, or the one --topic gives it.
func (o *runOptions) checkKafkaFlags(p *prepared) error {
	var err error
	if p.startup, err = source.ParseStartupMode(o.kafka.startup); err != nil {
		return asFlagError(err)
	}
	if p.sinkG, err = sink.ParseGuarantee(o.kafka.sinkGuarantee); err != nil {
		return asFlagError(err)
	}
	for _, op := range p.job.Operators {
		if op.Type == spec.TypeSource || op.Type == spec.TypeSink {
			p.topicMap[op.Name] = op.Topic
		}
	}
	for _, kv := range o.kafka.topics {
		name, topic, ok := strings.Cut(kv, "=")
		if !ok || topic == "" {
			return usagef("--topic %q: want operator=topic, e.g. orders-source=shop.orders", kv)
		}
		if _, known := p.topicMap[name]; !known {
			return usagef("--topic %q: %q is not a source or sink of job %s", kv, name, p.job.Name)
		}
		if !spec.IsTopicName(topic) {
			return usagef("--topic %q: %q is not a Kafka topic name: %s", kv, topic, spec.TopicNameRule)
		}
		p.topicMap[name] = topic
	}
	return nil
}

// checkClientFlags builds the Kafka client of p from --brokers and the
// TLS and SASL flags, and checks that it can be configured.
func (o *runOptions) checkClientFlags(p *prepared) error {
	var err error
	p.client, err = o.kafka.client()
	return err
}

// client is the Kafka client of --brokers and the TLS and SASL flags, or
// a usage error when it cannot be configured.
func (k *kafkaOptions) client() (kafka.Client, error) {
	password := k.saslPassword
	if password == "" {
		password = os.Getenv("FAULTLINE_SASL_PASSWORD")
	}
	c := kafka.Client{TLS: k.tls, TLSCA: k.tlsCA, SASLMechanism: k.saslMechanism,
		SASLUser: k.saslUser, SASLPassword: password}
	if k.brokers != "" {
		for _, b := range strings.Split(k.brokers, ",") {
			if b = strings.TrimSpace(b); b != "" {
				c.Brokers = append(c.Brokers, b)
			}
		}
	}
	if _, err := c.Config(); err != nil {
		return kafka.Client{}, asFlagError(err)
	}
	return c, nil
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
