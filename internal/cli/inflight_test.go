package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
)

// emptyRecords is the channel state of n records without key, bytes or
// value, in the runtime's format (runtime.TestInFlightOfEmptyRecords pins
// it), n < 128.
func emptyRecords(n int) []byte {
	return append([]byte{0xC1, byte(n)}, make([]byte, n)...)
}

// inspectCmd runs `faultline checkpoints args… --state-dir dir` in this
// process and returns what it printed and its error.
func inspectCmd(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := newCheckpointsCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true // as the root command has them
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--state-dir", dir))
	err := cmd.Execute()
	return out.String(), err
}

// checkpoints inspect says how a checkpoint's barriers were handled, shows
// its subtasks' in-flight data, and lists the channel state in their state
// blobs, channel by channel, in the table and in --json.
func TestInspectShowsChannelState(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := badgerstore.Open(checkpointDir(dir), 3)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	task := func(op string, i int) checkpoint.TaskID { return checkpoint.TaskID{Operator: op, Index: i} }
	put := func(id int64, tid checkpoint.TaskID, channels map[string][]byte) checkpoint.Handle {
		st := &backend.SubtaskState{Keyed: []byte("keyed"), Operator: map[string][]byte{}, Channels: channels}
		h, err := s.PutState(ctx, id, tid, st.Encode())
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	add := func(id int64, tasks map[checkpoint.TaskID]checkpoint.SubtaskAck) {
		c := &checkpoint.Completed{ID: id, Job: "orders", Mode: "exactly-once", TriggerTime: t0, CompletionTime: t0.Add(40 * time.Millisecond), Tasks: tasks}
		if err := s.Add(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	join0, join1, parse0 := task("join", 0), task("join", 1), task("parse-orders", 0)
	// 1: join/0 unaligned with channel state on both inputs, join/1
	// switched to unaligned by the timeout, parse-orders/0 aligned.
	add(1, map[checkpoint.TaskID]checkpoint.SubtaskAck{
		join0: {Handle: put(1, join0, map[string][]byte{
			"0 parse-orders/0":    emptyRecords(3),
			"1 parse-payments/10": emptyRecords(1),
			"1 parse-payments/2":  emptyRecords(2),
		}), Unaligned: true, PersistedInFlight: 1200, PersistedRecords: 6, ProcessedInFlight: 300},
		join1:  {Handle: put(1, join1, map[string][]byte{"0 parse-orders/1": emptyRecords(40)}), Unaligned: true, TimedOut: true, PersistedInFlight: 2048, PersistedRecords: 40},
		parse0: {Handle: put(1, parse0, nil)},
	})
	// 2: aligned; the alignment processed in-flight data. Its blobs are not
	// read (they are not there): nothing says they hold channel state.
	add(2, map[checkpoint.TaskID]checkpoint.SubtaskAck{
		join0: {Handle: checkpoint.Handle{Key: "chk-2/join/0", Size: 9}, ProcessedInFlight: 5000},
	})
	// 3: damaged channel state.
	add(3, map[checkpoint.TaskID]checkpoint.SubtaskAck{
		join0: {Handle: put(3, join0, map[string][]byte{"0 parse-orders/0": emptyRecords(5)[:4]}), Unaligned: true, PersistedRecords: 5},
		join1: {Handle: put(3, join1, map[string][]byte{"0 parse-orders/1": emptyRecords(1)}), Unaligned: true, PersistedRecords: 1},
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	out, err := inspectCmd(t, dir, "inspect", "1")
	t.Logf("inspect 1:\n%s", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"barriers: aligned, then unaligned: the alignment of join/1 timed out; in-flight data: 300B processed during the alignment, 3.2K in 46 records persisted as channel state\n",
		"IN-FLIGHT PROCESSED", "IN-FLIGHT PERSISTED", "unaligned: its alignment timed out",
		"channel state (the records in flight",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect does not show %q", want)
		}
	}
	rows := []string{
		`join/0 +[0-9µs.]+ +[0-9µs.]+ +[0-9µs.]+ +[0-9µs.]+ +[0-9.]+B +300B +1\.2K +[0-9a-f]{8} +unaligned\n`,
		`parse-orders/0 → join/0, input 0 +3 +5B`,
		`parse-payments/2 → join/0, input 1 +2 +4B *\n.*parse-payments/10 → join/0, input 1 +1 +3B`,
		`parse-orders/1 → join/1, input 0 +40 +42B`,
	}
	for _, re := range rows {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("inspect has no line matching %s", re)
		}
	}
	if strings.Contains(out, "→ parse-orders/0") {
		t.Error("inspect lists channel state of parse-orders/0, which has none")
	}

	js, err := inspectCmd(t, dir, "inspect", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got checkpointJSON
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, js)
	}
	if !got.Unaligned || len(got.TimedOut) != 1 || got.TimedOut[0] != "join/1" || got.PersistedInFlightBytes != 3248 ||
		got.PersistedInFlightRecords != 46 || got.ProcessedInFlightBytes != 300 || len(got.Tasks) != 3 {
		t.Fatalf("inspect --json: %s", js)
	}
	want := []channelJSON{
		{Channel: "0 parse-orders/0", From: "parse-orders/0", Input: 0, Records: 3, Bytes: 5},
		{Channel: "1 parse-payments/2", From: "parse-payments/2", Input: 1, Records: 2, Bytes: 4},
		{Channel: "1 parse-payments/10", From: "parse-payments/10", Input: 1, Records: 1, Bytes: 3},
	}
	if j0 := got.Tasks[0]; j0.Task != "join/0" || !j0.Unaligned || j0.PersistedInFlightBytes != 1200 || !equalChannels(j0.Channels, want) {
		t.Errorf("inspect --json, join/0: %+v", j0)
	}
	if p := got.Tasks[2]; p.Task != "parse-orders/0" || p.Channels != nil || p.Unaligned {
		t.Errorf("inspect --json, parse-orders/0: %+v", p)
	}

	out, err = inspectCmd(t, dir, "inspect", "2")
	if err != nil || !strings.Contains(out, "barriers: aligned; in-flight data: 4.9K processed during the alignment\n") || strings.Contains(out, "channel state") {
		t.Fatalf("inspect 2: %v\n%s", err, out)
	}

	out, err = inspectCmd(t, dir, "inspect", "3")
	t.Logf("inspect 3: %v\n%s", err, out)
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(err.Error(), `join/0: channel "0 parse-orders/0"`) || strings.Contains(err.Error(), "join/1") {
		t.Fatalf("inspect of damaged channel state: %v, want exit 1 naming join/0's channel", err)
	}
	if !regexp.MustCompile(`parse-orders/0 → join/0, input 0 +4B +unreadable: .*corrupt`).MatchString(out) ||
		!regexp.MustCompile(`parse-orders/1 → join/1, input 0 +1 +3B`).MatchString(out) {
		t.Fatalf("inspect 3 does not list both channels:\n%s", out)
	}
}

func equalChannels(a, b []channelJSON) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
