package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/verify"
)

// newVerifyCmd is `faultline verify`: the exactly-once oracle that ends a
// run, on its own, over the committed Kafka output of any job that writes
// the relation (faultline's, or an Apache Flink job's).
func newVerifyCmd() *cobra.Command {
	f := &verifyFlags{}
	def := orders.Default()
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check a job's committed Kafka output against its input: every expected record exactly once",
		Long: `Reads the input topics and the output topic of a job from Kafka, the output
with a read_committed consumer as any downstream reader sees it, and checks
that the output holds every expected record exactly once: the oracle that
ends faultline run, for any job writing the same relation (faultline's own,
or an Apache Flink job's).

What is expected is the default job's relation (each paid order, by
order_id, from orders and payments into revenue) unless --job names a job
spec or the flags say otherwise. Each topic is read from its start to its
end as the command starts; a job still running may not have committed all
of its output yet.

Exit codes: 0 verified, 1 a runtime error (no broker, no input topic),
2 a bad flag or job file, 4 duplicates (under exactly-once), lost or
unexpected records.

  faultline verify --brokers 127.0.0.1:9092
  faultline verify --brokers 127.0.0.1:9092 --output revenue-flink --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.given = cmd.Flags().Changed
			job, err := f.job(def)
			if err != nil {
				return err
			}
			t, err := f.target(job)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			v, err := runVerify(ctx, t, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.asJSON {
				err = json.NewEncoder(out).Encode(struct {
					Verify verify.Verification `json:"verify"`
				}{v})
			} else {
				_, err = fmt.Fprintln(out, verifySummary(v))
			}
			if err != nil {
				return exitError{code: 1, err: err}
			}
			return verifyExit(v)
		},
	}
	addVerifyFlags(cmd, f, def)
	return cmd
}

// job is the job whose relation is checked: --job's, or def; a job file
// that cannot be read is a usage error, as for run.
func (f *verifyFlags) job(def *spec.Job) (*spec.Job, error) {
	if f.jobFile == "" {
		return def, nil
	}
	job, err := spec.Load(f.jobFile, orders.Catalogue())
	if err != nil {
		return nil, usageError{err}
	}
	return job, nil
}

// addVerifyFlags adds verify's flags to cmd: its defaults are def's, the
// default job's.
func addVerifyFlags(cmd *cobra.Command, f *verifyFlags, def *spec.Job) {
	fs := cmd.Flags()
	fs.StringVar(&f.kafka.brokers, "brokers", "", "host:port,… of the Kafka cluster to read (required): the address faultline broker prints, or your own cluster's")
	f.kafka.addClientFlags(fs)
	fs.StringVar(&f.jobFile, "job", "", "job spec whose relation to check, as run --job takes it: its verify kind, input topics, id, sink topics and join state TTL (--inputs, --output, --id and --state-ttl, given, override the job's)")
	fs.StringVar(&f.relation, "relation", def.Verify, "what the output holds exactly once: paid-orders (every order that has a payment) or orders (every order); not with --job, whose operators decide it")
	fs.StringSliceVar(&f.inputs, "inputs", nil, "the Kafka topics of the relation's inputs, in its order (default: the relation's own, orders,payments for paid-orders, orders for orders)")
	var sinks []string
	for _, op := range def.Operators {
		if op.Type == spec.TypeSink {
			sinks = append(sinks, op.Topic)
		}
	}
	fs.StringSliceVar(&f.outputs, "output", sinks, "the topic the job writes its output to, read read_committed (several, comma-separated: read as one output); with --job: its sinks'")
	fs.StringVar(&f.id, "id", def.ID, "the field of the input and output records (JSON) that identifies one; with --job: the job's id")
	fs.DurationVar(&f.stateTTL, "state-ttl", verify.ExpectOf(def).StateTTL, "paid-orders: the join's state TTL, an order and its payment further apart in event time (their Kafka timestamps) are not expected; 0 expects every paid order; with --job: the join's state_ttl")
	fs.StringVar(&f.guarantee, "guarantee", "exactly-once", "the promise checked: exactly-once (no duplicates, nothing lost) or at-least-once (nothing lost; duplicates are counted and pass)")
	fs.BoolVar(&f.asJSON, "json", false, `print the verdict as one JSON object, {"verify":{…}}, as the run report's verify object`)
	cmd.RegisterFlagCompletionFunc("relation", words(orders.Catalogue().Verifies...))
	cmd.RegisterFlagCompletionFunc("guarantee", words("exactly-once", "at-least-once"))
}
