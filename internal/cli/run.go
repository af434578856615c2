package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"faultline/checkpoint"
	"faultline/internal/clock"
	"faultline/internal/diskroom"
	"faultline/runtime"
	"faultline/runtime/kafka"
	"faultline/runtime/spec"
	"faultline/runtime/view"
	"faultline/tui"
)

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
			time.AfterFunc(d, func() { obs.Emit(view.BrokerUp{Address: broker.Addr}) })
			return nil
		}
		p.client.Brokers = []string{broker.Addr}
		p.client.Embedded = true
		generate = true
		if broker.Note != "" {
			fmt.Fprintln(stderr, "faultline:", broker.Note)
		}
		obs.Emit(view.BrokerStarted{Address: broker.Addr, Embedded: true, LogDir: filepath.Join(stateDir, "kafka"), Note: broker.Note})
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
					obs.Emit(view.InputProgress{Records: written, Of: of})
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
			obs.Emit(view.InputWritten{Records: n, DurationMs: time.Since(start).Milliseconds()})
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
					obs.Emit(view.InputWriterFailed{Error: err.Error()})
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
	obs.Emit(view.RunStarted{
		Job: p.job.Name, Mode: o.mode, StateDir: stateDir, LogFile: logPath,
		Records: o.records, Seed: o.seed, CheckpointIntervalMs: o.interval.Milliseconds(),
		Brokers: strings.Join(p.client.Brokers, ","), SinkGuarantee: string(p.sinkG),
		CheckpointDir: store.Dir(), StateBackend: o.stateBackend, Incremental: o.incremental,
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
	obs.Emit(view.VerifyStarted{JobStatus: string(res.Status)})
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
