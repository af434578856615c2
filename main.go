// Command faultline runs a small, real streaming job on one machine and lets
// a person watch Flink-style fault tolerance at work. main.go holds the
// command line only; the work is done in runtime/, checkpoint/, restart/ and
// backend/.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"faultline/internal/supervise"
)

// usageError is a mistake in how faultline was called: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitError carries a chosen exit code and, optionally, a message.
type exitError struct {
	code int
	err  error
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
again (headless: --resume).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
	})
	run := newRunCmd()
	root.AddCommand(run, newBrokerCmd(), newCheckpointsCmd())
	// faultline with no command runs the default job, as `faultline run`.
	root.RunE = run.RunE
	root.Flags().AddFlagSet(run.Flags())
	return root
}

func main() {
	// A crash must not exit 2, the code of a bad flag: see supervise.
	os.Exit(supervise.Main("faultline", func() int { return execute(os.Args[1:]) }))
}

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
			fmt.Fprintln(os.Stderr, "faultline:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "faultline:", err)
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
