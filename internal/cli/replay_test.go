package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// replay reads the session asked for, and says what is wrong with a file
// that holds none, a line that is no event, or a session it does not hold.
func TestReplayReadsTheSessionAskedFor(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(job string) string {
		return `{"event":"run_started","at_ms":1,"schema":1,"job":"` + job + `","mode":"exactly-once","state_dir":"","log_file":"","records":0,"seed":1,"checkpoint_interval_ms":2000,"brokers":"","sink_guarantee":"","checkpoint_dir":"","state_backend":"heap","incremental":false}` + "\n"
	}
	two := write("two.jsonl", run("first")+`{"report":{"job":"first"}}`+"\n"+run("second"))
	for n, want := range map[int]string{0: "second", 1: "first", 2: "second"} {
		s, err := readSession(two, n)
		if err != nil || len(s.Events) != 1 || !strings.Contains(string(mustJSON(t, s.Events[0])), `"job":"`+want+`"`) {
			t.Errorf("session %d: %v, %+v", n, err, s.Events)
		}
	}
	for path, want := range map[string]string{
		write("empty.jsonl", ""):           "holds no recorded session",
		write("bad.jsonl", run("x")+"x\n"): "line 2",
		filepath.Join(dir, "missing"):      "no such file",
	} {
		if _, err := readSession(path, 0); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", filepath.Base(path), err, want)
		}
	}
	var ue usageError
	if _, err := readSession(two, 3); !errors.As(err, &ue) || !strings.Contains(err.Error(), "holds 2 sessions") {
		t.Errorf("--session 3 of 2: %v", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The record's cut last line is ended before a session appends.
func TestRecordEndsACutLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "events.jsonl")
	endLine(p) // none yet: nothing to do
	if err := os.WriteFile(p, []byte(`{"event":"a"}`+"\n"+`{"event":"b","at`), 0o644); err != nil {
		t.Fatal(err)
	}
	endLine(p)
	endLine(p)
	if b, _ := os.ReadFile(p); string(b) != `{"event":"a"}`+"\n"+`{"event":"b","at`+"\n" {
		t.Fatalf("record %q", b)
	}
}
