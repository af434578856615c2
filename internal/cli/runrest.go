package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/faultline-dev/faultline/internal/rest"
	"github.com/faultline-dev/faultline/runtime/view"
)

// checkRESTFlag checks --rest-addr before anything starts (a port taken
// is found only when the server listens).
func (o *runOptions) checkRESTFlag() error {
	switch o.restAddr {
	case "", "off":
		return nil
	}
	if _, err := restPort(o.restAddr); err != nil {
		return usagef("--rest-addr %q: want host:port, a port alone (on 127.0.0.1) or off, e.g. 127.0.0.1:8081 (port 0: any free one)", o.restAddr)
	}
	return nil
}

// restPort is the port of addr: host:port or a port alone.
func restPort(addr string) (int, error) {
	port := addr
	if _, p, err := net.SplitHostPort(addr); err == nil {
		port = p
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return 0, fmt.Errorf("not a port: %q", port)
	}
	return n, nil
}

// restAddress is where the run serves its REST API ("": nowhere): a free
// local port in front of the terminal UI, nowhere headless or in a tour,
// unless --rest-addr says otherwise; a port alone is on loopback.
func (o *runOptions) restAddress() string {
	switch o.restAddr {
	case "off":
		return ""
	case "":
		if o.headless || o.front != nil {
			return ""
		}
		return "127.0.0.1:0"
	}
	if _, _, err := net.SplitHostPort(o.restAddr); err != nil {
		return net.JoinHostPort("127.0.0.1", o.restAddr)
	}
	return o.restAddr
}

// restStop ends a run's context when it is stopped or cancelled through
// the REST API. errors.Is takes it for context.Canceled, as a run ends
// the same way however it was told to stop.
type restStop struct{ how string }

func (c restStop) Error() string        { return c.how + " through the REST API" }
func (c restStop) Is(target error) bool { return target == context.Canceled }

// restJob is the running job as the REST API drives it.
type restJob struct {
	*uiController
	r *runState
}

func (j restJob) Stop(savepoint bool) {
	how := "stopped"
	if savepoint {
		j.r.job.SavepointWhenStopped()
		how = "stopped with a savepoint"
	}
	j.r.stopRun(restStop{how})
}

func (j restJob) Cancel() { j.r.stopRun(restStop{"cancelled"}) }

// Config is the run's configuration by Flink's keys (rest.Configured).
func (j restJob) Config() map[string]string { return j.r.o.config }

// serveREST serves the job's REST API where restAddress says, writes
// where into the state dir for the commands that reach it, and says so in
// a notice; nothing when it says nowhere.
func (r *runState) serveREST(ctrl *uiController) error {
	addr := r.o.restAddress()
	if addr == "" {
		return nil
	}
	srv, err := rest.Serve(addr, r.jobID, restJob{ctrl, r})
	if err != nil {
		return usageError{fmt.Errorf("--rest-addr %s: %w", addr, err)}
	}
	ep := rest.Endpoint{Address: srv.Addr(), JobID: r.jobID, Job: r.p.job.Name, PID: os.Getpid(), Started: time.Now()}
	if err := rest.WriteEndpoint(r.stateDir, ep); err != nil {
		srv.Close()
		return exitError{code: 1, err: fmt.Errorf("say where the REST API is: %w", err)}
	}
	r.rest = srv
	r.onClose(func() {
		rest.RemoveEndpoint(r.stateDir, r.jobID)
		srv.Ended(0) // when the run ended with an error: no savepoint of a stop (the first Ended counts)
		srv.Close()
	})
	r.obs.Emit(view.Notice{Text: fmt.Sprintf("REST API (Flink's) at http://%s, job %s: faultline list, savepoint, stop and cancel reach it", srv.Addr(), r.jobID)})
	return nil
}
