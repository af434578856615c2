// Package cli is faultline's command line: the root command and one file
// per command (run, broker, checkpoints, reset), the end-to-end tests that
// drive the real binary, and the wiring of a run from its flags to its
// report.
package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/internal/supervise"
)

// usageError is a mistake in how faultline was called: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitError carries a chosen exit code and, optionally, a message and a
// line to print after it (then).
type exitError struct {
	code int
	err  error
	then string
}

func (e exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "faultline",
		Short: "Watch Flink-style exactly-once fault tolerance at work on a real local streaming job",
		Long: `faultline runs a small streaming job (orders ⋈ payments → revenue) on this machine:
checkpoint barriers flow with the records, operators with several inputs align
them, and you inject failures and watch the job recover without losing or
duplicating a record.

On a terminal it opens the terminal UI (? lists its keys); with --headless it
prints JSON events and a final report instead. Everything a run keeps lives in
the state dir; the terminal UI goes on from its last checkpoint when started
again (headless: --resume), and faultline reset empties it for a clean start.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
	})
	run := newRunCmd()
	addRunCompletions(run)
	root.AddCommand(run, newBrokerCmd(), newCheckpointsCmd(), newResetCmd(), newTourCmd(),
		newListCmd(), newSavepointCmd(), newStopCmd(), newCancelCmd(), newReplayCmd())
	root.AddCommand(newVersionCmd(), newVerifyCmd(), newAttachCmd())
	setVersion(root)
	// faultline with no command runs the default job, as `faultline run`.
	root.RunE = run.RunE
	root.Flags().AddFlagSet(run.Flags())
	return root
}

// Execute runs faultline with the command-line arguments args (without
// the program's name) and returns the process's exit code. The work runs
// in a child process of its own, so that a crash never exits with a code
// the user guide gives another meaning (see supervise).
func Execute(args []string) int {
	return supervise.Main("faultline", func() int { return execute(args) })
}

// execute runs faultline in this process and returns its exit code.
func execute(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "faultline:", withRemedy(ee.err))
		}
		if ee.then != "" {
			fmt.Fprintln(os.Stderr, "faultline:", ee.then)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "faultline:", withRemedy(err))
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return 2
	}
	return 1
}

// isCobraUsage recognises cobra's own complaints about the command line
// (unknown command, wrong number of arguments).
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires ", "unknown flag", "unknown shorthand"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
