// Package view is the plain, read-only data that the terminal UI draws and
// the headless mode prints: the lifecycle events of a run. It imports
// nothing of the engine, so that the UI can be built, tested and split into
// components without it.
package view

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Event is one lifecycle event of a run, a line of the headless contract
// (docs/USER_GUIDE.md, "Events"). Each event is a type of its own, whose
// JSON fields are the event's fields.
type Event interface {
	// Name is the event's name, snake_case, as the "event" field says.
	Name() string
}

// Fields is the event's fields as its JSON has them, by name.
func Fields(e Event) (map[string]json.RawMessage, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	return fields, nil
}

// Offsets are source offsets by topic and partition, as events show them.
type Offsets map[string]map[string]int64

// RunStarted: the run's settings, once the job is built.
type RunStarted struct {
	// JobID is the job's id, a new one each run (as Flink gives each
	// submission), as the REST API and faultline list know it.
	JobID      string `json:"job_id"`
	Job        string `json:"job"`
	Mode       string `json:"mode"`
	StateDir   string `json:"state_dir"`
	LogFile    string `json:"log_file"`
	EventsFile string `json:"events_file,omitempty"` // the session's record, when kept
	// Title and Operators are the job graph, as the terminal UI draws it
	// (a replay of the session draws it from them).
	Title     string     `json:"title,omitempty"`
	Operators []Operator `json:"operators,omitempty"`
	// StateTTLMs is the join's state TTL (0: none).
	StateTTLMs           int64  `json:"state_ttl_ms,omitempty"`
	Records              int64  `json:"records"`
	Seed                 int64  `json:"seed"`
	CheckpointIntervalMs int64  `json:"checkpoint_interval_ms"`
	Brokers              string `json:"brokers"`
	SinkGuarantee        string `json:"sink_guarantee"`
	CheckpointDir        string `json:"checkpoint_dir"`
	StateBackend         string `json:"state_backend"`
	Incremental          bool   `json:"incremental"`
}

// BrokerStarted: the embedded Kafka broker listens; Note says why not on
// the port asked for, when it is not.
type BrokerStarted struct {
	Address  string `json:"address"`
	Embedded bool   `json:"embedded"`
	LogDir   string `json:"log_dir"`
	Note     string `json:"note,omitempty"`
}

// BrokerDown: the broker-down fault took the embedded broker down for
// ForMs, or could not (Error).
type BrokerDown struct {
	ForMs int64  `json:"for_ms"`
	Error string `json:"error,omitempty"`
}

// BrokerUp: the embedded broker is back after the broker-down fault.
type BrokerUp struct {
	Address string `json:"address"`
}

// InputProgress: how far the writing of a bounded input has got.
type InputProgress struct {
	Records int64 `json:"records"`
	Of      int64 `json:"of"`
}

// InputWritten: the bounded input is in Kafka.
type InputWritten struct {
	Records    int64 `json:"records"`
	DurationMs int64 `json:"duration_ms"`
}

// InputWriterFailed: the writer of an unbounded input failed; the run stops.
type InputWriterFailed struct {
	Error string `json:"error"`
}

// VerifyStarted: the job has ended and the oracle reads the input and the
// output.
type VerifyStarted struct {
	JobStatus string `json:"job_status"`
}

// JobStatus: the job moved to Status (Flink: JobStatus).
type JobStatus struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// TaskStatus: a subtask moved to Status in its Attempt-th deployment.
type TaskStatus struct {
	Task    string `json:"task"`
	Status  string `json:"status"`
	Attempt int64  `json:"attempt"`
	Reason  string `json:"reason,omitempty"`
}

// CheckpointTriggered: barriers of checkpoint (or savepoint) ID were
// injected at the sources.
type CheckpointTriggered struct {
	ID   int64  `json:"id"`
	Kind string `json:"kind"`
	// TriggerTime is when it was triggered (wall clock), which ts may
	// follow by a little.
	TriggerTime time.Time `json:"trigger_time,omitzero"`
}

// CheckpointCompleted: every subtask acknowledged ID and the store has it.
type CheckpointCompleted struct {
	ID   int64  `json:"id"`
	Kind string `json:"kind"`
	// DurationMs is the end-to-end time on the job's clock, which leaves
	// out the time the world stood frozen; FrozenMs is that time.
	DurationMs       int64 `json:"duration_ms"`
	FrozenMs         int64 `json:"frozen_ms,omitempty"`
	SizeBytes        int64 `json:"size_bytes"`
	IncrementalBytes int64 `json:"incremental_bytes"`
	// DurationUs is DurationMs to the µs.
	DurationUs int64 `json:"duration_us,omitempty"`
	// MaxAlignmentUs is the longest alignment of a subtask, in µs (on the
	// job's clock).
	MaxAlignmentUs int64 `json:"max_alignment_us,omitempty"`
	// AfterBarrier adds up the records each subtask processed past the
	// barrier in an at-least-once checkpoint (read again after a restore
	// from it): a record counts at each subtask it passed early, so it is
	// not the number of duplicates a restore commits.
	AfterBarrier int64 `json:"after_barrier,omitempty"`
	// Unaligned is true when a subtask took its snapshot unaligned;
	// TimedOut lists the subtasks that switched it from aligned by the
	// aligned-checkpoint timeout.
	Unaligned bool     `json:"unaligned"`
	TimedOut  []string `json:"timed_out,omitempty"`
	// PersistedInFlightBytes is the size of the in-flight records stored
	// as channel state; ProcessedInFlightBytes of those processed during
	// alignments (Flink's persisted and processed in-flight data).
	PersistedInFlightBytes int64 `json:"persisted_in_flight_bytes"`
	ProcessedInFlightBytes int64 `json:"processed_in_flight_bytes"`
}

// CheckpointFailed: ID was aborted for Reason; Task declined it, when one
// did.
type CheckpointFailed struct {
	ID     int64  `json:"id"`
	Reason string `json:"reason"`
	Error  string `json:"error,omitempty"`
	Task   string `json:"task,omitempty"`
}

// CheckpointInvalid: a damaged or lost checkpoint was passed over.
type CheckpointInvalid struct {
	ID    int64  `json:"id"`
	Error string `json:"error"`
}

// CheckpointCorrupted: the corrupt-checkpoint fault damaged checkpoint ID,
// or could not (Error).
type CheckpointCorrupted struct {
	Fault string `json:"fault"`
	ID    *int64 `json:"id,omitempty"`
	Error string `json:"error,omitempty"`
}

// SavepointCompleted: savepoint ID is stored in Path.
type SavepointCompleted struct {
	ID        int64  `json:"id"`
	SizeBytes int64  `json:"size_bytes"`
	Path      string `json:"path,omitempty"`
}

// SavepointFailed: a savepoint (ID, once triggered) could not be taken.
type SavepointFailed struct {
	ID    *int64 `json:"id,omitempty"`
	Error string `json:"error"`
}

// FaultInjected: an injected fault was delivered (Task is empty for a fault
// that acts on the whole job).
type FaultInjected struct {
	Task  string `json:"task,omitempty"`
	Fault string `json:"fault"`
	Spec  string `json:"spec"`
}

// TaskSlowed: the slow fault makes Task Factor times slower for ForMs.
type TaskSlowed struct {
	Task   string  `json:"task"`
	Factor float64 `json:"factor"`
	ForMs  int64   `json:"for_ms"`
}

// PoisonWritten: the poison fault wrote a record no parser accepts at
// Offset, or could not (Error).
type PoisonWritten struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    *int64 `json:"offset,omitempty"`
	Error     string `json:"error,omitempty"`
}

// TaskFailed: a subtask (Task; empty for a failure of the job itself)
// failed, by an injected Fault or an Error.
type TaskFailed struct {
	Task    string `json:"task,omitempty"`
	Error   string `json:"error"`
	Fault   string `json:"fault,omitempty"`
	Attempt int64  `json:"attempt"`
}

// Failover: after the failure of Failed, the failover strategy restarts
// Tasks.
type Failover struct {
	Strategy string   `json:"strategy"`
	Failed   string   `json:"failed"`
	Tasks    []string `json:"tasks"`
}

// RestartScheduled: Tasks restart after DelayMs (the Attempt-th restart).
type RestartScheduled struct {
	Strategy    string   `json:"strategy"`
	DelayMs     int64    `json:"delay_ms"`
	Attempt     int      `json:"attempt"`
	Description string   `json:"description"`
	Failover    string   `json:"failover"`
	Tasks       []string `json:"tasks"`
	// MaxAttempts is the restarts the strategy grants in all (0: not
	// attempt-based, or unlimited).
	MaxAttempts int `json:"max_attempts,omitempty"`
}

// Restored: the job (or Tasks of it) restored Checkpoint (0: none, it
// starts over), with these source Offsets.
type Restored struct {
	Checkpoint int64    `json:"checkpoint"`
	Offsets    *Offsets `json:"offsets,omitempty"`
	Reason     string   `json:"reason"`
	Tasks      []string `json:"tasks,omitempty"`
	// PassedOver are the newer checkpoints found damaged, newest first:
	// Checkpoint was restored instead.
	PassedOver []int64 `json:"passed_over,omitempty"`
}

// ReplayHeld: a restore went back past Checkpoint's newer, damaged
// checkpoints, whose sink transactions were committed already (a committed
// transaction cannot be taken back): the output holds Records order ids
// the job emits again, and the sink Task does not write them a second time.
// Checkpoint 0: a start with no checkpoint left over output the runs before
// committed, all of which the job emits again.
type ReplayHeld struct {
	Task       string `json:"task"`
	Records    int    `json:"records"`
	Checkpoint int64  `json:"checkpoint"`
}

// TxnRewritten: the output lost the transaction sink Task pre-committed
// for Checkpoint (a broker that died with it open aborts it), and the
// recovery wrote again, from the transaction's records in the output's
// own log, the Records of it the committed output lacked.
type TxnRewritten struct {
	Task       string `json:"task"`
	Checkpoint int64  `json:"checkpoint"`
	Records    int    `json:"records"`
}

// RolledBack: individual failover put Task back to Checkpoint without
// replaying its input; Lost records went with it.
type RolledBack struct {
	Task       string `json:"task"`
	Checkpoint int64  `json:"checkpoint"`
	Lost       int64  `json:"lost"`
	What       string `json:"what"`
}

// RecordsLost: individual failover lost Records (Total so far).
type RecordsLost struct {
	Task       string `json:"task"`
	Records    int64  `json:"records"`
	Total      int64  `json:"total"`
	Checkpoint int64  `json:"checkpoint"`
	What       string `json:"what"`
}

// RecordsReplayed: a restart of the whole job from Checkpoint makes good
// Records that individual failover lost (TotalLost left).
type RecordsReplayed struct {
	Records    int64  `json:"records"`
	TotalLost  int64  `json:"total_lost"`
	Checkpoint int64  `json:"checkpoint"`
	What       string `json:"what"`
}

// BadRecord: parsing met a record it cannot parse and skipped or
// dead-lettered it (Topic: where to).
type BadRecord struct {
	Task   string `json:"task"`
	Action string `json:"action"`
	Reason string `json:"reason"`
	Record string `json:"record"`
	Total  int64  `json:"total"`
	Topic  string `json:"topic,omitempty"`
}

// ModeChanged: the next checkpoints are taken in Mode.
type ModeChanged struct {
	Mode string `json:"mode"`
}

// Notice: something the person at the terminal should know before the run
// goes far (a bad record ahead that will stop it again); Advice says what
// to do about it.
type Notice struct {
	Text   string `json:"text"`
	Advice string `json:"advice,omitempty"`
}

// RestartsReset: the restart strategy forgot its failures (from the
// keyboard), as a newly submitted job's starts; Attempts is how many
// restarts it had granted before.
type RestartsReset struct {
	Strategy string `json:"strategy"`
	Attempts int    `json:"attempts"`
}

// TempoChanged: the world runs at Tempo (normal, slow, slower, frozen).
type TempoChanged struct {
	Tempo string `json:"tempo"`
}

// SourcesPaused: the sources stopped (or went on) reading.
type SourcesPaused struct {
	Paused bool `json:"paused"`
}

// TaskLoad: every few seconds, each running subtask's load over that time
// as Flink measures it (busyTimeMsPerSecond, idleTimeMsPerSecond,
// backPressuredTimeMsPerSecond, on the wall clock), its records in and
// out so far and its input watermark: the bottleneck is the subtask busy
// near 1000 ms/s, and those upstream of it are back-pressured.
type TaskLoad struct {
	Tasks []SubtaskLoad `json:"tasks"`
}

// SubtaskLoad is one subtask's part of TaskLoad.
type SubtaskLoad struct {
	Task                     string `json:"task"`
	BusyMsPerSecond          int64  `json:"busy_ms_per_s"`
	IdleMsPerSecond          int64  `json:"idle_ms_per_s"`
	BackPressuredMsPerSecond int64  `json:"backpressured_ms_per_s"`
	RecordsIn                int64  `json:"records_in"`
	RecordsOut               int64  `json:"records_out"`
	WatermarkMs              int64  `json:"watermark_ms,omitempty"`
}

// VerifyStatus: the live verification's line changed (at most once a
// second): what a read_committed consumer of the output sees, checked
// against the input (see Verify).
type VerifyStatus struct {
	Committed             int    `json:"committed"`
	Duplicates            int    `json:"duplicates"`
	DuplicatesAtLeastOnce int    `json:"duplicates_at_least_once,omitempty"`
	Lost                  int    `json:"lost"`
	AsOf                  int64  `json:"as_of"`
	InFlight              int    `json:"in_flight,omitempty"`
	NotJoined             int    `json:"not_joined,omitempty"`
	Error                 string `json:"error,omitempty"`
}

// Name implements Event.
func (RunStarted) Name() string          { return "run_started" }
func (VerifyStatus) Name() string        { return "verify_status" }
func (BrokerStarted) Name() string       { return "broker_started" }
func (BrokerDown) Name() string          { return "broker_down" }
func (BrokerUp) Name() string            { return "broker_up" }
func (InputProgress) Name() string       { return "input_progress" }
func (InputWritten) Name() string        { return "input_written" }
func (InputWriterFailed) Name() string   { return "input_writer_failed" }
func (VerifyStarted) Name() string       { return "verify_started" }
func (JobStatus) Name() string           { return "job_status" }
func (TaskStatus) Name() string          { return "task_status" }
func (CheckpointTriggered) Name() string { return "checkpoint_triggered" }
func (CheckpointCompleted) Name() string { return "checkpoint_completed" }
func (CheckpointFailed) Name() string    { return "checkpoint_failed" }
func (CheckpointInvalid) Name() string   { return "checkpoint_invalid" }
func (CheckpointCorrupted) Name() string { return "checkpoint_corrupted" }
func (SavepointCompleted) Name() string  { return "savepoint_completed" }
func (SavepointFailed) Name() string     { return "savepoint_failed" }
func (FaultInjected) Name() string       { return "fault_injected" }
func (TaskSlowed) Name() string          { return "task_slowed" }
func (PoisonWritten) Name() string       { return "poison_written" }
func (TaskFailed) Name() string          { return "task_failed" }
func (Failover) Name() string            { return "failover" }
func (RestartScheduled) Name() string    { return "restart_scheduled" }
func (Restored) Name() string            { return "restored" }
func (ReplayHeld) Name() string          { return "replay_held" }
func (TxnRewritten) Name() string        { return "txn_rewritten" }
func (RolledBack) Name() string          { return "rolled_back" }
func (RecordsLost) Name() string         { return "records_lost" }
func (RecordsReplayed) Name() string     { return "records_replayed" }
func (BadRecord) Name() string           { return "bad_record" }
func (ModeChanged) Name() string         { return "mode_changed" }
func (RestartsReset) Name() string       { return "restarts_reset" }
func (Notice) Name() string              { return "notice" }
func (TempoChanged) Name() string        { return "tempo_changed" }
func (SourcesPaused) Name() string       { return "sources_paused" }
func (TaskLoad) Name() string            { return "task_load" }

// Other is an event of a name this package does not know (a newer
// faultline's, read back from its output): its fields as they came.
type Other struct {
	Event  string
	Values map[string]json.RawMessage
}

// Name implements Event.
func (o Other) Name() string { return o.Event }

// MarshalJSON writes the fields.
func (o Other) MarshalJSON() ([]byte, error) {
	if o.Values == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(o.Values)
}

// known makes an empty event of each name.
var known = map[string]func() Event{}

func init() {
	for _, e := range []Event{
		RunStarted{}, VerifyStatus{}, BrokerStarted{}, BrokerDown{}, BrokerUp{}, InputProgress{}, InputWritten{},
		InputWriterFailed{}, VerifyStarted{}, JobStatus{}, TaskStatus{}, CheckpointTriggered{},
		CheckpointCompleted{}, CheckpointFailed{}, CheckpointInvalid{}, CheckpointCorrupted{},
		SavepointCompleted{}, SavepointFailed{}, FaultInjected{}, TaskSlowed{}, PoisonWritten{},
		TaskFailed{}, Failover{}, RestartScheduled{}, Restored{}, ReplayHeld{}, TxnRewritten{}, RolledBack{}, RecordsLost{},
		RecordsReplayed{}, BadRecord{}, ModeChanged{}, RestartsReset{}, Notice{}, TempoChanged{}, SourcesPaused{},
		TaskLoad{},
	} {
		t := reflect.TypeOf(e)
		known[e.Name()] = func() Event { return reflect.New(t).Interface().(Event) }
	}
}

// Decode reads an event of the given name from its fields' JSON object, as
// Fields and Stamped write them; a name it does not know gives an Other.
func Decode(name string, fields []byte) (Event, error) {
	mk, ok := known[name]
	if !ok {
		o := Other{Event: name}
		if err := json.Unmarshal(fields, &o.Values); err != nil {
			return nil, fmt.Errorf("event %s: %w", name, err)
		}
		return o, nil
	}
	p := mk() // a pointer to the event
	if err := json.Unmarshal(fields, p); err != nil {
		return nil, fmt.Errorf("event %s: %w", name, err)
	}
	return reflect.ValueOf(p).Elem().Interface().(Event), nil
}

// EventNames lists the names of the events the engine emits, sorted.
func EventNames() []string {
	return slices.Sorted(maps.Keys(known))
}

// EventFields lists the JSON fields of the event called name, sorted; ok
// is false for a name the engine never emits.
func EventFields(name string) (fields []string, ok bool) {
	mk, ok := known[name]
	if !ok {
		return nil, false
	}
	return jsonFields(reflect.TypeOf(mk()).Elem()), true
}

// FieldOf returns the value of e's field whose JSON name is name (one of
// EventFields), typed as the event has it; ok is false when e has none.
func FieldOf(e Event, name string) (v any, ok bool) {
	rv := reflect.ValueOf(e)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, false
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return nil, false
	}
	return fieldOf(rv, name)
}

// fieldOf finds the field of struct value rv named name in JSON, in
// embedded structs too.
func fieldOf(rv reflect.Value, name string) (any, bool) {
	t := rv.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" || !f.IsExported():
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			if v, ok := fieldOf(rv.Field(i), name); ok {
				return v, true
			}
		case tag == name || tag == "" && f.Name == name:
			return rv.Field(i).Interface(), true
		}
	}
	return nil, false
}

// jsonFields are the JSON names of struct type t's fields, those of
// embedded structs inlined, sorted.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			out = append(out, jsonFields(f.Type)...)
		case name == "":
			out = append(out, f.Name)
		default:
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
