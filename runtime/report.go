package runtime

import (
	"encoding/json"
	"fmt"

	"faultline/checkpoint"
)

// Report is the final line of a headless run, as DESIGN.md's headless
// contract fixes it. Field names may grow; these stay.
type Report struct {
	Job         string            `json:"job"`
	Status      string            `json:"status"`
	Mode        string            `json:"mode"`
	Unaligned   bool              `json:"unaligned"`
	RecordsIn   int64             `json:"records_in"`
	RecordsOut  int64             `json:"records_out"`
	Checkpoints ReportCheckpoints `json:"checkpoints"`
	Restarts    int               `json:"restarts"`
	Failures    []ReportFailure   `json:"failures"`
	// Failover is the failover strategy; Failovers what each failover
	// restarted; LostByFailover the records individual failover lost.
	Failover       string           `json:"failover,omitempty"`
	Failovers      []ReportFailover `json:"failovers,omitempty"`
	LostByFailover int64            `json:"lost_by_failover,omitempty"`
	// BadRecords counts the unparseable records skipped or dead-lettered
	// (--on-bad-record).
	BadRecords    *ReportBadRecords `json:"bad_records,omitempty"`
	GaveUp        string            `json:"gave_up,omitempty"`
	Savepoint     int64             `json:"savepoint,omitempty"`
	Verify        Verification      `json:"verify"`
	ElapsedMs     int64             `json:"elapsed_ms"`
	ThroughputRps int64             `json:"throughput_rps"`
	EventsDropped int64             `json:"events_dropped,omitempty"`
}

// ReportCheckpoints sums up the run's checkpoints.
type ReportCheckpoints struct {
	Completed     int     `json:"completed"`
	Failed        int     `json:"failed"`
	LastCompleted int64   `json:"last_completed"`
	RestoredFrom  []int64 `json:"restored_from"`
}

// ReportFailure is one failure of the run.
type ReportFailure struct {
	AtMs  int64  `json:"at_ms"`
	Task  string `json:"task,omitempty"`
	Fault string `json:"fault,omitempty"`
	Error string `json:"error,omitempty"`
}

// ReportBadRecords counts the records the job could not parse.
type ReportBadRecords struct {
	Skipped      int64 `json:"skipped"`
	DeadLettered int64 `json:"dead_lettered"`
}

// ReportFailover is one failover of the run.
type ReportFailover struct {
	AtMs      int64    `json:"at_ms"`
	Strategy  string   `json:"strategy"`
	Failed    string   `json:"failed,omitempty"`
	Restarted []string `json:"restarted"`
}

// NewReport builds the report of a run.
func NewReport(job, mode string, res *Result, v Verification, dropped int64) Report {
	r := Report{
		Job: job, Status: string(res.Status), Mode: mode,
		RecordsIn: res.RecordsIn, RecordsOut: int64(v.Committed),
		Restarts: res.Restarts, GaveUp: res.GaveUp, Verify: v, Savepoint: res.ExitSavepoint,
		ElapsedMs: res.Elapsed.Milliseconds(), EventsDropped: dropped,
		Checkpoints: ReportCheckpoints{
			Completed: res.Checkpoints.Completed, Failed: res.Checkpoints.Failed,
			LastCompleted: res.Checkpoints.LastCompleted, RestoredFrom: res.RestoredFrom,
		},
		Failures: []ReportFailure{},
	}
	if r.Checkpoints.RestoredFrom == nil {
		r.Checkpoints.RestoredFrom = []int64{}
	}
	r.LostByFailover = res.LostByFailover
	r.Failover = res.Failover
	if res.BadSkipped+res.BadDeadLettered > 0 {
		r.BadRecords = &ReportBadRecords{Skipped: res.BadSkipped, DeadLettered: res.BadDeadLettered}
	}
	for _, f := range res.Failovers {
		r.Failovers = append(r.Failovers, ReportFailover{AtMs: f.At.Milliseconds(), Strategy: f.Strategy, Failed: f.Failed, Restarted: f.Restarted})
	}
	for _, f := range res.Failures {
		r.Failures = append(r.Failures, ReportFailure{AtMs: f.At.Milliseconds(), Task: f.Task, Fault: f.Fault, Error: f.Error})
	}
	if s := res.Elapsed.Seconds(); s > 0 {
		r.ThroughputRps = int64(float64(res.RecordsIn) / s)
	}
	return r
}

// MarshalJSON wraps the report as {"report":{…}}.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		Report plain `json:"report"`
	}{plain(r)})
}

// Verification is the oracle's verdict on the committed output.
type Verification struct {
	Expected   int `json:"expected"`
	Committed  int `json:"committed"`
	Duplicates int `json:"duplicates"`
	Lost       int `json:"lost"`
	Unexpected int `json:"unexpected"`
	// BadInput counts input records that are not orders or payments at
	// all (poison): no output is expected for them.
	BadInput int  `json:"bad_input,omitempty"`
	OK       bool `json:"ok"`
	// Guarantee is what OK was judged against: exactly-once (no duplicates,
	// nothing lost) or at-least-once (nothing lost; duplicates are the
	// expected price of not aligning barriers).
	Guarantee string `json:"guarantee"`
}

// InputReader yields a job's raw input records, read directly from where
// the job reads them.
type InputReader interface {
	// ReadInput calls f with every record of topic below bounds (partition
	// → offset; nil: everything there is).
	ReadInput(topic string, bounds map[int32]int64, f func([]byte) error) error
}

// ReadInput implements InputReader for the generator.
func (g *Generator) ReadInput(topic string, bounds map[int32]int64, f func([]byte) error) error {
	for p := 0; p < g.partitions; p++ {
		n := g.EndOffset(topic, p)
		if bounds != nil {
			n = bounds[int32(p)]
		}
		for off := int64(0); off < n; off++ {
			b, ok := g.Read(topic, p, off)
			if !ok {
				return fmt.Errorf("input %s/%d ends before offset %d", topic, p, off)
			}
			if err := f(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// Verify checks the committed output of a job against its input, read
// directly by in and decoded on its own, independently of the job's
// operators. expect is the job spec's verify kind: "paid-orders" (every
// order that has a payment, exactly once) or "orders" (every order exactly
// once). guarantee is "exactly-once" or "at-least-once". bounds limits the
// input to the offsets a checkpoint covered; nil means the whole (bounded)
// input.
func Verify(in InputReader, expect, guarantee string, bounds checkpoint.Offsets, out []OutputRecord) (Verification, error) {
	type idOnly struct {
		OrderID string `json:"order_id"`
	}
	badInput := 0
	read := func(topic string) (map[string]bool, error) {
		ids := map[string]bool{}
		var b map[int32]int64
		if bounds != nil {
			b = bounds[topic]
			if b == nil {
				b = map[int32]int64{}
			}
		}
		err := in.ReadInput(topic, b, func(v []byte) error {
			var r idOnly
			if err := json.Unmarshal(v, &r); err != nil || r.OrderID == "" {
				badInput++
				return nil
			}
			ids[r.OrderID] = true
			return nil
		})
		return ids, err
	}
	orders, err := read(TopicOrders)
	if err != nil {
		return Verification{}, err
	}
	expected := orders
	if expect == "paid-orders" {
		payments, err := read(TopicPayments)
		if err != nil {
			return Verification{}, err
		}
		expected = map[string]bool{}
		for id := range orders {
			if payments[id] {
				expected[id] = true
			}
		}
	}
	seen := map[string]int{}
	v := Verification{Expected: len(expected), Committed: len(out), Guarantee: guarantee, BadInput: badInput}
	for _, r := range out {
		var rec idOnly
		if err := json.Unmarshal(r.Value, &rec); err != nil {
			return v, fmt.Errorf("output record %q: %w", r.Value, err)
		}
		seen[rec.OrderID]++
	}
	for id, n := range seen {
		if !expected[id] {
			v.Unexpected++
		}
		if n > 1 {
			v.Duplicates++
		}
	}
	for id := range expected {
		if seen[id] == 0 {
			v.Lost++
		}
	}
	v.OK = v.Lost == 0 && v.Unexpected == 0 && (v.Duplicates == 0 || guarantee == "at-least-once")
	return v, nil
}
