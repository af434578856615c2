package replay

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// A record of two sessions: the first ended with its report, the second
// (the newest) was killed.
const record = `{"event":"broker_started","at_ms":5,"schema":1,"ts":"2026-12-05T10:00:00.005Z","address":"127.0.0.1:9092","embedded":true,"log_dir":"/s/kafka"}
{"event":"run_started","at_ms":10,"schema":1,"ts":"2026-12-05T10:00:00.010Z","job":"orders","title":"orders ⋈ payments","mode":"exactly-once","checkpoint_interval_ms":500,"state_ttl_ms":60000,"operators":[{"name":"src","type":"source","parallelism":2,"topic":"orders"},{"name":"join","type":"join","parallelism":1,"inputs":[{"from":"src","kind":"hash","key":"order_id"}]}],"state_dir":"/s","log_file":"/s/faultline.log","records":0,"seed":1,"brokers":"127.0.0.1:9092","sink_guarantee":"exactly-once","checkpoint_dir":"/s/checkpoints","state_backend":"heap","incremental":false,"job_id":"x"}
{"event":"job_status","at_ms":11,"schema":1,"ts":"2026-12-05T10:00:00.011Z","status":"RUNNING"}
{"event":"task_status","at_ms":12,"schema":1,"ts":"2026-12-05T10:00:00.012Z","task":"join/0","status":"RUNNING","attempt":1}
{"event":"checkpoint_triggered","at_ms":500,"schema":1,"ts":"2026-12-05T10:00:00.500Z","id":1,"kind":"checkpoint"}
{"event":"checkpoint_completed","at_ms":520,"schema":1,"ts":"2026-12-05T10:00:00.520Z","id":1,"kind":"checkpoint","duration_ms":20,"size_bytes":900,"incremental_bytes":900,"max_alignment_us":1500,"unaligned":false,"persisted_in_flight_bytes":0,"processed_in_flight_bytes":64}
{"event":"task_load","at_ms":1000,"schema":1,"ts":"2026-12-05T10:00:01Z","tasks":[{"task":"join/0","busy_ms_per_s":600,"idle_ms_per_s":100,"backpressured_ms_per_s":300,"records_in":1000,"records_out":400}]}
{"event":"checkpoint_triggered","at_ms":1000,"schema":1,"ts":"2026-12-05T10:00:01Z","id":2,"kind":"checkpoint"}
{"event":"task_failed","at_ms":1100,"schema":1,"ts":"2026-12-05T10:00:01.100Z","task":"join/0","error":"join/0: injected fault: panic","fault":"panic","attempt":1}
{"event":"checkpoint_failed","at_ms":1101,"schema":1,"ts":"2026-12-05T10:00:01.101Z","id":2,"reason":"job failover","error":"boom"}
{"event":"restart_scheduled","at_ms":1102,"schema":1,"ts":"2026-12-05T10:00:01.102Z","strategy":"fixed-delay","delay_ms":500,"attempt":1,"description":"fixed-delay (attempts 10, delay 500ms)","failover":"full","tasks":["src/0","src/1","join/0"],"max_attempts":10}
{"event":"restored","at_ms":1700,"schema":1,"ts":"2026-12-05T10:00:01.700Z","checkpoint":1,"reason":"restarted"}
{"event":"task_load","at_ms":2000,"schema":1,"ts":"2026-12-05T10:00:02Z","tasks":[{"task":"join/0","busy_ms_per_s":50,"idle_ms_per_s":950,"backpressured_ms_per_s":0,"records_in":1500,"records_out":600}]}
{"event":"verify_status","at_ms":2001,"schema":1,"ts":"2026-12-05T10:00:02.001Z","committed":400,"duplicates":0,"lost":0,"as_of":1}
{"report":{"job":"orders","status":"CANCELED","verify":{"committed":400,"duplicates":0,"lost":0,"ok":true}}}
{"event":"run_started","at_ms":3,"schema":1,"ts":"2026-12-05T11:00:00.003Z","job":"orders","mode":"at-least-once","checkpoint_interval_ms":2000,"state_dir":"/s","log_file":"","records":0,"seed":1,"brokers":"b","sink_guarantee":"exactly-once","checkpoint_dir":"","state_backend":"heap","incremental":false}
`

func TestReadSplitsSessions(t *testing.T) {
	sessions, err := Read(strings.NewReader(record))
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 2 || len(sessions[0].Events) != 14 || sessions[0].Report == nil || len(sessions[1].Events) != 1 || sessions[1].Report != nil {
		t.Fatalf("sessions: %d; first %d events, report %s", len(sessions), len(sessions[0].Events), sessions[0].Report)
	}
	if _, err := Read(strings.NewReader(record + "not json\n")); err == nil || !strings.Contains(err.Error(), "line 17") {
		t.Errorf("a bad line: %v", err)
	}
	// Events recorded after the last session's report, with no
	// run_started of their own, are that session's.
	late := strings.Replace(record, "\n{\"event\":\"run_started\",\"at_ms\":3,", "\n{\"event\":\"job_status\",\"at_ms\":2002,\"schema\":1,\"status\":\"CANCELED\"}\n{\"event\":\"run_started\",\"at_ms\":3,", 1)
	if s, _ := Read(strings.NewReader(late[:strings.Index(late, "\n{\"event\":\"run_started\",\"at_ms\":3,")+1])); len(s) != 1 || len(s[0].Events) != 15 {
		t.Errorf("a late event at the end: %d sessions", len(s))
	}
	// A last line cut short (a process killed in a write) is left out;
	// the same line ended is not.
	cut := record + `{"event":"job_status","at_ms":9,"sch`
	if s, err := Read(strings.NewReader(cut)); err != nil || len(s) != 2 || len(s[1].Events) != 1 {
		t.Errorf("a cut last line: %v, %d sessions", err, len(s))
	}
	if _, err := Read(strings.NewReader(cut + "\n")); err == nil {
		t.Error("a damaged line that ends was left out")
	}
	// The last line without its end, whole, is read.
	whole := strings.TrimSuffix(record, "\n")
	if s, err := Read(strings.NewReader(whole)); err != nil || len(s) != 2 || len(s[1].Events) != 1 {
		t.Errorf("a whole last line with no end: %v", err)
	}
}

// The state after the first session's events is what its events say:
// the graph, the subtasks' load and restarts, the checkpoints with their
// figures, the restart and the failure, the verify line.
func TestStateIsWhatTheEventsSay(t *testing.T) {
	sessions, _ := Read(strings.NewReader(record))
	st := NewState()
	for _, e := range sessions[0].Events {
		st.Apply(e)
	}
	s := st.Snapshot()
	if s.Job.Name != "orders" || s.Job.Status != "RUNNING" || len(s.Operators) != 2 || len(s.Tasks) != 3 || s.Job.StateTTL != time.Minute {
		t.Fatalf("job %+v, operators %d, tasks %d", s.Job, len(s.Operators), len(s.Tasks))
	}
	join := s.Tasks["join/0"]
	if join.RecordsIn != 1500 || join.RateIn != 500 || join.Busy != 0.05 || join.BackPressure != view.BackPressureOK {
		t.Errorf("join/0: %+v", join)
	}
	cs := s.Checkpoints
	if cs.Completed != 1 || cs.Failed != 1 || cs.InProgress != 0 || len(cs.History) != 2 || cs.History[0].ID != 2 {
		t.Fatalf("checkpoints %+v", cs)
	}
	c1 := cs.History[1]
	if c1.Status != view.StatusCompleted || c1.Duration != 20*time.Millisecond || c1.MaxAlignment != 1500*time.Microsecond ||
		c1.ProcessedInFlight != 64 || !c1.Restored || c1.Acked != 3 {
		t.Errorf("checkpoint 1: %+v", c1)
	}
	if cs.History[0].Failure != "job failover: boom" {
		t.Errorf("checkpoint 2 failed with %q", cs.History[0].Failure)
	}
	r := s.Restart
	if r.Restarts != 1 || r.Status.MaxAttempts != 10 || r.Status.NextDelay != 500*time.Millisecond || r.LastFailed != "join/0" ||
		len(r.Failures) != 1 || r.Failures[0].Fault != "panic" || len(r.LastRestarted) != 3 {
		t.Errorf("restart %+v", r)
	}
	if v := s.Verify; !v.Available || v.Committed != 400 || v.AsOf != 1 {
		t.Errorf("verify %+v", v)
	}
}

// Paused, the player releases one event a step, and says when the session
// ends, with its report's verdict.
func TestPlayerStepsAndEnds(t *testing.T) {
	sessions, _ := Read(strings.NewReader(record))
	p := NewPlayer(sessions[0], 4)
	p.SetTempo(view.TempoFrozen)
	for range 2 {
		p.Step()
	}
	if s := p.Snapshot(); s.Job.Name != "orders" || s.Input.Tempo != view.TempoFrozen || len(p.out) != 2 {
		t.Fatalf("after two steps: job %q, tempo %v, %d events out", s.Job.Name, s.Input.Tempo, len(p.out))
	}
	for range len(sessions[0].Events) {
		p.Step()
	}
	var last view.Stamped
	for len(p.out) > 0 {
		last = <-p.out
	}
	n, ok := last.Event.(view.Notice)
	if !ok || !strings.Contains(n.Text, "end of the recorded session: job CANCELED") || !strings.Contains(n.Text, "ok true") {
		t.Fatalf("last event %#v", last.Event)
	}
	if _, err := p.TriggerCheckpoint(); err != ErrNoJob {
		t.Errorf("a replay took a checkpoint: %v", err)
	}
}
