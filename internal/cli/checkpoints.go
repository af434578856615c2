package cli

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
)

// checkpointDir is where a state dir keeps its checkpoints.
func checkpointDir(stateDir string) string { return filepath.Join(stateDir, "checkpoints") }

// checkpointsFlags are the flags every `faultline checkpoints` subcommand
// shares: the state dir and --json.
type checkpointsFlags struct {
	stateDir string
	asJSON   bool
}

// open opens the store read-only (list, inspect, verify) or to write
// (delete); neither creates anything where there is no store.
func (f *checkpointsFlags) open(write bool) (*badgerstore.Store, error) {
	dir := f.stateDir
	if dir == "" {
		d, err := defaultStateDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	cdir := checkpointDir(dir)
	s, err := waitForDying(cdir, func() (*badgerstore.Store, error) {
		if write {
			return badgerstore.Open(cdir, 0, badgerstore.Existing())
		}
		return badgerstore.OpenReadOnly(cdir)
	})
	if err != nil {
		return nil, exitError{code: 1, err: err}
	}
	return s, nil
}

// parseCheckpointID checks that arg is a checkpoint id, a whole number
// above 0, and returns it; anything else is a usage error.
func parseCheckpointID(arg string) (int64, error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("%q is not a checkpoint id (a whole number, see `faultline checkpoints list`)", arg)
	}
	return id, nil
}

// newCheckpointsCmd is `faultline checkpoints`: what the state dir holds.
func newCheckpointsCmd() *cobra.Command {
	f := &checkpointsFlags{}
	cmd := &cobra.Command{
		Use:   "checkpoints",
		Short: "List, inspect, verify and delete the checkpoints and savepoints in the state dir",
	}
	cmd.PersistentFlags().StringVar(&f.stateDir, "state-dir", "", "the state dir (default: faultline under the user's data directory)")
	cmd.PersistentFlags().BoolVar(&f.asJSON, "json", false, "print JSON instead of a table")
	cmd.AddCommand(newCheckpointsListCmd(f), newCheckpointsInspectCmd(f), newCheckpointsVerifyCmd(f), newCheckpointsDeleteCmd(f))
	return cmd
}

// newCheckpointsListCmd is `faultline checkpoints list`: the retained
// checkpoints and savepoints, and the damaged records, oldest first.
func newCheckpointsListCmd(f *checkpointsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the retained checkpoints and savepoints, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := f.open(false)
			if err != nil {
				return err
			}
			defer s.Close()
			all, bad, err := records(s)
			if err != nil {
				return err
			}
			return printList(cmd.OutOrStdout(), all, bad, f.asJSON)
		},
	}
}

// newCheckpointsInspectCmd is `faultline checkpoints inspect ID`: one
// checkpoint in full, with the channel state of its subtasks.
func newCheckpointsInspectCmd(f *checkpointsFlags) *cobra.Command {
	return &cobra.Command{
		Use:               "inspect ID",
		ValidArgsFunction: checkpointIDs(f),
		Short:             "Show one checkpoint: its subtasks' figures, state handles, source offsets and channel state",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseCheckpointID(args[0])
			if err != nil {
				return err
			}
			s, err := f.open(false)
			if err != nil {
				return err
			}
			defer s.Close()
			c, err := find(s, id)
			if err != nil {
				if verr := s.Verify(context.Background(), id); verr != nil && !errors.Is(verr, checkpoint.ErrNotFound) {
					return exitError{code: 1, err: fmt.Errorf("checkpoint %d is damaged: %s", id, why(id, verr))}
				}
				return err
			}
			return printInspect(cmd.OutOrStdout(), c, readChannels(context.Background(), s, c), f.asJSON)
		},
	}
}

// newCheckpointsVerifyCmd is `faultline checkpoints verify`: it checks
// the checksum of every state blob of every retained checkpoint.
func newCheckpointsVerifyCmd(f *checkpointsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "Read every state blob of every retained checkpoint and check its checksum",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := f.open(false)
			if err != nil {
				return err
			}
			defer s.Close()
			all, damaged, err := records(s)
			if err != nil {
				return err
			}
			type result struct {
				ID    int64  `json:"id"`
				Kind  string `json:"kind,omitempty"` // unknown for a damaged record
				OK    bool   `json:"ok"`
				Error string `json:"error,omitempty"`
			}
			var results []result
			bad := 0
			for _, c := range all {
				r := result{ID: c.ID, Kind: c.Kind.String(), OK: true}
				if err := s.Verify(context.Background(), c.ID); err != nil {
					r.OK, r.Error = false, why(c.ID, err)
					bad++
				}
				results = append(results, r)
			}
			for _, d := range damaged {
				results = append(results, result{ID: d.ID, OK: false, Error: d.Why})
				bad++
			}
			sort.Slice(results, func(i, j int) bool { return results[i].ID < results[j].ID })
			out := cmd.OutOrStdout()
			if f.asJSON {
				if results == nil {
					results = []result{}
				}
				json.NewEncoder(out).Encode(results)
			} else if len(results) == 0 {
				fmt.Fprintln(out, "no checkpoints in", s.Dir())
			} else {
				for _, r := range results {
					kind := cmp.Or(r.Kind, checkpoint.KindCheckpoint.String())
					if r.OK {
						fmt.Fprintf(out, "%s %d: ok\n", kind, r.ID)
					} else {
						fmt.Fprintf(out, "%s %d: DAMAGED: %s\n", kind, r.ID, r.Error)
					}
				}
			}
			if bad > 0 {
				return exitError{code: 1, err: fmt.Errorf("%d of %d checkpoints are damaged: a resumed run goes on from the newest intact one; "+
					"`faultline checkpoints delete ID` removes a damaged one", bad, len(results))}
			}
			return nil
		},
	}
}

// thousands writes n with a comma every three digits: 60,396.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// askYes asks question on w, with [y/N], and reads the answer from in:
// y or yes agrees, anything else (and the end of the input) does not.
func askYes(w io.Writer, in io.Reader, question string) bool {
	fmt.Fprint(w, question+" [y/N] ")
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(w)
		return false
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes"
}

// isTerminalReader tells whether r is a terminal.
func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// damagedRecord is a metadata record the store cannot read, or the newest
// checkpoint whose record is lost, and why.
type damagedRecord struct {
	ID      int64  `json:"id"`
	Damaged bool   `json:"damaged"`
	Why     string `json:"error"`
}

// records reads every record of the store: the intact checkpoints and
// savepoints, and the damaged or lost ones.
func records(s *badgerstore.Store) ([]*checkpoint.Completed, []damagedRecord, error) {
	all, err := s.All(context.Background())
	if err != nil {
		return nil, nil, exitError{code: 1, err: err}
	}
	bad, err := damagedRecords(s)
	if err != nil {
		return nil, nil, exitError{code: 1, err: err}
	}
	return all, bad, nil
}

// damagedRecords lists the damaged and lost records of s, ascending.
func damagedRecords(s *badgerstore.Store) ([]damagedRecord, error) {
	ids, err := s.Damaged(context.Background())
	if err != nil {
		return nil, exitError{code: 1, err: err}
	}
	out := make([]damagedRecord, 0, len(ids))
	for _, id := range ids {
		d := damagedRecord{ID: id, Damaged: true, Why: "unreadable"}
		if err := s.Verify(context.Background(), id); err != nil {
			d.Why = why(id, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// why is what Verify says about checkpoint id, without its prefix.
func why(id int64, err error) string {
	return strings.TrimPrefix(err.Error(), fmt.Sprintf("verify checkpoint %d: ", id))
}

func find(s checkpoint.Store, id int64) (*checkpoint.Completed, error) {
	all, err := s.All(context.Background())
	if err != nil {
		return nil, exitError{code: 1, err: err}
	}
	for _, c := range all {
		if c.ID == id {
			return c, nil
		}
	}
	return nil, exitError{code: 1, err: fmt.Errorf("no checkpoint %d (see `faultline checkpoints list`)", id)}
}

// checkpointJSON is a checkpoint as the --json output shows it.
type checkpointJSON struct {
	ID               int64                       `json:"id"`
	Kind             string                      `json:"kind"`
	Job              string                      `json:"job"`
	Mode             string                      `json:"mode"`
	TriggerTime      time.Time                   `json:"trigger_time"`
	DurationMs       int64                       `json:"duration_ms"`
	FrozenMs         int64                       `json:"frozen_ms,omitempty"`
	SizeBytes        int64                       `json:"size_bytes"`
	IncrementalBytes int64                       `json:"incremental_bytes"`
	Subtasks         int                         `json:"subtasks"`
	Offsets          map[string]map[string]int64 `json:"offsets"`
	// Unaligned is set when a subtask took its snapshot unaligned,
	// TimedOut lists those whose alignment timed out, switching the
	// checkpoint to unaligned; the in-flight figures add up the subtasks'.
	Unaligned                bool       `json:"unaligned"`
	TimedOut                 []string   `json:"timed_out,omitempty"`
	PersistedInFlightBytes   int64      `json:"persisted_in_flight_bytes"`
	PersistedInFlightRecords int64      `json:"persisted_in_flight_records"`
	ProcessedInFlightBytes   int64      `json:"processed_in_flight_bytes"`
	Tasks                    []taskJSON `json:"tasks,omitempty"`
}

type taskJSON struct {
	Task             string            `json:"task"`
	Handle           checkpoint.Handle `json:"handle"`
	SyncMs           float64           `json:"sync_ms"`
	AsyncMs          float64           `json:"async_ms"`
	AlignmentMs      float64           `json:"alignment_ms"`
	StartDelayMs     float64           `json:"start_delay_ms"`
	EndToEndMs       float64           `json:"end_to_end_ms"`
	AckTime          time.Time         `json:"ack_time"`
	Bytes            int64             `json:"bytes"`
	IncrementalBytes int64             `json:"incremental_bytes"`
	Finished         bool              `json:"finished,omitempty"`
	// CarriedOver: the subtask finished before the checkpoint; its state
	// is carried over from an earlier one, and its figures are left out.
	CarriedOver bool `json:"carried_over,omitempty"`
	// The subtask's figures of unaligned checkpoints (checkpoint.SubtaskAck),
	// and the channel state it persisted, or why it cannot be read.
	Unaligned                bool          `json:"unaligned,omitempty"`
	TimedOut                 bool          `json:"timed_out,omitempty"`
	PersistedInFlightBytes   int64         `json:"persisted_in_flight_bytes"`
	PersistedInFlightRecords int64         `json:"persisted_in_flight_records"`
	ProcessedInFlightBytes   int64         `json:"processed_in_flight_bytes"`
	Channels                 []channelJSON `json:"channels,omitempty"`
	ChannelStateError        string        `json:"channel_state_error,omitempty"`
}

// toJSON is c as --json shows it; withTasks adds its subtasks, with the
// channel state read of them (chans, nil: none read).
func toJSON(c *checkpoint.Completed, withTasks bool, chans map[checkpoint.TaskID]taskChannels) checkpointJSON {
	full, inc := c.Size()
	j := checkpointJSON{ID: c.ID, Kind: c.Kind.String(), Job: c.Job, Mode: c.Mode, TriggerTime: c.TriggerTime,
		DurationMs: c.Duration().Milliseconds(), FrozenMs: c.Frozen.Milliseconds(), SizeBytes: full, IncrementalBytes: inc, Subtasks: len(c.Tasks),
		Offsets: map[string]map[string]int64{}}
	j.Unaligned, j.TimedOut, j.PersistedInFlightBytes, j.PersistedInFlightRecords, j.ProcessedInFlightBytes = inFlightTotals(c)
	for topic, parts := range c.SourceOffsets() {
		m := map[string]int64{}
		for p, o := range parts {
			m[strconv.Itoa(int(p))] = o
		}
		j.Offsets[topic] = m
	}
	if withTasks {
		for _, id := range c.SortedTasks() {
			a := c.Tasks[id]
			tj := taskJSON{Task: id.String(), Handle: a.Handle,
				SyncMs: ms(a.SyncDuration), AsyncMs: ms(a.AsyncDuration), AlignmentMs: ms(a.Alignment), StartDelayMs: ms(a.StartDelay),
				EndToEndMs: ms(a.EndToEnd), AckTime: a.AckTime, Bytes: a.Bytes, IncrementalBytes: a.IncrementalBytes, Finished: a.Finished,
				Unaligned: a.Unaligned, TimedOut: a.TimedOut, PersistedInFlightBytes: a.PersistedInFlight,
				PersistedInFlightRecords: a.PersistedRecords, ProcessedInFlightBytes: a.ProcessedInFlight}
			if c.CarriedOver(id) {
				tj = taskJSON{Task: id.String(), Handle: a.Handle, AckTime: a.AckTime, Bytes: a.Bytes, Finished: true, CarriedOver: true}
			}
			if tc, ok := chans[id]; ok {
				tj.Channels = tc.channels
				if tc.err != nil {
					tj.ChannelStateError = tc.err.Error()
				}
			}
			j.Tasks = append(j.Tasks, tj)
		}
	}
	return j
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// printList prints the intact checkpoints as a table, then a line for each
// damaged one; with asJSON, one array of both, by id, the damaged ones
// marked "damaged": true.
func printList(out io.Writer, all []*checkpoint.Completed, damaged []damagedRecord, asJSON bool) error {
	if asJSON {
		list := []any{}
		i := 0
		for _, c := range all {
			for ; i < len(damaged) && damaged[i].ID < c.ID; i++ {
				list = append(list, damaged[i])
			}
			list = append(list, toJSON(c, false, nil))
		}
		for _, d := range damaged[i:] {
			list = append(list, d)
		}
		return json.NewEncoder(out).Encode(list)
	}
	switch {
	case len(all) > 0:
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tKIND\tJOB\tMODE\tTRIGGERED\tDURATION\tSIZE\tINCREMENTAL\tSUBTASKS")
		for _, c := range all {
			full, inc := c.Size()
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", c.ID, c.Kind, c.Job, c.Mode,
				c.TriggerTime.Local().Format("2006-01-02 15:04:05.000"), c.Duration().Round(time.Millisecond), bytesHuman(full), bytesHuman(inc), len(c.Tasks))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	case len(damaged) > 0:
		fmt.Fprintln(out, "no intact checkpoints")
	default:
		fmt.Fprintln(out, "no checkpoints")
	}
	for _, d := range damaged {
		fmt.Fprintf(out, "checkpoint %d: DAMAGED: %s\n", d.ID, d.Why)
	}
	return nil
}

// printInspect prints checkpoint c and the channel state read of its
// subtasks (chans); it returns an error, after printing all of it, when
// some channel state cannot be read.
func printInspect(out io.Writer, c *checkpoint.Completed, chans map[checkpoint.TaskID]taskChannels, asJSON bool) error {
	if asJSON {
		if err := json.NewEncoder(out).Encode(toJSON(c, true, chans)); err != nil {
			return err
		}
		return channelStateError(c, chans)
	}
	full, inc := c.Size()
	fmt.Fprintf(out, "%s %d of job %s (%s)\n", c.Kind, c.ID, c.Job, c.Mode)
	fmt.Fprintf(out, "triggered %s, completed after %s; state %s (%s written by this checkpoint)\n",
		c.TriggerTime.Local().Format("2006-01-02 15:04:05.000"), c.Duration().Round(time.Millisecond), bytesHuman(full), bytesHuman(inc))
	fmt.Fprintln(out, barriersLine(c))
	offs := c.SourceOffsets()
	topics := make([]string, 0, len(offs))
	for t := range offs {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		parts := make([]int, 0, len(offs[t]))
		for p := range offs[t] {
			parts = append(parts, int(p))
		}
		sort.Ints(parts)
		var b strings.Builder
		for _, p := range parts {
			fmt.Fprintf(&b, " p%d:%d", p, offs[t][int32(p)])
		}
		fmt.Fprintf(out, "source offsets %s:%s\n", t, b.String())
	}
	fmt.Fprintln(out)
	// The in-flight columns only for a checkpoint that has in-flight data.
	inFlight := false
	for _, a := range c.Tasks {
		inFlight = inFlight || hasInFlight(a)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	if inFlight {
		fmt.Fprintln(tw, "SUBTASK\tSYNC\tASYNC\tALIGNMENT\tSTART DELAY\tSIZE\tIN-FLIGHT PROCESSED\tIN-FLIGHT PERSISTED\tCHECKSUM\t")
	} else {
		fmt.Fprintln(tw, "SUBTASK\tSYNC\tASYNC\tALIGNMENT\tSTART DELAY\tSIZE\tCHECKSUM\t")
	}
	for _, id := range c.SortedTasks() {
		a := c.Tasks[id]
		size := bytesHuman(a.Bytes)
		if inFlight {
			size += "\t" + bytesHuman(a.ProcessedInFlight) + "\t" + bytesHuman(a.PersistedInFlight)
		}
		if c.CarriedOver(id) {
			// Its figures are the earlier checkpoint's.
			dash := "—\t—\t—\t—\t" + size
			fmt.Fprintf(tw, "%s\t%s\t%08x\t%s\n", id, dash, a.Handle.Checksum, "finished before this checkpoint; its state carried over")
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%08x\t%s\n", id, a.SyncDuration.Round(time.Microsecond), a.AsyncDuration.Round(time.Microsecond),
			a.Alignment.Round(time.Microsecond), a.StartDelay.Round(time.Microsecond), size, a.Handle.Checksum, subtaskNote(a))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := printChannels(out, c, chans); err != nil {
		return err
	}
	return channelStateError(c, chans)
}

func bytesHuman(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}
