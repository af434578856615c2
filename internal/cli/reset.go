package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultline-dev/faultline/checkpoint/badgerstore"

	"github.com/spf13/cobra"
)

// newResetCmd is `faultline reset`: everything runs keep in the state dir
// deleted, for a clean start.
func newResetCmd() *cobra.Command {
	var stateDir string
	var yes bool
	cmd := &cobra.Command{
		Use:   "reset",
		Short: "Delete everything runs keep in the state dir, for a clean start",
		Long: `Deletes everything runs keep in the state dir: the checkpoints and
savepoints, the embedded broker's log (the input and the output), the
verification ledger and the record of the input, as run --fresh does. The
log file stays. The next run starts from nothing.

On a terminal it says what it deletes and asks first; --yes deletes without
asking, and without a terminal to ask on (a script, a pipe) --yes is needed.
A state dir that a running faultline holds is left alone.

Exit codes: 0 deleted, or nothing to delete; 1 not deleted (answered no, or
the state dir is in use); 2 no terminal to ask on and no --yes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := stateDir
			if dir == "" {
				d, err := defaultStateDir()
				if err != nil {
					return err
				}
				dir = d
			}
			in := cmd.InOrStdin()
			return resetStateDir(context.Background(), dir, resetAsk{
				yes: yes, terminal: isTerminalReader(in), in: in, prompt: cmd.ErrOrStderr(),
			}, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "the folder where everything a run keeps lives (default: faultline under the user's data directory)")
	cmd.Flags().BoolVar(&yes, "yes", false, "delete without asking")
	return cmd
}

// resetAsk is how reset asks before it deletes: not at all with yes, else
// on the terminal, when in is one.
type resetAsk struct {
	yes, terminal bool
	in            io.Reader
	prompt        io.Writer
}

// resetStateDir deletes everything runs keep in dir (freshStateDir, as run
// --fresh does) once ask agreed, and says what it deleted on out.
func resetStateDir(ctx context.Context, dir string, ask resetAsk, out io.Writer) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(out, "faultline: nothing to reset: there is no state dir %s\n", dir)
		return nil
	case err != nil:
		return exitError{code: 1, err: err}
	case !fi.IsDir():
		return exitError{code: 1, err: fmt.Errorf("%s is not a directory: is --state-dir right?", dir)}
	}
	held, err := stateDirHolds(ctx, dir)
	if err != nil {
		return err
	}
	if len(held) == 0 {
		fmt.Fprintf(out, "faultline: nothing to reset: the state dir %s holds nothing of earlier runs\n", dir)
		return nil
	}
	what := joinAnd(held)
	switch {
	case ask.yes:
	case !ask.terminal:
		return usagef("the state dir %s holds %s; nothing deleted: no terminal to ask on; add --yes to delete them", dir, what)
	default:
		if !askYes(ask.prompt, ask.in, fmt.Sprintf("delete %s in %s?", what, dir)) {
			return exitError{code: 1, err: errors.New("nothing deleted")}
		}
	}
	store, err := freshStateDir(ctx, dir, 1)
	if err != nil {
		return resetError(dir, err)
	}
	store.Close()
	// What is left of the store is an empty one: it goes too, unless a
	// run has taken the state dir meanwhile (it found it empty).
	if err := badgerstore.Remove(checkpointDir(dir)); err != nil && !errors.Is(err, badgerstore.ErrLocked) {
		fmt.Fprintf(out, "faultline: the empty checkpoint store stays: %v\n", err)
	}
	fmt.Fprintf(out, "faultline: reset %s: deleted %s\n", dir, what)
	return nil
}

// stateDirHolds says what dir holds of earlier runs, as earlierRuns does,
// plus the note of a bad record and the state backend's working databases
// (which only a killed run leaves). It looks without changing anything,
// and refuses a state dir that a running faultline holds.
func stateDirHolds(ctx context.Context, dir string) ([]string, error) {
	cdir := checkpointDir(dir)
	var held []string
	store, err := waitForDying(cdir, func() (*badgerstore.Store, error) { return badgerstore.OpenReadOnly(cdir) })
	switch {
	case err == nil:
		defer store.Close()
	case errors.Is(err, badgerstore.ErrNoStore):
	case errors.Is(err, badgerstore.ErrDamaged):
		held = append(held, "a damaged checkpoint store")
	default:
		return nil, resetError(dir, err)
	}
	runs, err := earlierRuns(ctx, store, dir, true)
	if err != nil {
		return nil, exitError{code: 1, err: err}
	}
	held = append(held, runs...)
	if _, err := os.Stat(filepath.Join(dir, badRecordFile)); err == nil {
		held = append(held, "the note of a bad record in its input ("+badRecordFile+")")
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "work")); err == nil && len(entries) > 0 {
		held = append(held, "the state backend's working databases (work/)")
	}
	return held, nil
}

// resetError is why reset deleted nothing in dir: a faultline that holds
// it (named, with its pid), or what opening its store said.
func resetError(dir string, err error) error {
	if errors.Is(err, badgerstore.ErrLocked) {
		return exitError{code: 1, err: fmt.Errorf("cannot reset %s, nothing deleted: %w; stop it first (q in its terminal UI, Ctrl-C), then reset", dir, err)}
	}
	return exitError{code: 1, err: fmt.Errorf("cannot reset %s: %w", dir, err)}
}

// joinAnd writes items as "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
