package view

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// The headless contract's lines, byte for byte: "event", "at_ms",
// "schema", "ts" when known, then the fields in name order, the
// conditional ones only when set.
func TestEventLinesKeepTheContract(t *testing.T) {
	off := int64(0)
	for _, tc := range []struct {
		e    Event
		want string
	}{
		{CheckpointCompleted{ID: 1, Kind: "checkpoint", DurationMs: 19, SizeBytes: 46591, IncrementalBytes: 46591},
			`{"event":"checkpoint_completed","at_ms":255,"schema":1,"duration_ms":19,"id":1,"incremental_bytes":46591,"kind":"checkpoint","persisted_in_flight_bytes":0,"processed_in_flight_bytes":0,"size_bytes":46591,"unaligned":false}`},
		{CheckpointCompleted{ID: 2, Kind: "checkpoint", DurationMs: 3, SizeBytes: 9, IncrementalBytes: 9, Unaligned: true,
			TimedOut: []string{"join/0"}, PersistedInFlightBytes: 512, ProcessedInFlightBytes: 64},
			`{"event":"checkpoint_completed","at_ms":255,"schema":1,"duration_ms":3,"id":2,"incremental_bytes":9,"kind":"checkpoint","persisted_in_flight_bytes":512,"processed_in_flight_bytes":64,"size_bytes":9,"timed_out":["join/0"],"unaligned":true}`},
		{JobStatus{Status: "CREATED"}, `{"event":"job_status","at_ms":255,"schema":1,"status":"CREATED"}`},
		{TaskFailed{Error: "boom", Attempt: 2}, `{"event":"task_failed","at_ms":255,"schema":1,"attempt":2,"error":"boom"}`},
		{Restored{Reason: "resumed"}, `{"event":"restored","at_ms":255,"schema":1,"checkpoint":0,"reason":"resumed"}`},
		{Restored{Checkpoint: 2, Offsets: &Offsets{}, Reason: "r", Tasks: []string{"join/1"}},
			`{"event":"restored","at_ms":255,"schema":1,"checkpoint":2,"offsets":{},"reason":"r","tasks":["join/1"]}`},
		{PoisonWritten{Topic: "orders", Offset: &off}, `{"event":"poison_written","at_ms":255,"schema":1,"offset":0,"partition":0,"topic":"orders"}`},
		{Failover{Strategy: "full", Tasks: []string{"a/0"}}, `{"event":"failover","at_ms":255,"schema":1,"failed":"","strategy":"full","tasks":["a/0"]}`},
		{Other{Event: "something_new", Values: map[string]json.RawMessage{"b": []byte("2.5")}}, `{"event":"something_new","at_ms":255,"schema":1,"b":2.5}`},
	} {
		b, err := json.Marshal(Stamped{At: 255 * time.Millisecond, Event: tc.e})
		if err != nil || string(b) != tc.want {
			t.Errorf("%T:\n got %s (%v)\nwant %s", tc.e, b, err, tc.want)
		}
	}
	// The wall-clock time, in UTC, reads back as the same instant.
	wall := time.Date(2026, 12, 5, 2, 3, 4, 567000000, time.FixedZone("CET", 3600))
	b, _ := json.Marshal(Stamped{At: time.Second, Wall: wall, Event: JobStatus{Status: "RUNNING"}})
	if want := `{"event":"job_status","at_ms":1000,"schema":1,"ts":"2026-12-05T01:03:04.567Z","status":"RUNNING"}`; string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
	var back Stamped
	if err := json.Unmarshal(b, &back); err != nil || !back.Wall.Equal(wall) || back.Event != (JobStatus{Status: "RUNNING"}) {
		t.Errorf("read back %+v, %v", back, err)
	}
	// A line of a newer schema is refused, not misread.
	if err := json.Unmarshal([]byte(`{"event":"job_status","at_ms":1,"schema":2,"status":"RUNNING"}`), &back); err == nil {
		t.Error("an event of schema 2 was read")
	}
}

// Every event reads back as the same typed value from its line.
func TestEveryEventReadsBack(t *testing.T) {
	id, off := int64(4), int64(88)
	for _, e := range []Event{
		RunStarted{Job: "orders", Mode: "exactly-once", Records: 10, Seed: 1, CheckpointIntervalMs: 2000, Incremental: true,
			Title: "t", Operators: []Operator{{Name: "a", Type: "source", Parallelism: 2, Topic: "t"}, {Name: "b", Type: "sink", Parallelism: 1, Inputs: []Edge{{From: "a", Kind: "hash", Key: "k"}}}}},
		VerifyStatus{Committed: 5, Duplicates: 1, DuplicatesAtLeastOnce: 1, Lost: 2, AsOf: 3, InFlight: 4, NotJoined: 6, Error: "e"},
		BrokerStarted{Address: "a:1", Embedded: true, LogDir: "/k", Note: "n"}, BrokerDown{ForMs: 5, Error: "e"}, BrokerUp{Address: "a:1"},
		InputProgress{Records: 1, Of: 2}, InputWritten{Records: 1, DurationMs: 2}, InputWriterFailed{Error: "e"}, VerifyStarted{JobStatus: "FINISHED"},
		JobStatus{Status: "RUNNING", Reason: "r"}, TaskStatus{Task: "a/0", Status: "RUNNING", Attempt: 3, Reason: "r"},
		CheckpointTriggered{ID: 1, Kind: "savepoint"}, CheckpointCompleted{ID: 1, Kind: "checkpoint", DurationMs: 1, SizeBytes: 2, IncrementalBytes: 3},
		CheckpointFailed{ID: 1, Reason: "expired", Error: "e", Task: "a/0"}, CheckpointInvalid{ID: 1, Error: "e"},
		CheckpointCorrupted{Fault: "corrupt-checkpoint", ID: &id}, SavepointCompleted{ID: 1, SizeBytes: 2, Path: "/p"},
		SavepointFailed{ID: &id, Error: "e"}, FaultInjected{Task: "a/0", Fault: "panic", Spec: "s"},
		TaskSlowed{Task: "a/0", Factor: 2.5, ForMs: 5}, PoisonWritten{Topic: "orders", Partition: 2, Offset: &off},
		TaskFailed{Task: "a/0", Error: "e", Fault: "panic", Attempt: 1}, Failover{Strategy: "region", Failed: "a/0", Tasks: []string{"a/0", "b/0"}},
		RestartScheduled{Strategy: "fixed-delay", DelayMs: 1, Attempt: 2, Description: "d", Failover: "full", Tasks: []string{"a/0"}},
		Restored{Checkpoint: 3, Offsets: &Offsets{"orders": {"0": 12}}, Reason: "r", Tasks: []string{"a/0"}, PassedOver: []int64{5, 4}},
		ReplayHeld{Task: "sink/0", Records: 7, Checkpoint: 3},
		TxnRewritten{Task: "sink/0", Checkpoint: 4, Records: 12},
		RolledBack{Task: "a/0", Checkpoint: 2, Lost: 1, What: "w"}, RecordsLost{Task: "a/0", Records: 1, Total: 2, Checkpoint: 3, What: "w"},
		RecordsReplayed{Records: 1, TotalLost: 0, Checkpoint: 3, What: "w"},
		BadRecord{Task: "a/0", Action: "skipped", Reason: "r", Record: "x", Total: 1, Topic: "dl"},
		ModeChanged{Mode: "at-least-once"}, RestartsReset{Strategy: "fixed-delay", Attempts: 3}, Notice{Text: "t", Advice: "a"}, TempoChanged{Tempo: "frozen"}, SourcesPaused{Paused: true},
		TaskLoad{Tasks: []SubtaskLoad{{Task: "join/0", BusyMsPerSecond: 980, IdleMsPerSecond: 0, BackPressuredMsPerSecond: 20, RecordsIn: 5, RecordsOut: 4, WatermarkMs: 7}}},
	} {
		b, err := json.Marshal(Stamped{At: time.Second, Event: e})
		if err != nil {
			t.Fatal(err)
		}
		var back Stamped
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if back.At != time.Second || !reflect.DeepEqual(back.Event, e) {
			t.Errorf("%s read back as %#v", b, back.Event)
		}
	}
	if len(known) != 37 {
		t.Errorf("%d known events; the test above lists 37", len(known))
	}
}
