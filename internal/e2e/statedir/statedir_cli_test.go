package statedir

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// oneLine fails t unless r exited 2 with one line on stderr that holds
// every one of want.
func oneLine(t *testing.T, r e2e.Result, want ...string) {
	t.Helper()
	line := strings.TrimRight(r.Stderr, "\n")
	if r.Code != 2 || strings.Contains(line, "\n") {
		t.Fatalf("exit %d, stderr %q; want exit 2 and one line", r.Code, r.Stderr)
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Fatalf("stderr %q does not say %q", line, w)
		}
	}
}

// The same headless command twice on one state dir would write the output
// a second time: the second is refused with the two ways on, --resume and
// --fresh, and each of them works.
func TestSecondRunOnAStateDirIsRefusedWithTheWaysOn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"run", "--headless", "--records", "20000", "--checkpoint-interval", "100ms", "--state-dir", dir}
	first := e2e.Faultline(t, args...)
	if first.Code != 0 {
		t.Fatalf("first run: exit %d, stderr %q", first.Code, first.Stderr)
	}
	oneLine(t, e2e.Faultline(t, args...), "already holds", "checkpoints of job orders", "the embedded broker's log", "--resume", "--fresh")
	resumed := e2e.Faultline(t, append(args, "--resume")...)
	if resumed.Code != 0 || e2e.Num(resumed.Report, "verify", "duplicates") != 0 || e2e.Num(resumed.Report, "verify", "expected") != e2e.Num(first.Report, "verify", "expected") {
		t.Fatalf("--resume: exit %d, verify %v, stderr %q", resumed.Code, resumed.Report["verify"], resumed.Stderr)
	}
	fresh := e2e.Faultline(t, append(args, "--fresh")...)
	if fresh.Code != 0 || !strings.Contains(fresh.Stderr, "--fresh: deleted the checkpoints") ||
		e2e.Num(fresh.Report, "verify", "committed") != e2e.Num(first.Report, "verify", "committed") || e2e.Num(fresh.Report, "verify", "duplicates") != 0 {
		t.Fatalf("--fresh: exit %d, verify %v, stderr %q", fresh.Code, fresh.Report["verify"], fresh.Stderr)
	}
	if from := fresh.Report["checkpoints"].(map[string]any)["restored_from"].([]any); len(from) != 0 {
		t.Fatalf("--fresh restored %v", from)
	}
	oneLine(t, e2e.Faultline(t, append(args, "--fresh", "--resume")...), "--fresh and --resume")
}

// Going on from a state dir with another input than the one its broker
// log holds is refused, naming the stored value; more records are fine.
func TestResumeWithOtherInputIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"run", "--headless", "--checkpoint-interval", "100ms", "--state-dir", dir, "--resume"}
	if r := e2e.Faultline(t, append(args, "--records", "20000")...); r.Code != 0 {
		t.Fatalf("first run: exit %d, stderr %q", r.Code, r.Stderr)
	}
	oneLine(t, e2e.Faultline(t, append(args, "--records", "20000", "--seed", "2")...), "--seed 1", "--seed 2", "--fresh")
	oneLine(t, e2e.Faultline(t, append(args, "--records", "10000")...), "--records 20000", "only 10000")
	oneLine(t, e2e.Faultline(t, args...), "bounded input of --records 20000")
	oneLine(t, e2e.Faultline(t, append(args, "--records", "20000", "--job", "../../../fixtures/jobs/pipeline.yaml")...), "job orders", "job pipeline")
	more := e2e.Faultline(t, append(args, "--records", "30000")...)
	if more.Code != 0 || e2e.Num(more.Report, "verify", "duplicates") != 0 || e2e.Num(more.Report, "verify", "lost") != 0 {
		t.Fatalf("--records 30000: exit %d, verify %v, stderr %q", more.Code, more.Report["verify"], more.Stderr)
	}
}

// A run that fails before it wrote anything (its --brokers unreachable)
// leaves no record of its input behind, so the corrected run is not
// refused; a run that did write records its input, and going on from it
// with another input is still refused.
func TestFailedRunLeavesNoRecordOfItsInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := e2e.Faultline(t, "run", "--headless", "--brokers", "127.0.0.1:1", "--records", "1000", "--state-dir", dir)
	if r.Code != 1 {
		t.Fatalf("unreachable broker: exit %d, stderr %q; want 1", r.Code, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "input.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after a run that wrote nothing, input.json: %v; want none", err)
	}
	addr := e2e.StartBroker(t)
	args := []string{"run", "--headless", "--brokers", addr, "--generate", "--records", "1000", "--state-dir", dir}
	r = e2e.Faultline(t, args...)
	if r.Code != 0 || e2e.Num(r.Report, "verify", "expected") == 0 || e2e.Num(r.Report, "verify", "lost") != 0 {
		t.Fatalf("corrected run: exit %d, report %v, stderr %q", r.Code, r.Report, r.Stderr)
	}
	// input.json, as the state dir's table in docs/ARCHITECTURE.md has it.
	type inputRecord struct {
		Job     string `json:"job"`
		Seed    int64  `json:"seed"`
		Records int64  `json:"records"`
		Written int64  `json:"written,omitempty"`
	}
	var rec *inputRecord
	b, err := os.ReadFile(filepath.Join(dir, "input.json"))
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil || rec == nil || *rec != (inputRecord{Job: "orders", Seed: 1, Records: 1000}) {
		t.Fatalf("after a run that wrote: input.json holds %+v, %v", rec, err)
	}
	oneLine(t, e2e.Faultline(t, append(args, "--resume", "--seed", "2")...), "--seed 1", "--seed 2")
	oneLine(t, e2e.Faultline(t, append(args, "--resume", "--records", "500")...), "--records 1000", "only 500")
}
