package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oneLine fails t unless r exited 2 with one line on stderr that holds
// every one of want.
func oneLine(t *testing.T, r result, want ...string) {
	t.Helper()
	line := strings.TrimRight(r.stderr, "\n")
	if r.code != 2 || strings.Contains(line, "\n") {
		t.Fatalf("exit %d, stderr %q; want exit 2 and one line", r.code, r.stderr)
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
	first := faultline(t, args...)
	if first.code != 0 {
		t.Fatalf("first run: exit %d, stderr %q", first.code, first.stderr)
	}
	oneLine(t, faultline(t, args...), "already holds", "checkpoints of job orders", "the embedded broker's log", "--resume", "--fresh")
	resumed := faultline(t, append(args, "--resume")...)
	if resumed.code != 0 || num(resumed.report, "verify", "duplicates") != 0 || num(resumed.report, "verify", "expected") != num(first.report, "verify", "expected") {
		t.Fatalf("--resume: exit %d, verify %v, stderr %q", resumed.code, resumed.report["verify"], resumed.stderr)
	}
	fresh := faultline(t, append(args, "--fresh")...)
	if fresh.code != 0 || !strings.Contains(fresh.stderr, "--fresh: deleted the checkpoints") ||
		num(fresh.report, "verify", "committed") != num(first.report, "verify", "committed") || num(fresh.report, "verify", "duplicates") != 0 {
		t.Fatalf("--fresh: exit %d, verify %v, stderr %q", fresh.code, fresh.report["verify"], fresh.stderr)
	}
	if from := fresh.report["checkpoints"].(map[string]any)["restored_from"].([]any); len(from) != 0 {
		t.Fatalf("--fresh restored %v", from)
	}
	oneLine(t, faultline(t, append(args, "--fresh", "--resume")...), "--fresh and --resume")
}

// Going on from a state dir with another input than the one its broker
// log holds is refused, naming the stored value; more records are fine.
func TestResumeWithOtherInputIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"run", "--headless", "--checkpoint-interval", "100ms", "--state-dir", dir, "--resume"}
	if r := faultline(t, append(args, "--records", "20000")...); r.code != 0 {
		t.Fatalf("first run: exit %d, stderr %q", r.code, r.stderr)
	}
	oneLine(t, faultline(t, append(args, "--records", "20000", "--seed", "2")...), "--seed 1", "--seed 2", "--fresh")
	oneLine(t, faultline(t, append(args, "--records", "10000")...), "--records 20000", "only 10000")
	oneLine(t, faultline(t, args...), "bounded input of --records 20000")
	oneLine(t, faultline(t, append(args, "--records", "20000", "--job", "../../fixtures/jobs/pipeline.yaml")...), "job orders", "job pipeline")
	more := faultline(t, append(args, "--records", "30000")...)
	if more.code != 0 || num(more.report, "verify", "duplicates") != 0 || num(more.report, "verify", "lost") != 0 {
		t.Fatalf("--records 30000: exit %d, verify %v, stderr %q", more.code, more.report["verify"], more.stderr)
	}
}

// A run that fails before it wrote anything (its --brokers unreachable)
// leaves no record of its input behind, so the corrected run is not
// refused; a run that did write records its input, and going on from it
// with another input is still refused.
func TestFailedRunLeavesNoRecordOfItsInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := faultline(t, "run", "--headless", "--brokers", "127.0.0.1:1", "--records", "1000", "--state-dir", dir)
	if r.code != 1 {
		t.Fatalf("unreachable broker: exit %d, stderr %q; want 1", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, inputFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after a run that wrote nothing, %s: %v; want none", inputFile, err)
	}
	addr := startBroker(t)
	args := []string{"run", "--headless", "--brokers", addr, "--generate", "--records", "1000", "--state-dir", dir}
	r = faultline(t, args...)
	if r.code != 0 || num(r.report, "verify", "expected") == 0 || num(r.report, "verify", "lost") != 0 {
		t.Fatalf("corrected run: exit %d, report %v, stderr %q", r.code, r.report, r.stderr)
	}
	rec, err := readInputRecord(dir)
	if err != nil || rec == nil || *rec != (inputRecord{Job: "orders", Seed: 1, Records: 1000}) {
		t.Fatalf("after a run that wrote: %s holds %+v, %v", inputFile, rec, err)
	}
	oneLine(t, faultline(t, append(args, "--resume", "--seed", "2")...), "--seed 1", "--seed 2")
	oneLine(t, faultline(t, append(args, "--resume", "--records", "500")...), "--records 1000", "only 500")
}
