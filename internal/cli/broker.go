package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
)

// newBrokerCmd is `faultline broker`: the embedded Kafka broker alone, with
// the default job's topics, for kcat and any other Kafka client.
func newBrokerCmd() *cobra.Command {
	var listen int
	var stateDir string
	var inMemory bool
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run the embedded Kafka broker alone (for kcat and other Kafka clients)",
		Long: `Runs the embedded Kafka broker that faultline uses by default, with the
default job's topics (orders and payments with 4 partitions, revenue with 1),
prints its address, and keeps running until interrupted. Its log lives in the
state dir, so topics, offsets and committed transactions survive a restart.

  faultline broker &
  kcat -b 127.0.0.1:9092 -L
  faultline run --headless --brokers 127.0.0.1:9092 --generate --records 20000 --state-dir /tmp/against-broker

(--generate writes the input into the broker; a run on it needs a state dir
of its own, as the broker holds its state dir.)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if listen < 0 || listen > 65535 {
				return usagef("--listen %d: want a port from 0 to 65535", listen)
			}
			dir := ""
			var needs broker.LogNeeds
			if !inMemory {
				if stateDir == "" {
					d, err := defaultStateDir()
					if err != nil {
						return err
					}
					stateDir = d
				}
				dir = filepath.Join(stateDir, "kafka")
				// Hold the state dir, as a run does, so that no run uses
				// the same broker log at the same time.
				store, err := openStore(checkpointDir(stateDir), 3)
				if err != nil {
					return exitError{code: 1, err: err}
				}
				defer store.Close()
				// The log must hold what the state dir's runs need of
				// it, as it must for a run.
				if needs, err = brokerNeeds(cmd.Context(), store, stateDir); err != nil {
					return exitError{code: 1, err: err}
				}
			}
			job := orders.Default()
			topics := defaultTopics(job.Op("sink").Topic, 1)
			b, err := broker.StartEmbedded(listen, dir, topics, broker.WithLogNeeds(needs))
			if err != nil {
				return exitError{code: 1, err: err}
			}
			defer b.Close()
			out := cmd.OutOrStdout()
			if b.Note != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "faultline:", b.Note)
			}
			where := "in memory"
			if dir != "" {
				where = "log in " + dir
			}
			fmt.Fprintf(out, "faultline broker: listening on %s (%s); topics orders, payments, revenue; Ctrl-C stops it\n", b.Addr, where)
			ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
			defer stop()
			<-ctx.Done()
			fmt.Fprintln(out, "faultline broker: stopped")
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&listen, "listen", 9092, "port to listen on (a free port is used when it is taken)")
	f.StringVar(&stateDir, "state-dir", "", "the folder whose kafka/ subfolder keeps the broker's log (default: faultline under the user's data directory)")
	f.BoolVar(&inMemory, "in-memory", false, "keep nothing on disk")
	return cmd
}

// stopSignals are the signals that stop a run or the broker cleanly: Ctrl-C,
// SIGTERM, and SIGHUP when the terminal hangs up, unless the process was
// started to ignore it (nohup), which it then goes on ignoring.
func stopSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

// defaultTopics are the topics of the default job: the generator's inputs
// with its partitions, and the output.
func defaultTopics(output string, outputPartitions int32) map[string]int32 {
	return map[string]int32{
		orders.TopicOrders:   orders.GeneratorPartitions,
		orders.TopicPayments: orders.GeneratorPartitions,
		output:               outputPartitions,
	}
}
