package cli

import (
	"context"
	"net"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/faultline-dev/faultline/internal/metrics"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka/live"
	"github.com/faultline-dev/faultline/runtime/view"
)

// addServingFlags adds the flags of what a run serves and keeps while it
// runs: its metrics, its REST API (runrest.go) and its record (record.go);
// and whether its terminal UI takes the mouse.
func (o *runOptions) addServingFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.noMouse, "no-mouse", false, noMouseHelp)
	f.StringVar(&o.logLevel, "log-level", "info", "the least level the log keeps: debug, info, warn or error")
	f.StringVar(&o.logFormat, "log-format", "text", "the log's form: text (key=value) or json, one record a line")
	f.StringVar(&o.eventsFile, "events-file", "", "record the session's events and report as JSON lines into this file, rotating at 16 MiB (default: events.jsonl in the state dir with the terminal UI, none headless)")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics under Flink's names at http://host:port/metrics while the job runs, e.g. 127.0.0.1:9249 (default: off)")
	f.BoolVar(&o.pprof, "pprof", false, "with --metrics-addr: serve Go's profiles at /debug/pprof/ too")
	f.StringVar(&o.controlTopic, "control-topic", "", "take faults from this Kafka topic while the job runs, as faultline attach's x writes them ({\"fault\":\"panic\",\"task\":\"join/0\"}); created when missing (default: none)")
	f.StringVar(&o.restAddr, "rest-addr", "", "serve Flink's REST API (the part faultline has) at host:port, for faultline list/savepoint/stop/cancel and curl; a port alone binds 127.0.0.1; off: none (default: a free local port with the terminal UI, none headless)")
}

// checkMetricsFlags checks --metrics-addr and --pprof before anything
// starts (a port taken is found only when the server listens).
func (o *runOptions) checkMetricsFlags() error {
	if o.metricsAddr == "" {
		if o.pprof {
			return usagef("--pprof serves on --metrics-addr: give it too")
		}
		return nil
	}
	_, port, err := net.SplitHostPort(o.metricsAddr)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
		return usagef("--metrics-addr %q: want host:port, e.g. 127.0.0.1:9249 (port 0: any free one)", o.metricsAddr)
	}
	return nil
}

// serveMetrics serves the job's metrics at --metrics-addr (with Go's
// profiles under --pprof) until the run closes, and says where in a
// notice; nothing without --metrics-addr.
func (r *runState) serveMetrics(ctrl *uiController) error {
	o := r.o
	if o.metricsAddr == "" {
		return nil
	}
	srv, err := metrics.Serve(o.metricsAddr, metrics.New(ctrl.Snapshot), o.pprof)
	if err != nil {
		return usageError{err}
	}
	r.onClose(func() { srv.Close() })
	text := "metrics (Prometheus, Flink's names) at http://" + srv.Addr() + "/metrics"
	if o.pprof {
		text += ", profiles at http://" + srv.Addr() + "/debug/pprof/"
	}
	r.obs.Emit(view.Notice{Text: text})
	return nil
}

// runHeadless runs the job with no UI; the live verifier, when the
// metrics need it, follows the output while the job runs.
func (r *runState) runHeadless(ctx context.Context, verifier *live.LiveVerifier, opts runtime.RunOptions) (*runtime.Result, error) {
	liveCtx, stopLive := context.WithCancel(ctx)
	liveDone := r.startLive(liveCtx, verifier)
	res, err := r.job.Run(ctx, opts)
	stopLive()
	<-liveDone
	return res, err
}
