package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/verify"
)

// A checkpoint gets past a bad record once its source offset of the
// record's partition, the next offset to read, is beyond the record.
func TestAheadOfKeepsWhatTheCheckpointHasNotPassed(t *testing.T) {
	recs := []badRecordAt{
		{Topic: "orders", Partition: 0, Offset: 670},
		{Topic: "orders", Partition: 1, Offset: 90},
		{Topic: "payments", Partition: 2, Offset: 5},
	}
	c := &checkpoint.Completed{ID: 7, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{
		{Operator: "orders-source", Index: 0}: {Offsets: checkpoint.Offsets{"orders": {0: 670, 1: 91}}},
	}}
	got := aheadOf(recs, c)
	if len(got) != 2 || got[0] != recs[0] || got[1] != recs[2] {
		t.Fatalf("ahead of checkpoint 7: %v; want orders/0@670 (offset 670 is still to read) and payments/2@5 (no offset)", got)
	}
	if got := aheadOf(recs, nil); len(got) != 3 {
		t.Fatalf("ahead of no checkpoint: %v, want all", got)
	}
}

func TestBadRecordWarning(t *testing.T) {
	one := []badRecordAt{{Topic: "orders", Partition: 0, Offset: 670}}
	c := &checkpoint.Completed{ID: 5}
	tests := []struct {
		name                      string
		recs                      []badRecordAt
		c                         *checkpoint.Completed
		embedded                  bool
		explicitDir, stateDir     string
		wantWhat, wantAdviceParts string
	}{
		{"default state dir", one, c, true, "", "/home/ada/.local/share/faultline",
			"the input holds a bad record at orders/0@670, ahead of the last checkpoint (5)",
			"every run with --on-bad-record fail stops at it again; go on with --on-bad-record skip or dead-letter, or start over with `faultline reset`"},
		{"given state dir", one, nil, true, "/tmp/my sd", "/tmp/my sd",
			"the input holds a bad record at orders/0@670, and no checkpoint is past it",
			"or start over with `faultline reset --state-dir '/tmp/my sd'`"},
		{"a cluster keeps the record", one, c, false, "", "/sd",
			"the input holds a bad record at orders/0@670, ahead of the last checkpoint (5)",
			"every run with --on-bad-record fail stops at it again; go on with --on-bad-record skip or dead-letter"},
		{"several", []badRecordAt{
			{Topic: "orders", Partition: 0, Offset: 1}, {Topic: "orders", Partition: 1, Offset: 2},
			{Topic: "payments", Partition: 0, Offset: 3}, {Topic: "payments", Partition: 3, Offset: 4}, {Topic: "payments", Partition: 2, Offset: 5},
		}, c, true, "", "/sd",
			"the input holds bad records at orders/0@1, orders/1@2, payments/0@3 and 2 more, ahead of the last checkpoint (5)",
			"stops at them again"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			what, advice := badRecordWarning(tc.recs, tc.c, tc.embedded, tc.explicitDir, tc.stateDir)
			if what != tc.wantWhat || !strings.Contains(advice, tc.wantAdviceParts) {
				t.Fatalf("got %q: %q\nwant %q: …%q…", what, advice, tc.wantWhat, tc.wantAdviceParts)
			}
			if !tc.embedded && strings.Contains(advice, "reset") {
				t.Fatalf("advice %q: reset deletes nothing of a cluster's topics", advice)
			}
		})
	}
}

// The note is written whole, read back, and goes when nothing is left in
// it; one that cannot be read is no note.
func TestBadRecordNoteRoundTrip(t *testing.T) {
	dir := t.TempDir()
	recs := []badRecordAt{{Topic: "orders", Partition: 0, Offset: 670, Reason: "not JSON"}}
	if err := writeBadRecords(dir, recs); err != nil {
		t.Fatal(err)
	}
	if got := readBadRecords(dir); len(got) != 1 || got[0] != recs[0] {
		t.Fatalf("read back %v, want %v", got, recs)
	}
	if _, err := os.Stat(filepath.Join(dir, badRecordFile+".tmp")); !os.IsNotExist(err) {
		t.Fatalf("the temporary file is left: %v", err)
	}
	if err := writeBadRecords(dir, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, badRecordFile)); !os.IsNotExist(err) {
		t.Fatalf("a note without records stays: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, badRecordFile), []byte("{cut sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readBadRecords(dir); got != nil {
		t.Fatalf("a damaged note reads as %v", got)
	}
}

// After the UI, the summary does not send the user into the same failure
// again: with a bad record ahead of the last checkpoint it says so and
// what to do instead of "run faultline again".
func TestSummarySaysWhenTheNextRunFailsAgain(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(checkpointDir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	report := runtime.Report{Job: "orders", Status: "FAILED", GaveUp: "fixed-delay: all 10 restart attempts used",
		Verify: verify.Verification{Expected: 5, Committed: 5, OK: true}}
	var b bytes.Buffer
	printSummary(&b, report, dir, "", "")
	if !strings.Contains(b.String(), "run faultline again to go on") {
		t.Fatalf("summary without a bad record:\n%s", b.String())
	}
	b.Reset()
	what, advice := badRecordWarning([]badRecordAt{{Topic: "orders", Partition: 0, Offset: 670}}, &checkpoint.Completed{ID: 5}, true, "", dir)
	printSummary(&b, report, dir, what, advice)
	got := b.String()
	for _, want := range []string{"state dir " + dir + ": the input holds a bad record at orders/0@670, ahead of the last checkpoint (5):\n",
		"\n  every run with --on-bad-record fail stops at it again;\n", "\n  go on with --on-bad-record skip or dead-letter, or start over with `faultline reset`\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary does not say %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "run faultline again") {
		t.Errorf("summary still sends the user into the same failure:\n%s", got)
	}
}

// A run stopped with a savepoint says, after the UI, how to start from it.
func TestSummarySaysHowToStartFromTheSavepointOfTheStop(t *testing.T) {
	dir := t.TempDir()
	report := runtime.Report{Job: "orders", Status: "CANCELED", Savepoint: 20, Verify: verify.Verification{Expected: 5, Committed: 5, OK: true}}
	var b bytes.Buffer
	printSummary(&b, report, dir, "", "")
	if want := "  savepoint 20 taken as it stopped: faultline run --from-savepoint 20 --state-dir " + dir + " starts from it\n"; !strings.Contains(b.String(), want) {
		t.Fatalf("summary does not say %q:\n%s", want, b.String())
	}
}
