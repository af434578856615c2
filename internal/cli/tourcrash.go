package cli

import (
	"fmt"
	"time"

	"github.com/faultline-dev/faultline/runtime"
)

// crashHook is what the crash fault does: SIGKILL to this process, except
// in a guided tour, which outlives the runs of its job: there it ends the
// job's context, and the run ends as the process's death would end it
// (runtime.Config.Crash): nothing settled, no savepoint, no check, the
// state dir as a crash leaves it, the checkpoints of the jobmanager
// storage gone with the run. The tour's next run goes on from there.
func (r *runState) crashHook() func() {
	if r.o.front == nil {
		return r.o.crashFunc(r.stdout, r.stderr)
	}
	return func() {
		if end := r.endJob.Load(); end != nil {
			(*end)()
		}
	}
}

// reportCrash ends a tour's run that the crash fault ended: it says so,
// and checks nothing (the next run does).
func (r *runState) reportCrash(res *runtime.Result) error {
	r.closeEvents()
	r.logger.Printf("the crash fault ended the run after %s", res.Elapsed)
	if !r.o.headless {
		fmt.Fprintf(r.stdout, "faultline: job %s crashed after %s (the crash fault): nothing settled, nothing checked; the next run goes on from the state dir\n",
			r.p.job.Name, res.Elapsed.Round(100*time.Millisecond))
	}
	return nil
}
