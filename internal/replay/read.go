// Package replay plays a recorded session (the JSON lines a run prints
// headless and the terminal UI records in its state dir) back in the
// terminal UI with no job running: the events come at their recorded
// pace, 1×, 4× or one at a time, and the panes are drawn from what they
// say (the job graph, the subtasks' statuses and load, the checkpoints,
// the restarts, the live verification's line). Nothing is invented: what
// the events do not say (queues, barriers in flight, per-subtask
// acknowledgements) stays empty.
package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/faultline-dev/faultline/runtime/view"
)

// Session is one run's record: its events, from the first before its
// run_started, and its report when the record has one.
type Session struct {
	Events []view.Stamped
	Report json.RawMessage
}

// Read reads a record's sessions, oldest first: a run_started begins a
// session (with the events just before it, the broker's start), a report
// ends it. A line that is neither an event nor a report is an error that
// names it, but for a last line with no end that does not parse: what a
// process killed in the middle of a write leaves, left out.
func Read(r io.Reader) ([]Session, error) {
	var out []Session
	var cur Session
	started := false
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		raw, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, err
		}
		cut := err == io.EOF && len(raw) > 0 // the last line, with no end
		if err == io.EOF && len(raw) == 0 {
			break
		}
		line := bytes.TrimSpace(raw)
		if len(line) == 0 {
			if err == io.EOF {
				break
			}
			continue
		}
		if cut && !json.Valid(line) {
			break
		}
		var report struct {
			Report json.RawMessage `json:"report"`
		}
		if json.Unmarshal(line, &report) == nil && report.Report != nil {
			cur.Report = report.Report
			out, cur, started = append(out, cur), Session{}, false
			if err == io.EOF {
				break
			}
			continue
		}
		var e view.Stamped
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, ok := e.Event.(view.RunStarted); ok {
			if started {
				out, cur = append(out, cur), Session{Events: nil}
			}
			started = true
		}
		cur.Events = append(cur.Events, e)
		if err == io.EOF {
			break
		}
	}
	switch {
	case started:
		out = append(out, cur)
	case len(cur.Events) > 0 && len(out) > 0:
		// Events after a report with no run_started of their own (a run's
		// last events recorded after its report by an older faultline):
		// the session before's.
		last := &out[len(out)-1]
		last.Events = append(last.Events, cur.Events...)
	case len(cur.Events) > 0:
		out = append(out, cur)
	}
	return out, nil
}
