package runtime

import (
	"encoding/json"

	"github.com/faultline-dev/faultline/runtime/verify"
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
	// ReportFailovers (inlined in the JSON) are the failovers.
	ReportFailovers
	// BadRecords counts the unparseable records skipped or dead-lettered
	// (--on-bad-record).
	BadRecords *ReportBadRecords `json:"bad_records,omitempty"`
	// ReplaySkipped counts the records the sink did not write again after
	// a restore past a damaged checkpoint, because the output held them.
	ReplaySkipped int64 `json:"replay_skipped,omitempty"`
	// StateTTL is what the join's state TTL did (absent without one).
	StateTTL      *ReportStateTTL     `json:"state_ttl,omitempty"`
	GaveUp        string              `json:"gave_up,omitempty"`
	Savepoint     int64               `json:"savepoint,omitempty"`
	Verify        verify.Verification `json:"verify"`
	ElapsedMs     int64               `json:"elapsed_ms"`
	ThroughputRps int64               `json:"throughput_rps"`
	EventsDropped int64               `json:"events_dropped,omitempty"`
}

// ReportCheckpoints sums up the run's checkpoints.
type ReportCheckpoints struct {
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// FailedBy counts the failed ones by reason: expired, declined,
	// subsumed, storage failure, job failover (aborted as the job
	// restarted or stopped).
	FailedBy      map[string]int `json:"failed_by,omitempty"`
	LastCompleted int64          `json:"last_completed"`
	RestoredFrom  []int64        `json:"restored_from"`
}

// ReportFailure is one failure of the run.
type ReportFailure struct {
	AtMs  int64  `json:"at_ms"`
	Task  string `json:"task,omitempty"`
	Fault string `json:"fault,omitempty"`
	Error string `json:"error,omitempty"`
}

// ReportStateTTL is what the join's state TTL did: the paid orders not
// joined because their order and payment were more than ttl_ms apart in
// event time, and the waiting sides dropped (unpaid orders, mostly).
type ReportStateTTL struct {
	TTLMs     int64 `json:"ttl_ms"`
	NotJoined int64 `json:"not_joined"`
	Expired   int64 `json:"expired"`
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

// ReportFailovers are the run's failovers, inlined in the report's JSON:
// Failover is the failover strategy; Failovers what each failover
// restarted; LostByFailover the records individual failover lost.
type ReportFailovers struct {
	Failover       string           `json:"failover,omitempty"`
	Failovers      []ReportFailover `json:"failovers,omitempty"`
	LostByFailover int64            `json:"lost_by_failover,omitempty"`
}

// recordsOut is the records in the committed output, as the verification
// counted them; with the verification off, the records the sinks wrote.
func recordsOut(res *Result, v verify.Verification) int64 {
	if v.Off != "" {
		return res.RecordsWritten
	}
	return int64(v.Committed)
}

// NewReport builds the report of a run.
func NewReport(job, mode string, res *Result, v verify.Verification, dropped int64) Report {
	r := Report{
		Job: job, Status: string(res.Status), Mode: mode, Unaligned: res.Unaligned,
		RecordsIn: res.RecordsIn, RecordsOut: recordsOut(res, v),
		Restarts: res.Restarts, GaveUp: res.GaveUp, Verify: v, Savepoint: res.ExitSavepoint,
		ElapsedMs: res.Elapsed.Milliseconds(), EventsDropped: dropped,
		Checkpoints: ReportCheckpoints{
			Completed: res.Checkpoints.Completed, Failed: res.Checkpoints.Failed, FailedBy: res.Checkpoints.FailedBy,
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
	r.ReplaySkipped = res.ReplaySkipped
	if t := res.StateTTL; t.TTL > 0 {
		r.StateTTL = &ReportStateTTL{TTLMs: t.TTL.Milliseconds(), NotJoined: t.NotJoined, Expired: t.Expired}
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
