package cli

// faultline list, savepoint, stop and cancel: a running job driven from
// another shell through its REST API (runrest.go), as flink list,
// savepoint, stop and cancel drive a Flink job. The run is found through
// its state dir, or at --rest-addr.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/internal/rest"
)

// jobFlags say where the job is, and how long to wait for it.
type jobFlags struct {
	stateDir, restAddr string
	timeout            time.Duration
}

func (f *jobFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.stateDir, "state-dir", "", "the state dir of the run (default: faultline under the user's data directory)")
	cmd.Flags().StringVar(&f.restAddr, "rest-addr", "", "reach the run's REST API at host:port instead of through its state dir")
	cmd.Flags().DurationVar(&f.timeout, "timeout", time.Minute, "how long to wait for the job")
}

// errNoJob: no run serves a REST API where the flags say.
var errNoJob = errors.New("no running job")

// reach finds the run's REST API and its job's id (the one asked for,
// when given): errNoJob, said with where it looked, when nothing runs
// there.
func (f *jobFlags) reach(ctx context.Context, asked string) (*rest.Client, string, error) {
	if f.restAddr != "" {
		c := rest.NewClient(f.restAddr)
		jobs, err := c.Overview(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("%w at %s: %v", errNoJob, f.restAddr, err)
		}
		return c, pick(asked, jobs), nil
	}
	dir := f.stateDir
	if dir == "" {
		d, err := defaultStateDir()
		if err != nil {
			return nil, "", err
		}
		dir = d
	}
	ep, err := rest.ReadEndpoint(dir)
	if err != nil {
		return nil, "", err
	}
	if ep == nil {
		return nil, "", fmt.Errorf("%w in %s: no run there serves its REST API (a headless run serves it with --rest-addr)", errNoJob, dir)
	}
	c := rest.NewClient(ep.Address)
	if _, err := c.Overview(ctx); err != nil {
		return nil, "", fmt.Errorf("%w in %s: the run that served http://%s (pid %d) is gone", errNoJob, dir, ep.Address, ep.PID)
	}
	if asked == "" {
		asked = ep.JobID
	}
	return c, asked, nil
}

// pick is the job asked for, or the only one listed.
func pick(asked string, jobs []rest.JobOverview) string {
	if asked == "" && len(jobs) == 1 {
		return jobs[0].ID
	}
	return asked
}

// gone says whether err is the run's API going away (the run ended).
func gone(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func newListCmd() *cobra.Command {
	f := &jobFlags{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the job running on the state dir (flink list)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			c, _, err := f.reach(ctx, "")
			if errors.Is(err, errNoJob) {
				fmt.Fprintf(out, "No running jobs %s.\n", strings.TrimPrefix(err.Error(), errNoJob.Error()+" "))
				return nil
			}
			if err != nil {
				return exitError{code: 1, err: err}
			}
			jobs, err := c.Overview(ctx)
			if err != nil {
				return exitError{code: 1, err: err}
			}
			fmt.Fprintln(out, "------------------ Running/Restarting Jobs -------------------")
			for _, j := range jobs {
				fmt.Fprintf(out, "%s : %s : %s (%s)\n", j.Start.Format("02.01.2006 15:04:05"), j.ID, j.Name, j.State)
			}
			fmt.Fprintln(out, "--------------------------------------------------------------")
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

// jobAction is what a command does to the running job c serves, whose
// id is id, within the command's --timeout.
type jobAction func(ctx context.Context, out io.Writer, c *rest.Client, id string) error

// newJobCmd is a command that finds the running job and acts on it.
func newJobCmd(use, short, long string, act func(f *jobFlags) jobAction) *cobra.Command {
	f := &jobFlags{}
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			c, id, err := f.reach(ctx, firstArg(args))
			if err != nil {
				return exitError{code: 1, err: err}
			}
			return act(f)(ctx, cmd.OutOrStdout(), c, id)
		},
	}
	f.add(cmd)
	return cmd
}

func newSavepointCmd() *cobra.Command {
	cmd := newJobCmd("savepoint [JOB_ID]", "Take a savepoint of the running job (flink savepoint)", "",
		func(f *jobFlags) jobAction {
			return func(ctx context.Context, out io.Writer, c *rest.Client, id string) error {
				fmt.Fprintf(out, "Triggering savepoint for job %s.\nWaiting for response...\n", id)
				tid, err := c.TriggerSavepoint(ctx, id)
				if err != nil {
					return exitError{code: 1, err: err}
				}
				return f.awaitSavepoint(ctx, out, c, id, tid)
			}
		})
	return cmd
}

func newStopCmd() *cobra.Command {
	var savepoint bool
	cmd := newJobCmd("stop [JOB_ID]", "Stop the running job, with a savepoint first with --savepoint (flink stop)",
		`Stop the running job as Ctrl-C in its own shell would: its outputs are left
as its last checkpoint had them and checked. With --savepoint it takes a
savepoint first, which faultline run --from-savepoint starts from.`,
		func(f *jobFlags) jobAction {
			return func(ctx context.Context, out io.Writer, c *rest.Client, id string) error {
				if !savepoint {
					return f.terminate(ctx, out, c, id, "stop", "Stopped")
				}
				fmt.Fprintf(out, "Suspending job %s with a savepoint.\nWaiting for response...\n", id)
				tid, err := c.StopWithSavepoint(ctx, id)
				if err != nil {
					return exitError{code: 1, err: err}
				}
				return f.awaitSavepoint(ctx, out, c, id, tid)
			}
		})
	cmd.Flags().BoolVar(&savepoint, "savepoint", false, "take a savepoint before the job stops (flink stop)")
	return cmd
}

func newCancelCmd() *cobra.Command {
	cmd := newJobCmd("cancel [JOB_ID]", "Cancel the running job (flink cancel)", "",
		func(f *jobFlags) jobAction {
			return func(ctx context.Context, out io.Writer, c *rest.Client, id string) error {
				return f.terminate(ctx, out, c, id, "cancel", "Cancelled")
			}
		})
	return cmd
}

func firstArg(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return ""
}

// pollEvery is how often the commands ask how an operation stands.
const pollEvery = 100 * time.Millisecond

// awaitSavepoint waits for the savepoint under tid and says where it is.
func (f *jobFlags) awaitSavepoint(ctx context.Context, out io.Writer, c *rest.Client, id, tid string) error {
	for {
		sp, err := c.SavepointStatus(ctx, id, tid)
		switch {
		case err != nil && ctx.Err() != nil:
			return exitError{code: 1, err: fmt.Errorf("no answer within %s (--timeout)", f.timeout)}
		case err != nil && gone(err):
			return exitError{code: 1, err: fmt.Errorf("the run ended before it said how the savepoint went: its report (the last line of its events) says whether it took one")}
		case err != nil:
			return exitError{code: 1, err: err}
		case sp.Failure != "":
			return exitError{code: 1, err: fmt.Errorf("the savepoint failed: %s", sp.Failure)}
		case sp.Done:
			fmt.Fprintf(out, "Savepoint completed. Path: %s\n", sp.Location)
			fmt.Fprintf(out, "You can resume your program from this savepoint with: faultline run --from-savepoint %s%s\n", sp.Location, f.stateDirFlag())
			return nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(pollEvery):
		}
	}
}

// stateDirFlag is --state-dir as given, for a command to print.
func (f *jobFlags) stateDirFlag() string {
	if f.stateDir == "" {
		return ""
	}
	return " --state-dir " + f.stateDir
}

// terminate ends the job (mode stop or cancel) and waits until it has.
func (f *jobFlags) terminate(ctx context.Context, out io.Writer, c *rest.Client, id, mode, done string) error {
	if err := c.Terminate(ctx, id, mode); err != nil {
		return exitError{code: 1, err: err}
	}
	for {
		state, err := c.State(ctx, id)
		switch {
		case err != nil && gone(err), err == nil && (state == "CANCELED" || state == "FINISHED" || state == "FAILED"):
			fmt.Fprintf(out, "%s job %s.\n", done, id)
			return nil
		case err != nil && ctx.Err() != nil:
			return exitError{code: 1, err: fmt.Errorf("job %s did not end within %s (--timeout)", id, f.timeout)}
		case err != nil:
			return exitError{code: 1, err: err}
		}
		select {
		case <-ctx.Done():
		case <-time.After(pollEvery):
		}
	}
}
