package cli

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
)

// committedIDs reads the state dir's output topic as a read_committed
// consumer of its own (kcat, through `faultline broker` on the state dir)
// and counts each order id.
func committedIDs(t *testing.T, stateDir string) map[string]int {
	t.Helper()
	b, addr := startBrokerWith(t, "--state-dir", stateDir)
	out := kcat(t, "", "-b", addr, "-C", "-t", "revenue", "-e", "-q", "-X", "isolation.level=read_committed", "-f", "%s\n")
	b.Process.Signal(syscall.SIGTERM)
	b.Wait()
	ids := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			OrderID string `json:"order_id"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.OrderID == "" {
			t.Fatalf("output record %q: %v", line, err)
		}
		ids[r.OrderID]++
	}
	return ids
}

// deleteAllCheckpoints deletes every checkpoint in the state dir, newest
// first, as a user would with `faultline checkpoints delete ID --yes`.
func deleteAllCheckpoints(t *testing.T, dir string) {
	t.Helper()
	l := faultline(t, "checkpoints", "list", "--json", "--state-dir", dir)
	var cps []map[string]any
	if err := json.Unmarshal([]byte(l.stdout), &cps); err != nil || len(cps) == 0 {
		t.Fatalf("list --json: %v %q", err, l.stdout)
	}
	for i := len(cps) - 1; i >= 0; i-- {
		if d := faultline(t, "checkpoints", "delete", jsonNum(cps[i]["id"]), "--yes", "--state-dir", dir); d.code != 0 {
			t.Fatalf("delete %v: exit %d %s", cps[i]["id"], d.code, d.stderr)
		}
	}
}

// A resumed run on a state dir whose checkpoints were all deleted starts
// from the beginning of the input and writes nothing the output already
// holds a second time: the output read back holds every paid order once,
// and the report says so. (Where the broker has deleted the start of the
// input, it is refused instead: TestRetentionTrimsTheBrokerLog….)
func TestResumeWithNoCheckpointLeftWritesNothingTwice(t *testing.T) {
	t.Parallel()
	resumeIsExact := func(t *testing.T, dir string, args []string) {
		r := faultline(t, append(args, "--resume")...)
		if r.code != 0 || r.report == nil {
			t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
		}
		ids := committedIDs(t, dir)
		twice := 0
		for _, n := range ids {
			if n > 1 {
				twice++
			}
		}
		v := r.report["verify"].(map[string]any)
		if twice != 0 || float64(len(ids)) != v["expected"] || v["duplicates"] != 0.0 || v["lost"] != 0.0 || num(r.report, "replay_skipped") == 0 {
			t.Fatalf("the output holds %d ids, %d of them more than once; report verify %v, replay_skipped %v", len(ids), twice, v, r.report["replay_skipped"])
		}
	}
	t.Run("finished run", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		args := []string{"run", "--headless", "--records", "20000", "--state-dir", dir}
		if r := faultline(t, args...); r.code != 0 {
			t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
		}
		deleteAllCheckpoints(t, dir)
		resumeIsExact(t, dir, args)
	})
	t.Run("killed run", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		args := []string{"run", "--headless", "--records", "40000", "--checkpoint-interval", "100ms", "--state-dir", dir}
		cmd, _, lines := startRun(t, append(args, "--rate", "10000", "--listen", "0")...)
		waitEvents(t, lines, "checkpoint_completed", 3)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		for range lines {
		}
		deleteAllCheckpoints(t, dir)
		resumeIsExact(t, dir, args)
	})
}
