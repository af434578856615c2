package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/verify"
)

// newCheckpointsDeleteCmd is `faultline checkpoints delete ID`: it deletes
// one checkpoint or savepoint, asking first when that sends a resumed run
// back (see deleteCost).
func newCheckpointsDeleteCmd(f *checkpointsFlags) *cobra.Command {
	var yes bool
	del := &cobra.Command{
		Use:               "delete ID",
		ValidArgsFunction: checkpointIDs(f),
		Short:             "Delete one checkpoint or savepoint and its state",
		Long: `Delete one checkpoint or savepoint and its state.

Deleting the newest checkpoint of a job sends a resumed run back to the one
before it, to read again the input records in between: the command says how
many and asks first, on a terminal, or needs --yes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseCheckpointID(args[0])
			if err != nil {
				return err
			}
			s, err := f.open(true)
			if err != nil {
				return err
			}
			defer s.Close()
			all, err := s.All(context.Background())
			if err != nil {
				return exitError{code: 1, err: err}
			}
			if cost := deleteCost(all, id, mayBeTrimmed(filepath.Dir(s.Dir()))); cost != "" {
				in := cmd.InOrStdin()
				ok, err := confirm(cmd.ErrOrStderr(), in, isTerminalReader(in), yes, cost)
				if err != nil {
					return err
				}
				if !ok {
					return exitError{code: 1, err: fmt.Errorf("checkpoint %d not deleted", id)}
				}
			}
			if err := s.Delete(context.Background(), id); err != nil {
				if errors.Is(err, checkpoint.ErrNotFound) {
					return exitError{code: 1, err: fmt.Errorf("no checkpoint %d in %s", id, s.Dir())}
				}
				return exitError{code: 1, err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted checkpoint %d\n", id)
			return nil
		},
	}
	del.Flags().BoolVar(&yes, "yes", false, "delete the newest checkpoint of a job without asking")
	return del
}

// deleteCost says what deleting checkpoint id costs when it is the newest
// record of its job that a resumed run would go on from, and "" when it
// costs nothing (an older checkpoint, a savepoint, a damaged record, an
// unknown id): how many input records a resumed run reads again, from the
// record before it of the same job, or from the beginning. trimmed says
// that the embedded broker may have deleted the start of the input, which
// a start from the beginning needs (see checkInputWhole).
func deleteCost(all []*checkpoint.Completed, id int64, trimmed bool) string {
	var c, prev *checkpoint.Completed
	for _, x := range all {
		if x.ID == id {
			c = x
		}
	}
	if c == nil || c.Kind != checkpoint.KindCheckpoint {
		return ""
	}
	for _, x := range all {
		switch {
		case x.Job != c.Job || x.ID == id:
		case x.ID > id:
			return "" // a resumed run goes on from the newer one
		case prev == nil || x.ID > prev.ID:
			prev = x
		}
	}
	n := recordsAfter(prev, c)
	if prev == nil && trimmed {
		return fmt.Sprintf("checkpoint %d is the last of job %s: a resumed run would start from the beginning, "+
			"and the embedded broker may have deleted the first of the %s input records before it; if it has, "+
			"the run is refused (nothing is written twice) and only --fresh goes on.", id, c.Job, thousands(n))
	}
	if prev == nil {
		return fmt.Sprintf("checkpoint %d is the newest of job %s: a resumed run will start from the beginning "+
			"and read again all the %s input records before it (the output they made is not written twice).", id, c.Job, thousands(n))
	}
	return fmt.Sprintf("checkpoint %d is the newest of job %s: a resumed run will go back to %s %d "+
		"and read again the %s input records after it (the output they made is not written twice).", id, c.Job, prev.Kind, prev.ID, thousands(n))
}

// mayBeTrimmed reports whether the broker's retention may have deleted
// records of the state dir's input: it saves the verification ledger, with
// an input position above 0, before it deletes below it.
func mayBeTrimmed(stateDir string) bool {
	l, err := verify.Load(filepath.Join(stateDir, "verify", "ledger"))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // damaged: say the worst
	}
	for _, parts := range l.Positions {
		for _, o := range parts {
			if o > 0 {
				return true
			}
		}
	}
	return false
}

// recordsAfter is how many input records c read after prev (from the
// beginning when prev is nil): the sum over its sources' partitions of the
// difference of their offsets.
func recordsAfter(prev, c *checkpoint.Completed) int64 {
	var from checkpoint.Offsets
	if prev != nil {
		from = prev.SourceOffsets()
	}
	var n int64
	for topic, parts := range c.SourceOffsets() {
		for p, off := range parts {
			n += max(0, off-from[topic][p])
		}
	}
	return n
}

// confirm shows warning and asks on the terminal in whether to go on. With
// yes it only shows it; without a terminal to ask on it refuses, in one
// line, as a usage error (exit 2).
func confirm(w io.Writer, in io.Reader, terminal, yes bool, warning string) (bool, error) {
	if yes {
		fmt.Fprintln(w, warning)
		return true, nil
	}
	if !terminal {
		return false, usagef("%s Not deleted: no terminal to ask on; add --yes to delete it", warning)
	}
	fmt.Fprintln(w, warning)
	return askYes(w, in, "Delete it?"), nil
}
