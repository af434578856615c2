package runtime

import (
	"encoding/json"
	"fmt"
	"time"

	"faultline/checkpoint"
	"faultline/runtime/spec"
	"faultline/runtime/verify"
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
	BadRecords *ReportBadRecords `json:"bad_records,omitempty"`
	// ReplaySkipped counts the records the sink did not write again after
	// a restore past a damaged checkpoint, because the output held them.
	ReplaySkipped int64 `json:"replay_skipped,omitempty"`
	// StateTTL is what the join's state TTL did (absent without one).
	StateTTL      *ReportStateTTL `json:"state_ttl,omitempty"`
	GaveUp        string          `json:"gave_up,omitempty"`
	Savepoint     int64           `json:"savepoint,omitempty"`
	Verify        Verification    `json:"verify"`
	ElapsedMs     int64           `json:"elapsed_ms"`
	ThroughputRps int64           `json:"throughput_rps"`
	EventsDropped int64           `json:"events_dropped,omitempty"`
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

// Verification is the oracle's verdict on the committed output.
type Verification struct {
	Expected   int `json:"expected"`
	Committed  int `json:"committed"`
	Duplicates int `json:"duplicates"`
	Lost       int `json:"lost"`
	Unexpected int `json:"unexpected"`
	// BadInput counts input records that are not orders or payments at
	// all (poison): no output is expected for them.
	BadInput int `json:"bad_input,omitempty"`
	// NotJoined counts the paid orders whose order and payment are more
	// than the join's state TTL apart in event time: the join does not
	// join them, so they are not expected.
	NotJoined int `json:"not_joined,omitempty"`
	// AfterCheckpoint counts, in at-least-once runs stopped before the end,
	// the output records made from input read after the last completed
	// checkpoint: a sink without aligned barriers or transactions lets
	// them out before a checkpoint covers them. They are neither expected
	// nor unexpected; the next run reads their input again.
	AfterCheckpoint int  `json:"after_checkpoint,omitempty"`
	OK              bool `json:"ok"`
	// Guarantee is what OK was judged against: exactly-once (no duplicates,
	// nothing lost) or at-least-once (nothing lost; duplicates are the
	// expected price of not aligning barriers).
	Guarantee string `json:"guarantee"`
}

// InputReader yields a job's raw input records, read directly from where
// the job reads them.
type InputReader interface {
	// ReadInput calls f with every record of topic below bounds (partition
	// → offset; nil: everything there is) and its event time in Unix
	// milliseconds (0: not known).
	ReadInput(topic string, bounds map[int32]int64, f func(value []byte, eventTime int64) error) error
	// ReadInputAfter calls f with every record of topic from bounds on
	// (partition → offset; a partition not named: from its start) to the
	// end there is now.
	ReadInputAfter(topic string, bounds map[int32]int64, f func(value []byte, eventTime int64) error) error
}

// Expect is what the committed output of a job must hold.
type Expect struct {
	// Kind is the job spec's verify kind: "paid-orders" (every order that
	// has a payment, exactly once) or "orders" (every order exactly once).
	Kind string
	// StateTTL is the join's state TTL: a paid order whose order and
	// payment are further apart in event time is not expected (0: every
	// paid order is).
	StateTTL time.Duration
}

// ExpectOf is what job's output must hold.
func ExpectOf(job *spec.Job) Expect {
	e := Expect{Kind: job.Verify}
	for _, op := range job.Operators {
		if op.Type == spec.TypeJoin {
			e.StateTTL = max(e.StateTTL, op.StateTTL)
		}
	}
	return e
}

// ReadInputAfter implements InputReader for the generator.
func (g *Generator) ReadInputAfter(topic string, bounds map[int32]int64, f func([]byte, int64) error) error {
	for p := 0; p < g.partitions; p++ {
		for off := bounds[int32(p)]; off < g.EndOffset(topic, p); off++ {
			b, ok := g.Read(topic, p, off)
			if !ok {
				break
			}
			if err := f(b, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadInput implements InputReader for the generator.
func (g *Generator) ReadInput(topic string, bounds map[int32]int64, f func([]byte, int64) error) error {
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
			if err := f(b, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// Verify checks the committed output of a job against its input, read
// directly by in and decoded on its own, independently of the job's
// operators. guarantee is "exactly-once" or "at-least-once". bounds limits
// the input to the offsets a checkpoint covered; nil means the whole
// (bounded) input.
func Verify(in InputReader, expect Expect, guarantee string, bounds checkpoint.Offsets, out []OutputRecord) (Verification, error) {
	return VerifyOn(verify.New(expect.Kind, expect.StateTTL), in, guarantee, bounds, out)
}

// VerifyOn is Verify going on from what ledger l has accounted for already
// (records an earlier run read before the embedded broker deleted them): in
// reads the input from where l stopped, out is the output after l's
// position. It adds everything to l.
func VerifyOn(l *verify.Ledger, in InputReader, guarantee string, bounds checkpoint.Offsets, out []OutputRecord) (Verification, error) {
	topics := []string{TopicOrders}
	if l.Kind() == verify.PaidOrders {
		topics = append(topics, TopicPayments)
	}
	for _, topic := range topics {
		var b map[int32]int64
		if bounds != nil {
			b = bounds[topic]
			if b == nil {
				b = map[int32]int64{}
			}
		}
		err := in.ReadInput(topic, b, func(v []byte, t int64) error {
			id, _ := OrderIDOf(v) // not JSON or no order id: bad input
			l.Input(topic, id, t)
			return nil
		})
		if err != nil {
			return Verification{}, err
		}
	}
	for _, r := range out {
		id, ok := OrderIDOf(r.Value)
		if !ok {
			return Verification{}, fmt.Errorf("output record %q: not JSON", r.Value)
		}
		l.Output(id, true)
	}
	res := l.Result()
	v := Verification{Expected: res.Expected, Committed: res.Committed, Duplicates: res.Duplicates, Lost: res.Lost,
		Unexpected: res.Unexpected, BadInput: res.BadInput, NotJoined: res.NotJoined, Guarantee: guarantee}
	if v.Unexpected > 0 && bounds != nil && guarantee == "at-least-once" {
		after, err := afterCheckpoint(l, in, topics, bounds)
		if err != nil {
			return Verification{}, err
		}
		v.Unexpected -= after
		v.AfterCheckpoint = after
	}
	v.OK = v.Lost == 0 && v.Unexpected == 0 && (v.Duplicates == 0 || guarantee == "at-least-once")
	return v, nil
}

// afterCheckpoint counts the ids l finds unexpected that the input after
// bounds (the last completed checkpoint's offsets) does expect: output an
// at-least-once job let out before a checkpoint covered its input. l is
// left as it was: the next run accounts for that input itself.
func afterCheckpoint(l *verify.Ledger, in InputReader, topics []string, bounds checkpoint.Offsets) (int, error) {
	const order, payment = 1, 2
	sides := map[string]byte{}
	l.EachUnexpected(func(id string) { sides[id] = 0 })
	l.Each(func(id string, o, p, _ bool, _ int) {
		if b, ok := sides[id]; ok {
			if o {
				b |= order
			}
			if p {
				b |= payment
			}
			sides[id] = b
		}
	})
	for _, topic := range topics {
		side := byte(order)
		if topic == TopicPayments {
			side = payment
		}
		err := in.ReadInputAfter(topic, bounds[topic], func(v []byte, _ int64) error {
			if id, ok := OrderIDOf(v); ok {
				if b, held := sides[string(id)]; held {
					sides[string(id)] = b | side
				}
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("read the input after the last checkpoint: %w", err)
		}
	}
	want := byte(order)
	if l.Kind() == verify.PaidOrders {
		want = order | payment
	}
	n := 0
	for _, b := range sides {
		if b&want == want {
			n++
		}
	}
	return n, nil
}

// tooFarApart reports whether two event times (Unix ms; 0: not known) are
// more than ttl apart, so that the join does not join them (ttl 0: never).
func tooFarApart(a, b int64, ttl time.Duration) bool {
	return ttl > 0 && a != 0 && b != 0 && max(a-b, b-a) > ttl.Milliseconds()
}
