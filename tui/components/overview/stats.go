package overview

import (
	"slices"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
)

// Spread is min, average, max and the 99th percentile of a set of figures
// (Flink: StatsSummary), over N of them.
type Spread struct {
	N                  int
	Min, Avg, Max, P99 float64
}

// spreadOf summarises xs (nothing: N 0). The percentile is the nearest
// rank: the smallest figure at or above 99 % of them.
func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	rank := max((99*len(s)+99)/100, 1) // ceil(0.99 n)
	return Spread{N: len(s), Min: s[0], Avg: sum / float64(len(s)), Max: s[len(s)-1], P99: s[rank-1]}
}

// Row is one figure of the summary: its name and its spread, shown as a
// duration or a size.
type Row struct {
	Name     string
	Spread   Spread
	Duration bool // a duration in nanoseconds; else a size in bytes
}

// Summary is the checkpoint summary of the history's completed
// checkpoints (Flink: Checkpoints → Summary): per checkpoint its
// end-to-end duration on the job's clock, its checkpointed (incremental)
// and full size, its processed and persisted in-flight data; per subtask
// acknowledgement its sync and async duration, alignment and start delay.
// Checkpoints is how many it covers, Acks how many acknowledgements.
type Summary struct {
	Checkpoints, Acks int
	PerCheckpoint     []Row
	PerSubtask        []Row
}

// Summarize is the Summary of snap's history.
func Summarize(snap *view.Snapshot) Summary {
	var e2e, incr, full, processed, persisted []float64
	var syncs, asyncs, aligns, delays []float64
	n := 0
	for i := range snap.Checkpoints.History {
		c := &snap.Checkpoints.History[i]
		if c.Status != view.StatusCompleted {
			continue
		}
		n++
		e2e = append(e2e, float64(common.CheckpointDuration(snap, c)))
		incr = append(incr, float64(c.IncrementalBytes))
		full = append(full, float64(c.FullBytes))
		processed = append(processed, float64(c.ProcessedInFlight))
		persisted = append(persisted, float64(c.PersistedInFlight))
		for _, a := range c.AckedTasks {
			if a.Finished {
				continue // carried over: no snapshot was taken
			}
			syncs = append(syncs, float64(a.SyncDuration))
			asyncs = append(asyncs, float64(a.AsyncDuration))
			aligns = append(aligns, float64(a.Alignment))
			delays = append(delays, float64(a.StartDelay))
		}
	}
	return Summary{
		Checkpoints: n, Acks: len(syncs),
		PerCheckpoint: []Row{
			{"end to end", spreadOf(e2e), true},
			{"checkpointed (incr.)", spreadOf(incr), false},
			{"full size", spreadOf(full), false},
			{"processed in-flight", spreadOf(processed), false},
			{"persisted in-flight", spreadOf(persisted), false},
		},
		PerSubtask: []Row{
			{"sync duration", spreadOf(syncs), true},
			{"async duration", spreadOf(asyncs), true},
			{"alignment", spreadOf(aligns), true},
			{"start delay", spreadOf(delays), true},
		},
	}
}

// Reported are the rows of a job's own summary of its completed
// checkpoints (an attached job's), in PerCheckpoint's order.
func Reported(r *view.ReportedSummary) []Row {
	d := func(s view.DurationStats) Spread {
		return Spread{Min: float64(s.Min), Avg: float64(s.Avg), Max: float64(s.Max), P99: float64(s.P99)}
	}
	b := func(s view.SizeStats) Spread {
		return Spread{Min: float64(s.Min), Avg: float64(s.Avg), Max: float64(s.Max), P99: float64(s.P99)}
	}
	return []Row{
		{"end to end", d(r.EndToEnd), true},
		{"checkpointed (incr.)", b(r.CheckpointedSize), false},
		{"full size", b(r.StateSize), false},
		{"processed in-flight", b(r.ProcessedData), false},
		{"persisted in-flight", b(r.PersistedData), false},
	}
}

// cell is one figure of r as the table shows it.
func (r Row) cell(x float64) string {
	if r.Duration {
		return common.HumanDuration(time.Duration(x))
	}
	return common.HumanBytes(int64(x))
}
