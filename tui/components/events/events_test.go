package events

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
	"github.com/faultline-dev/faultline/tui/common"
	"github.com/faultline-dev/faultline/tui/internal/fixture"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

func TestDescribeEvent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields map[string]any
		want   string
		level  common.Level
	}{
		{"run_started", map[string]any{"job": "orders", "mode": "exactly-once", "state_dir": "/s", "brokers": "b:9092", "checkpoint_interval_ms": 2000.0},
			"run started: job orders, exactly-once, checkpoints every 2s, brokers b:9092, state in /s", common.LevelInfo},
		{"broker_started", map[string]any{"address": "127.0.0.1:9092", "embedded": true},
			"embedded Kafka broker listening on 127.0.0.1:9092", common.LevelInfo},
		{"job_status", map[string]any{"status": "RESTARTING", "reason": "injected fault: panic"},
			"job RESTARTING: injected fault: panic", common.LevelWarning},
		{"job_status", map[string]any{"status": "FAILED"}, "job FAILED", common.LevelError},
		{"task_status", map[string]any{"task": "join/1", "status": "FAILED", "reason": "boom"}, "join/1 FAILED: boom", common.LevelError},
		{"checkpoint_triggered", map[string]any{"id": int64(14), "kind": "checkpoint"},
			"checkpoint 14 triggered: barriers injected at the sources", common.LevelInfo},
		{"checkpoint_triggered", map[string]any{"id": 15, "kind": "savepoint"},
			"savepoint 15 triggered: barriers injected at the sources", common.LevelInfo},
		{"checkpoint_completed", map[string]any{"id": int32(14), "duration_ms": uint16(21), "size_bytes": 1258291.0, "incremental_bytes": int64(40960)},
			"checkpoint 14 completed in 21ms: 1.2MB (40KB incremental)", common.LevelSuccess},
		{"checkpoint_completed", map[string]any{"id": json.Number("14"), "duration_ms": json.Number("21"), "size_bytes": 100, "incremental_bytes": 100},
			"checkpoint 14 completed in 21ms: 100B", common.LevelSuccess},
		{"checkpoint_completed", map[string]any{"id": 16, "duration_ms": 44, "size_bytes": 100, "incremental_bytes": 100, "after_barrier": 37},
			"checkpoint 16 completed in 44ms: 100B; 37 records processed after the barrier over its subtasks, read again after a restore from it", common.LevelSuccess},
		{"checkpoint_completed", map[string]any{"id": 16, "duration_ms": 31, "size_bytes": 100, "incremental_bytes": 100,
			"unaligned": true, "persisted_in_flight_bytes": 98304},
			"checkpoint 16 completed unaligned in 31ms: 100B; 96KB of in-flight data persisted", common.LevelSuccess},
		{"checkpoint_completed", map[string]any{"id": 15, "duration_ms": 148, "size_bytes": 100, "incremental_bytes": 100,
			"unaligned": true, "timed_out": []string{"join/0", "join/1"}, "persisted_in_flight_bytes": 40960, "processed_in_flight_bytes": 28672},
			"checkpoint 15 completed in 148ms, timed out → unaligned at join/0 join/1: 100B; 40KB of in-flight data persisted", common.LevelSuccess},
		{"checkpoint_completed", map[string]any{"id": 14, "duration_ms": 22, "size_bytes": 100, "incremental_bytes": 100, "processed_in_flight_bytes": 12288},
			"checkpoint 14 completed in 22ms: 100B", common.LevelSuccess},
		{"checkpoint_failed", map[string]any{"id": 9, "reason": "declined", "task": "join/1", "error": "snapshot failed"},
			"checkpoint 9 failed: declined by join/1: snapshot failed", common.LevelError},
		{"checkpoint_failed", map[string]any{"id": 9, "reason": "job failover", "error": "job failover: panic"},
			"checkpoint 9 failed: job failover: panic", common.LevelWarning},
		{"checkpoint_failed", map[string]any{"id": 9, "reason": "expired"}, "checkpoint 9 failed: expired", common.LevelError},
		{"savepoint_completed", map[string]any{"id": 3, "size_bytes": int64(2048), "path": "/sp"}, "savepoint 3 written: 2KB in /sp", common.LevelSuccess},
		{"savepoint_failed", map[string]any{"error": "not running"}, "savepoint failed: not running", common.LevelError},
		{"savepoint_failed", map[string]any{"id": int8(4), "error": "timeout"}, "savepoint 4 failed: timeout", common.LevelError},
		{"task_failed", map[string]any{"task": "join/1", "error": "injected fault: panic", "fault": "panic", "attempt": int64(2)},
			"join/1 failed: injected fault: panic (attempt 2)", common.LevelError},
		{"task_failed", map[string]any{"fault": "crash"}, "the job failed: injected crash", common.LevelError},
		{"restart_scheduled", map[string]any{"strategy": "fixed-delay", "delay_ms": int64(1000), "attempt": 1, "description": "fixed-delay (attempts 3, delay 1s)"},
			"restart 1 scheduled in 1s: fixed-delay (attempts 3, delay 1s)", common.LevelWarning},
		{"restored", map[string]any{"checkpoint": int64(13), "reason": "restarted after failure of join/1",
			"offsets": map[string]map[string]int64{"orders": {"1": 1180, "0": 1203}, "payments": {"0": 1150}}},
			"restored checkpoint 13: orders p0:1203 p1:1180 payments p0:1150 (restarted after failure of join/1)", common.LevelSuccess},
		{"restored", map[string]any{"checkpoint": 13.0, "offsets": map[string]any{"orders": map[string]any{"10": 5.0, "2": 7.0}}},
			"restored checkpoint 13: orders p2:7 p10:5", common.LevelSuccess},
		{"restored", map[string]any{"checkpoint": int64(13), "offsets": map[string]map[int32]int64{"orders": {0: 12}}},
			"restored checkpoint 13: orders p0:12", common.LevelSuccess},
		{"restored", map[string]any{"checkpoint": 0, "reason": "start: no valid checkpoint, starting from the beginning"},
			"restored no checkpoint (start: no valid checkpoint, starting from the beginning)", common.LevelWarning},
		{"restored", map[string]any{"checkpoint": 6, "passed_over": []int64{7}},
			"restored checkpoint 6 — checkpoint 7 is damaged, passed over", common.LevelWarning},
		{"restored", map[string]any{"checkpoint": 6, "passed_over": []int64{8, 7}, "offsets": map[string]map[string]int64{"orders": {"0": 12}}},
			"restored checkpoint 6 — checkpoints 8 and 7 are damaged, passed over: orders p0:12", common.LevelWarning},
		{"restored", map[string]any{"checkpoint": 0, "passed_over": []int64{3, 2, 1}},
			"restored no checkpoint — checkpoints 3, 2 and 1 are damaged, passed over: starting from the beginning", common.LevelWarning},
		{"replay_held", map[string]any{"task": "sink/0", "records": 460, "checkpoint": 6},
			"sink/0: the output already holds 460 records committed after checkpoint 6 — a committed transaction cannot be taken back; they are not written again",
			common.LevelWarning},
		{"restarts_reset", map[string]any{"strategy": "fixed-delay", "attempts": 9},
			"restart attempts reset: fixed-delay starts afresh, as for a new job (9 restarts granted before)", common.LevelInfo},
		{"checkpoint_invalid", map[string]any{"id": 13, "error": "checksum mismatch"}, "checkpoint 13 cannot be restored: checksum mismatch", common.LevelError},
		{"checkpoint_corrupted", map[string]any{"id": 13, "fault": "corrupt-checkpoint"},
			"checkpoint 13's state damaged on purpose: the next recovery must fall back", common.LevelWarning},
		{"fault_injected", map[string]any{"task": "join/1", "fault": "panic"}, "injected panic into join/1", common.LevelWarning},
		{"fault_injected", map[string]any{"fault": "crash"}, "injected crash (job-wide)", common.LevelWarning},
		{"task_slowed", map[string]any{"task": "join/1", "factor": 10.0, "for_ms": int64(5000)}, "join/1 slowed ×10 for 5s", common.LevelWarning},
		{"mode_changed", map[string]any{"mode": "at-least-once"}, "checkpointing mode at-least-once from the next checkpoint", common.LevelInfo},
		{"records_lost", map[string]any{"task": "join/1", "records": uint64(37)},
			"join/1 lost 37 records: individual failover does not replay input", common.LevelError},
		{"records_lost", map[string]any{"task": "join/1", "records": int64(1), "total": int64(5), "what": "order o-1: its payment went with the rolled-back state"},
			"join/1 lost 1 record (5 so far): order o-1: its payment went with the rolled-back state", common.LevelError},
		{"tempo_changed", map[string]any{"tempo": "frozen"}, "the world stands still: every task waits before its next batch (. steps, space goes on)", common.LevelWarning},
		{"tempo_changed", map[string]any{"tempo": "normal"}, "full speed again", common.LevelInfo},
		{"sources_paused", map[string]any{"paused": true}, "sources paused: no new records enter; barriers and checkpoints go on", common.LevelWarning},
		{"poison_written", map[string]any{"topic": "orders", "partition": int32(2), "offset": int64(88)},
			"poison record written to orders/2 at offset 88: no parser accepts it", common.LevelWarning},
		{"bad_record", map[string]any{"task": "parse-orders/0", "reason": "not JSON", "action": "dead-lettered", "topic": "dead-letter"},
			"parse-orders/0 could not parse a record (not JSON): dead-lettered to dead-letter", common.LevelWarning},
		{"broker_down", map[string]any{"for_ms": int64(5000)}, "the embedded broker is down for 5s: every request is refused", common.LevelError},
		{"broker_up", map[string]any{"address": "127.0.0.1:9092"}, "the embedded broker is back at 127.0.0.1:9092", common.LevelInfo},
		{"rolled_back", map[string]any{"task": "join/1", "checkpoint": int64(7), "what": "its state went back to that checkpoint"},
			"join/1 restarted alone from checkpoint 7: its state went back to that checkpoint", common.LevelWarning},
		{"failover", map[string]any{"strategy": "region", "tasks": []any{"source/1", "enrich/1", "sink/1"}},
			"failover region: restarting source/1 enrich/1 sink/1", common.LevelWarning},
		{"failover", map[string]any{"strategy": "full", "tasks": []string{"a/0", "a/1", "b/0", "b/1"}},
			"failover full: restarting 4 tasks", common.LevelWarning},
		{"notice", map[string]any{"text": "REST API (Flink's) at http://127.0.0.1:8081"}, "REST API (Flink's) at http://127.0.0.1:8081", common.LevelInfo},
		{"notice", map[string]any{"text": "the state dir holds job orders", "advice": "--fresh starts over"},
			"the state dir holds job orders: --fresh starts over", common.LevelWarning},
		{"input_written", map[string]any{"records": 200000, "duration_ms": 1200}, "input written: 200,000 records in 1.2s", common.LevelMuted},
		{"something_new", map[string]any{"b": 2.5, "a": "x y", "c": []int{1}}, `something_new a="x y" b=2.5 c=[1]`, common.LevelMuted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, lvl := describeEvent(fixture.Event(t, tc.name, tc.fields))
			if got != tc.want || lvl != tc.level {
				t.Fatalf("got %q (level %d)\nwant %q (level %d)", got, lvl, tc.want, tc.level)
			}
		})
	}
}

func TestEventLogFoldsRoutineTaskStatuses(t *testing.T) {
	var l eventLog
	status := func(task, s string, attempt int) view.Stamped {
		return view.Stamped{Event: fixture.Event(t, "task_status", map[string]any{"task": task, "status": s, "attempt": attempt})}
	}
	for _, task := range []string{"a/0", "a/1", "b/0", "b/1", "c/0"} {
		l.add(status(task, "DEPLOYING", 1))
		l.add(status(task, "RUNNING", 1))
	}
	l.add(status("b/1", "FAILED", 1))
	l.add(status("b/1", "CANCELING", 1))
	l.add(status("b/1", "CANCELED", 1))
	l.add(status("b/1", "RUNNING", 2))
	l.add(status("b/1", "RUNNING", 2)) // twice is once
	var got []string
	for _, e := range l.entries {
		got = append(got, e.text)
	}
	want := []string{"5 tasks RUNNING (attempt 1)", "b/1 FAILED", "b/1 CANCELED (attempt 1)", "b/1 RUNNING (attempt 2)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("log:\n got %q\nwant %q", got, want)
	}
}

func TestEventLogMergesACheckpointsLines(t *testing.T) {
	var l eventLog
	add := func(name string, f map[string]any) { l.add(view.Stamped{Event: fixture.Event(t, name, f)}) }
	add("checkpoint_triggered", map[string]any{"id": 1})
	add("checkpoint_completed", map[string]any{"id": 1, "duration_ms": 5, "size_bytes": 10, "incremental_bytes": 10})
	add("checkpoint_triggered", map[string]any{"id": 2})
	add("fault_injected", map[string]any{"fault": "crash"})
	add("checkpoint_failed", map[string]any{"id": 2, "reason": "expired"})
	add("checkpoint_triggered", map[string]any{"id": 3, "kind": "savepoint"})
	add("checkpoint_completed", map[string]any{"id": 3, "kind": "savepoint", "duration_ms": 5, "size_bytes": 10, "incremental_bytes": 10})
	add("savepoint_completed", map[string]any{"id": 3, "size_bytes": 10, "path": "/sp"})
	var got []string
	for _, e := range l.entries {
		got = append(got, e.text)
	}
	want := []string{
		"checkpoint 1 completed in 5ms: 10B",
		"checkpoint 2 triggered: barriers injected at the sources",
		"injected crash (job-wide)",
		"checkpoint 2 failed: expired",
		"savepoint 3 completed in 5ms: 10B, written to /sp",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("log:\n got %q\nwant %q", got, want)
	}
}

func TestEventLogIsBounded(t *testing.T) {
	var l eventLog
	for i := range maxLogEntries + 10 {
		l.add(view.Stamped{Event: fixture.Event(t, "x", nil), At: time.Duration(i)})
	}
	l.add(view.Stamped{Event: fixture.Event(t, "task_status", map[string]any{"task": "a/0", "status": "RUNNING"})})
	l.add(view.Stamped{Event: fixture.Event(t, "task_status", map[string]any{"task": "a/1", "status": "RUNNING"})})
	if n := len(l.entries); n > maxLogEntries {
		t.Fatalf("%d entries", n)
	}
	if last := l.entries[len(l.entries)-1].text; last != "a/0 a/1 RUNNING" {
		t.Fatalf("fold after trimming: %q", last)
	}
}

func TestEventsPaneScrolls(t *testing.T) {
	ctx := common.NewContext(nil)
	ctx.Snap, ctx.HasSnap = fixture.Running(), true
	p := New(ctx)
	p.SetSize(80, 4) // what an 80×24 terminal gives the events
	p.SetFocused(true)
	press := func(keys ...tea.KeyType) {
		for _, k := range keys {
			p.Update(tea.KeyMsg{Type: k})
		}
	}
	var evs []view.Stamped
	for i := range 30 {
		evs = append(evs, view.Stamped{At: time.Duration(i) * time.Second,
			Event: fixture.Event(t, "mode_changed", map[string]any{"mode": "m" + common.Itoa(int64(i))})})
	}
	p.Update(common.EventsMsg{Events: evs})
	if v := p.View(); !strings.Contains(v, "mode m29 ") || strings.Contains(v, "mode m26 ") {
		t.Fatalf("not following the newest:\n%s", v)
	}
	press(tea.KeyUp, tea.KeyUp)
	if v := p.View(); !strings.Contains(v, "mode m27 ") || strings.Contains(v, "mode m29 ") || !strings.Contains(v, "2 newer below") {
		t.Fatalf("up did not scroll back:\n%s", v)
	}
	press(tea.KeyPgDown)
	if v := p.View(); !strings.Contains(v, "mode m29 ") {
		t.Fatalf("pgdn did not come back to the newest:\n%s", v)
	}
	for range 10 {
		press(tea.KeyPgUp)
	}
	if v := p.View(); !strings.Contains(v, "mode m0 ") {
		t.Fatalf("pgup did not reach the oldest:\n%s", v)
	}
	// Wall-clock stamps: Started + At.
	if v := p.View(); !strings.Contains(v, "12:01:00.000  checkpointing mode m0 ") {
		t.Fatalf("stamp:\n%s", v)
	}
}

func TestEventsPaneFollowsTheNewestWhenTheFocusLeaves(t *testing.T) {
	ctx := common.NewContext(nil)
	ctx.Snap, ctx.HasSnap = fixture.Running(), true
	p := New(ctx)
	p.SetSize(80, 4)
	p.SetFocused(true)
	p.Update(common.EventsMsg{Events: fixture.RunEvents()})
	p.Update(tea.KeyMsg{Type: tea.KeyPgUp})
	if p.Back() == 0 {
		t.Fatal("pgup did not scroll")
	}
	p.SetFocused(false)
	if p.Back() != 0 {
		t.Fatalf("still %d back after the focus left", p.Back())
	}
}

// On a wide terminal a long sentence wraps under itself; on a narrow one
// it is cut at a word boundary.
func TestEventsPaneWrapsOnAWideTerminal(t *testing.T) {
	ev := []view.Stamped{{At: time.Second, Event: view.ReplayHeld{Task: "sink/0", Records: 460, Checkpoint: 6}}}
	for _, tc := range []struct {
		w    int
		want []string
	}{
		{120, []string{" 12:01:01.000  sink/0: the output already holds 460 records committed after checkpoint 6 — a committed transaction",
			"               cannot be taken back; they are not written again"}},
		{80, []string{" 12:01:01.000  sink/0: the output already holds 460 records committed after…"}},
	} {
		ctx := common.NewContext(nil)
		ctx.Snap, ctx.HasSnap = fixture.Running(), true
		ctx.Width = tc.w
		p := New(ctx)
		p.SetSize(tc.w, 4)
		p.Update(common.EventsMsg{Events: ev})
		lines := strings.Split(p.View(), "\n")
		for i, want := range tc.want {
			if got := strings.TrimRight(lines[1+i], " "); got != want {
				t.Errorf("%d columns, line %d:\n got %q\nwant %q", tc.w, i, got, want)
			}
		}
	}
}

func TestMain(m *testing.M) {
	// The checks compare plain text: no colour, no bold.
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Exit(m.Run())
}

// g goes to the oldest line kept and G back to the newest; / types a
// filter that only the lines holding it pass, enter keeps it, esc drops it.
func TestEventsPaneJumpsAndFilters(t *testing.T) {
	ctx := common.NewContext(nil)
	ctx.Snap, ctx.HasSnap = fixture.Running(), true
	p := New(ctx)
	p.SetSize(100, 5)
	p.SetFocused(true)
	runes := func(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }
	var evs []view.Stamped
	for i := range 30 {
		evs = append(evs, view.Stamped{At: time.Duration(i) * time.Second,
			Event: fixture.Event(t, "mode_changed", map[string]any{"mode": "m" + common.Itoa(int64(i))})})
	}
	evs = append(evs, view.Stamped{At: 31 * time.Second, Event: fixture.Event(t, "task_failed", map[string]any{"task": "join/1", "error": "boom"})})
	p.Update(common.EventsMsg{Events: evs})
	p.Update(runes("g"))
	if v := p.View(); !strings.Contains(v, "mode m0 ") || strings.Contains(v, "join/1 failed") {
		t.Fatalf("g did not go to the oldest:\n%s", v)
	}
	p.Update(runes("G"))
	if v := p.View(); !strings.Contains(v, "join/1 failed") {
		t.Fatalf("G did not come back to the newest:\n%s", v)
	}
	p.StartFilter()
	for _, r := range "M2" {
		p.Update(runes(string(r)))
	}
	if !p.Typing() {
		t.Fatal("not typing the filter")
	}
	p.Update(tea.KeyMsg{Type: tea.KeyEnter})
	v := p.View()
	if p.Typing() || !strings.Contains(v, "/M2: 11 of 31") || !strings.Contains(v, "mode m29 ") || strings.Contains(v, "mode m19 ") || strings.Contains(v, "join/1") {
		t.Fatalf("filter m2:\n%s", v)
	}
	p.Update(tea.KeyMsg{Type: tea.KeyEsc})
	if v := p.View(); !strings.Contains(v, "join/1 failed") || strings.Contains(v, "of 31") {
		t.Fatalf("esc did not drop the filter:\n%s", v)
	}
}
