package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"faultline/checkpoint"
	"faultline/internal/clock"
	"faultline/restart"
	"faultline/runtime"
	"faultline/runtime/barrier"
	"faultline/runtime/spec"
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

	restartStrategy string
	restartAttempts int
	restartDelay    time.Duration

	channelCapacity int
	batchSize       int
}

func newRunCmd() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a job (the default orders ⋈ payments job unless --job names another)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.headless, "headless", false, "no TUI: print JSON events and a final JSON report")
	f.StringVar(&o.jobFile, "job", "", "job spec file (default: the built-in orders job, fixtures/jobs/orders.yaml)")
	f.Int64Var(&o.records, "records", 0, "bounded input of this many records (orders plus payments); 0 runs until stopped")
	f.Float64Var(&o.rate, "rate", -1, "input records/s (default: unlimited with --records, 400 otherwise)")
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
	f.StringVar(&o.restartStrategy, "restart-strategy", "fixed-delay", "what to do after a failure: fixed-delay or none")
	f.IntVar(&o.restartAttempts, "restart-attempts", 10, "fixed-delay: restarts allowed (restart-strategy.fixed-delay.attempts)")
	f.DurationVar(&o.restartDelay, "restart-delay", time.Second, "fixed-delay: wait before each restart (restart-strategy.fixed-delay.delay)")
	f.IntVar(&o.channelCapacity, "channel-capacity", 4, "batches each channel holds before its sender blocks (back-pressure)")
	f.IntVar(&o.batchSize, "batch-size", 256, "most elements in one batch on a channel")
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

// prepared is a run put together from the flags.
type prepared struct {
	job     *spec.Job
	gen     *runtime.Generator
	outputs map[string]*runtime.MemoryOutput
	cfg     runtime.Config
	logOut  io.Closer
}

func (o *runOptions) prepare() (*prepared, error) {
	p := &prepared{}
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
	var mode barrier.Mode
	switch o.mode {
	case "exactly-once":
		mode = barrier.ExactlyOnce
	case "at-least-once":
		mode = barrier.AtLeastOnce
	default:
		return nil, usagef("--mode %q: want exactly-once or at-least-once", o.mode)
	}
	switch {
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
	}
	var strategy restart.BackoffStrategy
	switch o.restartStrategy {
	case "fixed-delay":
		strategy = restart.NewFixedDelay(o.restartAttempts, o.restartDelay)
	case "none":
		strategy = &restart.None{}
	default:
		return nil, usagef("--restart-strategy %q: want fixed-delay or none", o.restartStrategy)
	}
	var faults []runtime.Fault
	for _, s := range o.inject {
		f, err := runtime.ParseFault(s)
		if err != nil {
			return nil, usageError{err}
		}
		if err := runtime.CheckFaultTask(f, p.job); err != nil {
			return nil, usageError{err}
		}
		faults = append(faults, f)
	}
	rate := o.rate
	if rate < 0 {
		rate = 0
		if o.records == 0 {
			rate = 400
		}
	}
	p.gen = runtime.NewGenerator(o.seed, o.records, runtime.GeneratorPartitions).WithRate(rate)
	env := &runtime.Env{Sources: map[string]runtime.Source{}, Outputs: map[string]runtime.TxnOutput{}}
	p.outputs = map[string]*runtime.MemoryOutput{}
	for _, op := range p.job.Operators {
		switch op.Type {
		case spec.TypeSource:
			src, err := p.gen.Source(op.Topic)
			if err != nil {
				return nil, usagef("operator %s: %v", op.Name, err)
			}
			env.Sources[op.Topic] = src
		case spec.TypeSink:
			if p.outputs[op.Topic] == nil {
				p.outputs[op.Topic] = runtime.NewMemoryOutput()
				env.Outputs[op.Topic] = p.outputs[op.Topic]
			}
		}
	}
	stateDir := o.stateDir
	if stateDir == "" {
		if stateDir, err = defaultStateDir(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	o.stateDir = stateDir
	logPath := o.logFile
	if logPath == "" {
		logPath = filepath.Join(stateDir, "faultline.log")
	}
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	p.logOut = lf
	logger := log.New(lf, "", log.LstdFlags|log.Lmicroseconds)
	o.logFile = logPath
	p.cfg = runtime.Config{
		Job:  p.job,
		Env:  env,
		Mode: mode,
		Checkpoint: checkpoint.Config{
			Interval: o.interval, MinPause: o.minPause, Timeout: o.timeout,
			MaxConcurrent: o.maxConcurrent, TolerableFailures: o.tolerable,
		},
		Store:           checkpoint.NewMemoryStore(3),
		Restart:         strategy,
		Faults:          faults,
		Clock:           clock.Real{},
		ChannelCapacity: o.channelCapacity,
		BatchSize:       o.batchSize,
		Logf:            logger.Printf,
	}
	return p, nil
}

func (o *runOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := o.prepare()
	if err != nil {
		return err
	}
	defer p.logOut.Close()
	if !o.headless {
		fmt.Fprintln(stderr, "faultline: the terminal UI is not built yet; running headless (JSON events on stdout)")
	}
	obs := runtime.NewObserver(clock.Real{}, 8192)
	p.cfg.Observer = obs
	job, err := runtime.New(p.cfg)
	if err != nil {
		return usageError{err}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	enc := json.NewEncoder(stdout)
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		for e := range obs.Events() {
			enc.Encode(e)
		}
	}()
	obs.Emit("run_started", map[string]any{
		"job": p.job.Name, "mode": o.mode, "state_dir": o.stateDir, "log_file": o.logFile,
		"records": o.records, "seed": o.seed, "checkpoint_interval_ms": o.interval.Milliseconds(),
	})
	res, runErr := job.Run(ctx, nil)
	obs.Close()
	<-printed
	if runErr != nil {
		return exitError{code: 1, err: runErr}
	}
	var bounds checkpoint.Offsets
	if res.Status != runtime.JobFinished {
		bounds = checkpoint.Offsets{}
		if res.Latest != nil {
			bounds = res.Latest.SourceOffsets()
		}
	}
	var committed []runtime.OutputRecord
	for _, out := range p.outputs {
		committed = append(committed, out.Committed()...)
	}
	v, err := runtime.Verify(p.gen, p.job.Verify, o.mode, bounds, committed)
	if err != nil {
		return exitError{code: 1, err: fmt.Errorf("verify: %w", err)}
	}
	report := runtime.NewReport(p.job.Name, o.mode, res, v, obs.Dropped())
	if err := enc.Encode(report); err != nil {
		return exitError{code: 1, err: err}
	}
	switch {
	case res.Status == runtime.JobFailed:
		return exitError{code: 3, err: errors.New("the job FAILED: " + res.GaveUp)}
	case !v.OK:
		return exitError{code: 4, err: fmt.Errorf("verification failed: %d duplicates, %d lost, %d unexpected", v.Duplicates, v.Lost, v.Unexpected)}
	}
	return nil
}
