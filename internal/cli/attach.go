package cli

// faultline attach: the terminal UI over a job that runs elsewhere, an
// Apache Flink job or a faultline run, through Flink's REST API
// (internal/attach).

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/internal/attach"
	"github.com/faultline-dev/faultline/internal/rest"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/verify"
	"github.com/faultline-dev/faultline/tui"
)

// attachOptions are attach's flags.
type attachOptions struct {
	job          string
	stateDir     string
	period       time.Duration
	controlTopic string
	output       string
	group        string
	noMouse      bool
	kafka        kafkaOptions
}

func newAttachCmd() *cobra.Command {
	o := &attachOptions{}
	cmd := &cobra.Command{
		Use:   "attach [URL]",
		Short: "Watch and drive a running Flink job (or faultline run) through its REST API",
		Long: `Shows a job that runs elsewhere in the terminal UI: an Apache Flink job
through its JobManager's REST API (URL: http://jobmanager:8081), or a
faultline run through its --rest-addr (without URL: the run on --state-dir).
The job graph, the checkpoints with each subtask's alignment, the restarts
and the exception history are Flink's own figures, polled every --period.
c triggers a checkpoint, s a savepoint, S S stops the job with a savepoint,
C C cancels it; x injects a fault through the job's control topic when
--brokers names the Kafka it reads, and --output verifies the job's
output live (see "Watching a real Flink job" in the user guide). What the REST API does not expose (the input queues, the
tempo, the checkpointing mode) is shown as not available.

  faultline attach http://127.0.0.1:8081 --brokers 127.0.0.1:9092 --output revenue-flink
  faultline run --headless --rest-addr 127.0.0.1:8082 & faultline attach 127.0.0.1:8082`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAttach(cmd.Context(), o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.job, "job", "", "the id of the job to watch (default: the one job running there)")
	f.StringVar(&o.stateDir, "state-dir", "", "without URL: the state dir of the faultline run to watch (default: faultline under the user's data directory)")
	f.DurationVar(&o.period, "period", attach.DefaultPeriod, "how often the REST API is polled")
	f.StringVar(&o.controlTopic, "control-topic", attach.DefaultControlTopic, "the Kafka topic the job reads faults from (with --brokers)")
	f.StringVar(&o.kafka.brokers, "brokers", "", "host:port,… of the Kafka cluster the job reads and writes: faults go through its control topic")
	f.StringVar(&o.output, "output", "", "with --brokers: the topic the job's sink writes, verified live as it is committed (the default job's relation: each paid order once)")
	f.StringVar(&o.group, "group", "faultline-flink-peer", "with --output: the consumer group the job's sources commit their offsets to when a checkpoint completes (Flink's KafkaSource does): what a checkpoint covers of the input")
	f.BoolVar(&o.noMouse, "no-mouse", false, noMouseHelp)
	o.kafka.addClientFlags(f)
	return cmd
}

func runAttach(ctx context.Context, o *attachOptions, args []string) error {
	if o.period < 100*time.Millisecond {
		return usagef("--period %s: at least 100ms, or the REST API is asked too often", o.period)
	}
	url, err := attachURL(o, args)
	if err != nil {
		return err
	}
	opts := attach.Options{URL: url, JobID: o.job, Period: o.period, Brokers: o.kafka.brokers}
	if o.output != "" && o.kafka.brokers == "" {
		return usagef("--output %s: give --brokers too, the Kafka cluster it is on", o.output)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	pollCtx, endPoll := context.WithCancel(ctx)
	defer endPoll()
	if o.kafka.brokers != "" {
		c, err := o.kafka.client()
		if err != nil {
			return err
		}
		opts.Control = attach.NewControl(c, o.controlTopic)
		defer opts.Control.Close()
		if o.output != "" {
			lv := attach.StartLiveVerify(pollCtx, attach.LiveOptions{Client: c, Group: o.group, Output: o.output,
				Expect: verify.ExpectOf(orders.Default())})
			opts.Verify = lv.Verify
		}
	}
	dialCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	a, err := attach.Dial(dialCtx, opts)
	cancel()
	if err != nil {
		return exitError{code: 1, err: err}
	}
	go a.Run(pollCtx)
	return tui.Run(ctx, a, a.Events(), uiOptions(o.noMouse))
}

// attachURL is the REST API to attach to: the URL given, else the one
// the run on the state dir serves.
func attachURL(o *attachOptions, args []string) (string, error) {
	if len(args) == 1 {
		if o.stateDir != "" {
			return "", usagef("give a URL or --state-dir, not both")
		}
		if _, err := rest.NewClientURL(args[0]); err != nil {
			return "", usagef("%v", err)
		}
		return args[0], nil
	}
	dir := o.stateDir
	if dir == "" {
		d, err := defaultStateDir()
		if err != nil {
			return "", err
		}
		dir = d
	}
	ep, err := rest.ReadEndpoint(dir)
	if err != nil {
		return "", err
	}
	if ep == nil {
		return "", exitError{code: 1, err: fmt.Errorf("%w in %s: no run there serves its REST API (a run serves it with --rest-addr); to watch a Flink job, give its JobManager's URL", errNoJob, dir)}
	}
	return "http://" + ep.Address, nil
}
