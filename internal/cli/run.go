package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
	"github.com/faultline-dev/faultline/internal/clock"
	"github.com/faultline-dev/faultline/internal/diskroom"
	"github.com/faultline-dev/faultline/internal/rest"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
	"github.com/faultline-dev/faultline/runtime/kafka/fill"
	"github.com/faultline-dev/faultline/runtime/kafka/live"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
	"github.com/faultline-dev/faultline/runtime/kafka/source"
	"github.com/faultline-dev/faultline/runtime/verify"
	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui"
)

// run runs a job from its flags to its exit code, in named steps: prepare
// the state dir, watch for what stops a run, start Kafka and the input,
// build the job's environment, run it (headless or with the terminal UI),
// verify its output and report. Each step leaves in r what the next ones
// need; what a step opens, r closes at the end, newest first.
//
// A stop signal ends the run wherever it is, within 5 s (see stopBudget);
// one line on stderr says so.
func (o *runOptions) run(ctx context.Context, stdout, stderr io.Writer) (err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	r := &runState{o: o, stdout: stdout, stderr: stderr}
	defer r.close()
	ctx, stopSignals := notifyStop(ctx, stderr)
	r.onClose(stopSignals)
	defer func() { err = saidStopped(ctx, stderr, o.headless && o.front == nil, err) }()
	if r.p, err = o.check(); err != nil {
		return err
	}
	if err := r.prepare(ctx); err != nil {
		return err
	}
	ctx = r.watch(ctx)
	// What the run does once stopped has the stop's budget from the stop.
	wind, windDone := windDown(ctx)
	defer windDone()
	if err := r.startKafka(ctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return exitError{code: 1, err: fmt.Errorf("%w before the job started", context.Cause(ctx))}
	}
	if err := r.buildEnv(); err != nil {
		return err
	}
	res, err := r.runJob(ctx)
	if err != nil {
		return stoppedEarly(wind, err, "the job's outputs were left as its last checkpoint had them", "the next run does it as it restores")
	}
	if res.Crashed {
		return r.reportCrash(res)
	}
	if r.p.job.VerifyOff {
		return r.report(ctx, res, verify.Verification{Guarantee: r.guarantee(), Off: verifyOffReason})
	}
	v, err := r.verify(wind, res)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			// What stopped the run (its state dir gone, its disk full)
			// may keep the output from being read: the report says so,
			// and the exit gives the cause.
			v = verify.Verification{Guarantee: r.o.mode, NotDone: err.Error()}
		} else if res.Status == runtime.JobFailed {
			// The job's end comes first: what kept its output from being
			// checked (its brokers gone) is most likely what failed it.
			return exitError{code: 1, err: fmt.Errorf("the job ended FAILED (%s), and its output could not be checked: %w", res.GaveUp, err)}
		} else {
			return stoppedEarly(wind, err, "the output was checked", "the next run that goes on from the state dir (--resume, or the terminal UI) checks it")
		}
	}
	return r.report(ctx, res, v)
}

// runState is a run between its steps.
type runState struct {
	notices        []view.Notice // said before the run started, for the events
	o              *runOptions
	p              *prepared
	stdout, stderr io.Writer
	cleanups       []func() // what close undoes, in the order it was done

	// prepare
	stateDir, logPath, workDir string
	store                      *badgerstore.Store
	logger                     *log.Logger // r.log's lines at INFO (runlog.go)
	log                        *slog.Logger
	expect                     verify.Expect
	ledger                     *verify.Ledger
	ledgerPath                 string
	// continues: the run goes on from the runs before it on the state
	// dir (see goesOn); restorable: a checkpoint of the job is there.
	continues, restorable bool
	recordInput           func() error // writes inputFile, once (see inputRecorder)
	input                 inputRecord
	rec                   *recorder // the session's record (record.go), nil when none
	// watch
	stopRun     context.CancelCauseFunc
	obs         *runtime.Observer
	enc         *json.Encoder
	events      <-chan view.Stamped // what the terminal UI (or a tour) reads
	closeEvents func()
	// startKafka
	generate   bool
	embedded   *broker.Embedded
	brokerDown func(time.Duration) error
	cl         sarama.Client
	gen        *orders.Generator
	uiWriter   *fill.Writer // the writer of an unbounded input, for the UI's rate keys
	// buildEnv
	bounded     bool
	sources     map[string]*source.Source
	outputs     map[string]*sink.Output
	outputStart map[string]map[int32]int64
	job         *runtime.Job
	// runJob: the job's id (a new one each run, as Flink's) and its REST
	// API (runrest.go), when served
	jobID string
	rest  *rest.Server
	// runUI: what ends the job's context, for a tour's crash (see
	// crashHook)
	endJob atomic.Pointer[context.CancelFunc]
}

// onClose has close call f.
func (r *runState) onClose(f func()) { r.cleanups = append(r.cleanups, f) }

// close undoes what the steps did, newest first.
func (r *runState) close() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// prepare checks the state dir and takes it: room on its disk, its lock
// (the checkpoint store's), the rules for going on from it or starting
// afresh, the log file and the verification ledger.
func (r *runState) prepare(ctx context.Context) error {
	o, p := r.o, r.p
	r.stateDir = o.stateDir
	if r.stateDir == "" {
		var err error
		if r.stateDir, err = defaultStateDir(); err != nil {
			return err
		}
	}
	stateDir := r.stateDir
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	// A full disk under Badger's mapped files kills the process (SIGBUS):
	// start only with room for them, and stop cleanly when it runs out.
	if err := diskroom.Check(stateDir, diskroom.FreshStore, diskroom.Free, mappedDirs(stateDir)...); err != nil {
		return exitError{code: 1, err: err}
	}
	if !o.headless && !isTerminal(r.stdout) {
		fmt.Fprintln(r.stderr, "faultline: stdout is not a terminal; running headless (JSON events on stdout)")
		o.headless = true
	}
	// The checkpoint store's lock is the state dir's: take it before
	// anything else in the dir (the embedded broker's log) is touched.
	store, err := r.openStateStore(ctx)
	if err != nil {
		return exitError{code: 1, err: err}
	}
	if err := r.forgetMemoryCheckpoints(ctx); err != nil {
		return exitError{code: 1, err: err}
	}
	embeddedBroker := len(p.client.Brokers) == 0
	held, err := earlierRuns(ctx, store, stateDir, embeddedBroker)
	if err != nil {
		return exitError{code: 1, err: err}
	}
	if o.fresh {
		fmt.Fprintf(r.stderr, "faultline: --fresh: deleted the checkpoints, savepoints, the embedded broker's log and the verification ledger in %s\n", stateDir)
	} else if o.headless && !o.resume && o.fromSavepoint == 0 && len(held) > 0 {
		// The terminal UI goes on from the state dir by default; a
		// headless run is told to.
		return refuseSecondCopy(stateDir, held)
	}
	input, err := o.checkInput(stateDir, p.job.Name, embeddedBroker || o.kafka.generate)
	if err != nil {
		return err
	}
	r.recordInput = inputRecorder(stateDir, input)
	r.input = input
	// The badger state backend's databases: one per subtask and attempt,
	// left over only by a killed process, so emptied at start.
	r.workDir = filepath.Join(stateDir, "work")
	if err := os.RemoveAll(r.workDir); err != nil {
		return exitError{code: 1, err: fmt.Errorf("clear %s: %w", r.workDir, err)}
	}
	if err := r.openLog(); err != nil {
		return err
	}
	if err := r.openRecord(); err != nil {
		return err
	}
	// A bad record ahead of the last checkpoint stops this run where it
	// stopped the one before: say so before it starts.
	r.warnBadRecords(ctx, embeddedBroker)
	// The verification ledger: what the oracle has accounted for of the
	// records the embedded broker deleted. A run that goes on from this
	// job's checkpoints goes on from it; any other starts a new one.
	r.expect = verify.ExpectOf(p.job)
	r.ledgerPath = filepath.Join(stateDir, ledgerFile)
	if err := r.goesOn(ctx, len(held) > 0); err != nil {
		return exitError{code: 1, err: err}
	}
	r.ledger, err = openLedger(r.ledgerPath, r.expect, r.continues, stateDir)
	return err
}

// openStateStore opens the state dir's checkpoint store (emptied first
// with --fresh), whose lock is the state dir's.
func (r *runState) openStateStore(ctx context.Context) (*badgerstore.Store, error) {
	o := r.o
	var store *badgerstore.Store
	var err error
	if o.fresh {
		store, err = freshStateDir(ctx, r.stateDir, o.retained)
		if err != nil && !errors.Is(err, badgerstore.ErrLocked) {
			err = fmt.Errorf("--fresh: %w", err)
		}
	} else {
		store, err = openStore(checkpointDir(r.stateDir), o.retained)
	}
	if err != nil {
		return nil, err
	}
	r.store = store
	r.onClose(func() { store.Close() })
	return store, nil
}

// goesOn decides whether the run continues the runs before it on the state
// dir (their output, their ledger): a run from a savepoint does, and so does
// a resumed run (the terminal UI's too) on a state dir that holds anything
// of earlier runs, whether a checkpoint is left to restore or not. held
// says whether it holds anything.
func (r *runState) goesOn(ctx context.Context, held bool) error {
	o, p := r.o, r.p
	r.continues = o.fromSavepoint != 0
	if r.continues || !o.resume && o.headless {
		return nil
	}
	c, err := r.store.Latest(ctx)
	if err != nil {
		return err
	}
	r.restorable = c != nil && c.Job == p.job.Name
	r.continues = r.restorable || held
	return nil
}

// stateDirGone is why a run stops whose state dir was removed under it.
func (r *runState) stateDirGone() error {
	return fmt.Errorf("the state dir %s was removed while the job ran: its checkpoints and the embedded broker's log are gone", r.stateDir)
}

// mappedDirs are the folders of the state dir whose files Badger maps into
// memory: the checkpoint store and the Badger state backend's databases.
func mappedDirs(stateDir string) []string {
	return []string{checkpointDir(stateDir), filepath.Join(stateDir, "work")}
}

// watch returns the run's context, which the stop signals end, and what
// stops a run on its own ends with a cause: the state dir removed, its disk
// full, the input writer failed. It starts the events on their way: to
// stdout as JSON lines when headless, to the terminal UI otherwise.
func (r *runState) watch(ctx context.Context) context.Context {
	ctx, stopRun := context.WithCancelCause(ctx)
	r.stopRun = stopRun
	r.onClose(func() { stopRun(nil) })
	stateDir := r.stateDir
	// A state dir removed under the run takes its checkpoints, its log and
	// the embedded broker's data with it: nothing the run writes from then
	// on can be recovered, so it stops and says why.
	go watchStateDir(ctx, checkpointDir(stateDir), time.Second, func() { stopRun(r.stateDirGone()) })
	var short error
	go watchFor(ctx, 250*time.Millisecond, func() bool {
		short = diskroom.Check(stateDir, 0, diskroom.Free, mappedDirs(stateDir)...)
		return errors.Is(short, diskroom.ErrShort)
	}, func() {
		stopRun(fmt.Errorf("stopped the job: %w", short))
	})

	r.obs = runtime.NewObserver(clock.Real{}, 8192)
	r.enc = json.NewEncoder(r.stdout)
	printed := make(chan struct{})
	if r.o.headless && r.o.front == nil {
		go func() {
			defer close(printed)
			for e := range r.obs.Events() {
				r.enc.Encode(e)
				r.rec.write(e)
			}
		}()
	} else {
		// The terminal UI reads the events, as the record has them; the
		// report is recorded after the last of them.
		var recorded <-chan struct{}
		r.events, recorded = r.rec.tee(r.obs.Events())
		go func() {
			<-recorded
			close(printed)
		}()
	}
	r.closeEvents = sync.OnceFunc(func() {
		r.obs.Close()
		<-printed
	})
	r.onClose(r.closeEvents)
	return ctx
}

// runJob runs the job to its end, headless or in front of the terminal UI
// (with the live verifier), while the broker's retention trims its log.
func (r *runState) runJob(ctx context.Context) (*runtime.Result, error) {
	o, p := r.o, r.p
	r.jobID = rest.NewJobID()
	r.obs.Emit(view.RunStarted{
		JobID: r.jobID, Job: p.job.Name, Mode: o.mode, StateDir: r.stateDir, LogFile: r.logPath, EventsFile: r.rec.path(),
		Records: o.records, Seed: o.seed, CheckpointIntervalMs: o.interval.Milliseconds(),
		Brokers: strings.Join(p.client.Brokers, ","), SinkGuarantee: string(p.sinkG),
		CheckpointDir: r.store.Dir(), StateBackend: o.stateBackend, Incremental: o.incremental,
		Title: jobTitle(p.job), Operators: operatorsOf(p.job), StateTTLMs: r.expect.StateTTL.Milliseconds(),
	})
	for _, n := range r.notices {
		r.obs.Emit(n) // the UI shows them, which hides what went to stderr
	}
	runOpts := runtime.RunOptions{Resume: o.resume, FromSavepoint: o.fromSavepoint,
		AllowNonRestoredState: o.allowNonRestore, SavepointOnExit: o.savepointOnExit,
		SavepointTimeout: exitSavepointTimeout, StopBudget: stopBudget, SkipCommitted: r.continues}
	if !o.headless && o.fromSavepoint == 0 && !o.fresh {
		// The UI goes on from where the state dir left off, as after a
		// crash, unless told where to start (--fresh emptied it).
		runOpts.Resume = true
	}
	// A FAILED job waits in the UI for R, which resubmits it.
	runOpts.WaitToResubmit = !o.headless
	// The UI's live verifier goes on from the ledger, as the final
	// verification does.
	var verifier *live.LiveVerifier
	if (!o.headless || o.front != nil || o.metricsAddr != "") && len(r.outputStart) == 1 && !p.job.VerifyOff {
		for topic, start := range r.outputStart {
			lc := live.LiveConfig{Client: p.client, Inputs: p.logicalTopics(), Output: topic, OutputFrom: start, Expect: r.expect, Lenient: r.ledger.Lenient}
			if r.continues {
				lc.OutputFrom = nil
			}
			verifier = live.NewLiveVerifier(lc)
			verifier.Seed(r.ledger)
		}
	}
	stopRetention := func() {}
	// The jobmanager storage's checkpoints die with the process, and the
	// next run starts over from the beginning of the input: keep it all.
	if r.embedded != nil && o.retention > 0 && len(r.outputStart) == 1 && o.checkpointStorage != "jobmanager" {
		stopRetention = o.startRetention(ctx, retentionSetup{client: p.client, inputs: p.logicalTopics(), outputStart: r.outputStart,
			sources: r.sources, continues: r.continues, ledger: r.ledger, path: r.ledgerPath, store: r.store, job: r.job,
			live: verifier, logf: r.logger.Printf})
	}
	r.onClose(stopRetention)

	ctrl := newUIController(r.job, p.job, r.jobInfo(), r.uiWriter, verifier, r.embedded)
	for _, serve := range []func(*uiController) error{r.serveMetrics, r.serveREST, r.serveControl} {
		if err := serve(ctrl); err != nil {
			stopRetention()
			return nil, err
		}
	}
	var res *runtime.Result
	var runErr error
	if o.headless && o.front == nil {
		res, runErr = r.runHeadless(ctx, verifier, runOpts)
	} else {
		res, runErr = r.runUI(ctx, ctrl, verifier, runOpts)
	}
	// The ledger is the oracle's again once retention has stopped.
	stopRetention()
	if runErr != nil {
		if errors.Is(runErr, runtime.ErrNoSavepoint) {
			return nil, usageError{runErr}
		}
		return nil, exitError{code: 1, err: runErr}
	}
	if r.rest != nil {
		r.rest.Ended(res.ExitSavepoint)
	}
	// A sink without delivery guarantee never waited for its records: they
	// are all acknowledged before the oracle reads them.
	for topic, out := range r.outputs {
		if err := out.Flush(); err != nil {
			r.log.Warn("the output's last records could not be flushed", "topic", topic, "err", err)
		}
	}
	return res, nil
}

// jobInfo is what the UI and the metrics show of the job that does not
// change while it runs.
func (r *runState) jobInfo() tui.JobInfo {
	o, p := r.o, r.p
	info := tui.JobInfo{Name: p.job.Name, Title: jobTitle(p.job), Interval: o.interval, AlignedTimeout: o.alignedTimeout,
		Broker: strings.Join(p.client.Brokers, ","), Embedded: r.embedded != nil,
		StateBackend: o.stateBackend, Incremental: o.incremental, StateDir: r.stateDir,
		CheckpointSettings: view.CheckpointSettings{CheckpointTimeout: o.timeout, MinPause: o.minPause, MaxConcurrent: o.maxConcurrent,
			TolerableFailures: o.tolerable, Unaligned: o.unaligned, Retained: o.retained, CheckpointStorage: o.checkpointStorage}}
	info.FreezeLimit, info.FreezeLimitWhy = o.freezeLimit(p)
	info.StateTTL = r.expect.StateTTL
	return info
}

// report prints the report (the last JSON line headless, a summary after
// the UI) and turns the run's end into its exit code. When the input holds
// a bad record ahead of the last checkpoint, it says that every run with
// --on-bad-record fail stops at it again: in the summary after the UI,
// headless on stderr after the line of the exit.
func (r *runState) report(ctx context.Context, res *runtime.Result, v verify.Verification) error {
	r.closeEvents()
	report := runtime.NewReport(r.p.job.Name, r.o.mode, res, v, r.obs.Dropped())
	var badWhat, badAdvice string
	if bad := r.noteBadRecords(res); len(bad) > 0 {
		badWhat, badAdvice = badRecordWarning(bad, res.Latest, r.embedded != nil, r.o.stateDir, r.stateDir)
	}
	r.rec.write(report)
	if r.o.headless {
		if err := r.enc.Encode(report); err != nil {
			return exitError{code: 1, err: err}
		}
	} else {
		b, _ := json.Marshal(report)
		r.log.Info("the run's report", "report", json.RawMessage(b))
		stateDir := r.stateDir
		if r.o.front != nil {
			stateDir = "" // a tour's own, deleted when it ends
		}
		printSummary(r.stdout, report, stateDir, badWhat, badAdvice)
	}
	err := r.exit(ctx, res, v)
	if badWhat != "" && r.o.headless {
		then := badWhat + ": " + badAdvice
		var ee exitError
		if !errors.As(err, &ee) {
			fmt.Fprintln(r.stderr, "faultline:", then)
			return err
		}
		ee.then = then
		return ee
	}
	return err
}

// exit turns the run's end into its exit code.
func (r *runState) exit(ctx context.Context, res *runtime.Result, v verify.Verification) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		if dirGone(checkpointDir(r.stateDir)) {
			// Whatever failed first (the embedded broker writing into
			// its log) failed because the state dir went.
			cause = r.stateDirGone()
		}
		return exitError{code: 1, err: cause}
	}
	switch {
	case res.Status == runtime.JobFailed:
		return exitError{code: 3, err: errors.New("the job FAILED: " + res.GaveUp)}
	case v.Off != "":
		return nil
	case !v.OK:
		return exitError{code: 4, err: fmt.Errorf("verification failed: %d duplicates, %d lost, %d unexpected", v.Duplicates-v.DuplicatesAtLeastOnce, v.Lost, v.Unexpected)}
	}
	return nil
}

// freezeLimit is how long the UI's freeze can last before the job fails
// over, and what expires then: the sink's open Kafka transaction, whose
// timeout runs on the broker's clock; 0 when no transaction is open. A
// pending checkpoint's timeout runs on the job's clock, which stands still
// while the world is frozen.
func (o *runOptions) freezeLimit(p *prepared) (time.Duration, string) {
	if p.sinkG == sink.ExactlyOnce {
		return o.kafka.txnTimeout, "the sink's open transaction expires (--sink-transaction-timeout)"
	}
	return 0, ""
}
