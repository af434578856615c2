package runs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// --events-file records the session as the headless mode prints it, line
// for line, the report last; a second session on it appends; a path that
// cannot be written is refused before the run starts.
func TestEventsFileRecordsTheSession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(t.TempDir(), "session.jsonl")
	r := e2e.Faultline(t, "run", "--headless", "--records", "3000", "--state-dir", dir, "--events-file", record)
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != r.Stdout {
		t.Fatalf("the record is not what the run printed:\nrecord:\n%s\nstdout:\n%s", b, r.Stdout)
	}
	if !strings.HasPrefix(lastLineOf(string(b)), `{"report":`) {
		t.Errorf("the record does not end with the report: %s", lastLineOf(string(b)))
	}
	again := e2e.Faultline(t, "run", "--headless", "--records", "3000", "--fresh", "--state-dir", dir, "--events-file", record)
	b2, _ := os.ReadFile(record)
	if again.Code != 0 || string(b2) != r.Stdout+again.Stdout {
		t.Errorf("a second session did not append to the record (exit %d)", again.Code)
	}
	bad := e2e.Faultline(t, "run", "--headless", "--records", "10", "--state-dir", t.TempDir(), "--events-file", filepath.Join(dir, "no", "such", "dir", "x.jsonl"))
	if bad.Code != 2 || !strings.Contains(bad.Stderr, "--events-file") {
		t.Errorf("an unwritable --events-file: exit %d\n%s", bad.Code, bad.Stderr)
	}
}

func lastLineOf(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
