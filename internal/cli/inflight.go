package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
)

// What checkpoints inspect shows of unaligned checkpoints (Flink FLIP-76):
// whether the barriers were aligned, the in-flight data each subtask
// processed during the alignment and persisted with its snapshot, and the
// channel state it persisted, channel by channel.

// channelJSON is one input channel's channel state: the records that were
// in flight in it when the subtask took its snapshot, replayed into it on
// recovery.
type channelJSON struct {
	// Channel is the name the snapshot keeps it under; From the upstream
	// subtask, Input the subtask's logical input it feeds.
	Channel string `json:"channel"`
	From    string `json:"from,omitempty"`
	Input   int    `json:"input"`
	Records int    `json:"records"`
	Bytes   int64  `json:"bytes"`
	Error   string `json:"error,omitempty"`
}

// taskChannels is what inspect read of one subtask's channel state.
type taskChannels struct {
	channels []channelJSON
	err      error // the blob could not be read or decoded, or a channel not
}

// hasInFlight reports whether a subtask's acknowledgement says it took its
// snapshot unaligned or counted in-flight data.
func hasInFlight(a checkpoint.SubtaskAck) bool {
	return persistedInFlight(a) || a.ProcessedInFlight > 0
}

// persistedInFlight reports whether a subtask may have stored channel
// state, by its acknowledgement.
func persistedInFlight(a checkpoint.SubtaskAck) bool {
	return a.Unaligned || a.TimedOut || a.PersistedInFlight > 0 || a.PersistedRecords > 0
}

// readChannels reads the channel state of c's subtasks: of those that
// persisted in-flight data or took their snapshot unaligned, by their
// acknowledgements (the others have none, and their state blobs, which may
// be large, are not read).
func readChannels(ctx context.Context, s checkpoint.StateStorage, c *checkpoint.Completed) map[checkpoint.TaskID]taskChannels {
	out := map[checkpoint.TaskID]taskChannels{}
	for id, a := range c.Tasks {
		if !persistedInFlight(a) {
			continue
		}
		out[id] = channelsOf(ctx, s, id, a.Handle)
	}
	return out
}

// channelsOf reads the channel state in the blob h of subtask to.
func channelsOf(ctx context.Context, s checkpoint.StateStorage, to checkpoint.TaskID, h checkpoint.Handle) taskChannels {
	b, err := s.GetState(ctx, h)
	if err != nil {
		return taskChannels{err: err}
	}
	st, err := backend.DecodeSubtaskState(b)
	if err != nil {
		return taskChannels{err: err}
	}
	var tc taskChannels
	for name, v := range st.Channels {
		ch := channelJSON{Channel: name, Bytes: int64(len(v))}
		var err error
		if ch.Input, ch.From, ch.Records, err = runtime.InFlightChannel(name, v, orders.Types{}.NewInFlightDecoder()); err != nil {
			ch.Error = err.Error()
			if tc.err == nil {
				tc.err = fmt.Errorf("channel %q: %w", name, err)
			}
		}
		tc.channels = append(tc.channels, ch)
	}
	slices.SortFunc(tc.channels, func(x, y channelJSON) int {
		return cmp.Or(cmp.Compare(x.Input, y.Input), compareTasks(x.From, y.From), cmp.Compare(x.Channel, y.Channel))
	})
	return tc
}

// compareTasks orders subtask names as SortedTasks does: by operator, then
// index (parse-orders/2 before parse-orders/10).
func compareTasks(a, b string) int {
	ao, ai, _ := strings.Cut(a, "/")
	bo, bi, _ := strings.Cut(b, "/")
	x, errA := strconv.Atoi(ai)
	y, errB := strconv.Atoi(bi)
	if ao != bo || errA != nil || errB != nil {
		return cmp.Compare(a, b)
	}
	return cmp.Compare(x, y)
}

// inFlightTotals adds up c's in-flight figures and lists, sorted, the
// subtasks whose alignment timed out.
func inFlightTotals(c *checkpoint.Completed) (unaligned bool, timedOut []string, persisted, records, processed int64) {
	for _, id := range c.SortedTasks() {
		a := c.Tasks[id]
		unaligned = unaligned || a.Unaligned || a.TimedOut
		if a.TimedOut {
			timedOut = append(timedOut, id.String())
		}
		persisted += a.PersistedInFlight
		records += a.PersistedRecords
		processed += a.ProcessedInFlight
	}
	return unaligned, timedOut, persisted, records, processed
}

// barriersLine says how c's barriers were handled, and its in-flight data.
func barriersLine(c *checkpoint.Completed) string {
	unaligned, timedOut, persisted, records, processed := inFlightTotals(c)
	var b strings.Builder
	b.WriteString("barriers: ")
	switch {
	case len(timedOut) > 0:
		fmt.Fprintf(&b, "aligned, then unaligned: the alignment of %s timed out", strings.Join(timedOut, ", "))
	case unaligned:
		b.WriteString("unaligned")
	case c.Mode == "at-least-once":
		b.WriteString("not aligned (at-least-once)")
	default:
		b.WriteString("aligned")
	}
	var figures []string
	if processed > 0 {
		figures = append(figures, bytesHuman(processed)+" processed during the alignment")
	}
	if persisted > 0 || records > 0 || unaligned {
		figures = append(figures, fmt.Sprintf("%s in %s records persisted as channel state", bytesHuman(persisted), thousands(records)))
	}
	if len(figures) > 0 {
		b.WriteString("; in-flight data: " + strings.Join(figures, ", "))
	}
	return b.String()
}

// subtaskNote is the note inspect adds to a subtask's line.
func subtaskNote(a checkpoint.SubtaskAck) string {
	var notes []string
	switch {
	case a.TimedOut:
		notes = append(notes, "unaligned: its alignment timed out")
	case a.Unaligned:
		notes = append(notes, "unaligned")
	}
	if a.Finished {
		notes = append(notes, "finished earlier; state carried over")
	}
	return strings.Join(notes, "; ")
}

// channelStateError names the subtasks of c whose channel state cannot be
// read (nil: none).
func channelStateError(c *checkpoint.Completed, chans map[checkpoint.TaskID]taskChannels) error {
	var bad []string
	for _, id := range c.SortedTasks() {
		if tc, ok := chans[id]; ok && tc.err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", id, tc.err))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return exitError{code: 1, err: fmt.Errorf("%s %d: channel state unreadable: %s", c.Kind, c.ID, strings.Join(bad, "; "))}
}

// printChannels lists the channel state of c's subtasks, in their order.
func printChannels(out io.Writer, c *checkpoint.Completed, chans map[checkpoint.TaskID]taskChannels) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header, read := false, false
	for _, id := range c.SortedTasks() {
		tc, ok := chans[id]
		read = read || ok
		if !ok || len(tc.channels) == 0 && tc.err == nil {
			continue // nothing was in flight into it
		}
		if !header {
			fmt.Fprintln(out)
			fmt.Fprintln(out, "channel state (the records in flight at the snapshot, replayed into their channels on recovery):")
			fmt.Fprintln(tw, "CHANNEL\tRECORDS\tSIZE\t")
			header = true
		}
		if len(tc.channels) == 0 && tc.err != nil {
			fmt.Fprintf(tw, "→ %s\t\t\tunreadable: %v\n", id, tc.err)
			continue
		}
		for _, ch := range tc.channels {
			name := fmt.Sprintf("%s → %s, input %d", ch.From, id, ch.Input)
			if ch.From == "" {
				name = fmt.Sprintf("%q → %s", ch.Channel, id)
			}
			if ch.Error != "" {
				fmt.Fprintf(tw, "%s\t\t%s\tunreadable: %s\n", name, bytesHuman(ch.Bytes), ch.Error)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t\n", name, thousands(int64(ch.Records)), bytesHuman(ch.Bytes))
		}
	}
	if read && !header {
		fmt.Fprintln(out)
		fmt.Fprintln(out, "channel state: none (nothing was in flight at the snapshots)")
	}
	return tw.Flush()
}
