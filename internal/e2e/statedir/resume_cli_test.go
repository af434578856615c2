package statedir

import (
	"syscall"
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// A resumed run on a state dir whose checkpoints were all deleted starts
// from the beginning of the input and writes nothing the output already
// holds a second time: the output read back holds every paid order once,
// and the report says so. (Where the broker has deleted the start of the
// input, it is refused instead: TestRetentionTrimsTheBrokerLog….)
func TestResumeWithNoCheckpointLeftWritesNothingTwice(t *testing.T) {
	t.Parallel()
	resumeIsExact := func(t *testing.T, dir string, args []string) {
		r := e2e.Faultline(t, append(args, "--resume")...)
		if r.Code != 0 || r.Report == nil {
			t.Fatalf("resume: exit %d\n%s", r.Code, r.Stderr)
		}
		ids := e2e.CommittedIDs(t, dir)
		twice := 0
		for _, n := range ids {
			if n > 1 {
				twice++
			}
		}
		v := r.Report["verify"].(map[string]any)
		if twice != 0 || float64(len(ids)) != v["expected"] || v["duplicates"] != 0.0 || v["lost"] != 0.0 || e2e.Num(r.Report, "replay_skipped") == 0 {
			t.Fatalf("the output holds %d ids, %d of them more than once; report verify %v, replay_skipped %v", len(ids), twice, v, r.Report["replay_skipped"])
		}
	}
	t.Run("finished run", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		args := []string{"run", "--headless", "--records", "20000", "--state-dir", dir}
		if r := e2e.Faultline(t, args...); r.Code != 0 {
			t.Fatalf("first run: exit %d\n%s", r.Code, r.Stderr)
		}
		e2e.DeleteAllCheckpoints(t, dir)
		resumeIsExact(t, dir, args)
	})
	t.Run("killed run", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		args := []string{"run", "--headless", "--records", "40000", "--checkpoint-interval", "100ms", "--state-dir", dir}
		cmd, _, lines := e2e.StartRun(t, append(args, "--rate", "10000", "--listen", "0")...)
		// Killed once the output holds something: records reached the join
		// (a checkpoint with its state in it), and three checkpoints later
		// the sink has committed what the join made of them.
		for m := range lines {
			if m["event"] == "checkpoint_completed" && e2e.Num(m, "size_bytes") > 20000 {
				break
			}
		}
		e2e.WaitEvents(t, lines, "checkpoint_completed", 3)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		for range lines {
		}
		e2e.DeleteAllCheckpoints(t, dir)
		resumeIsExact(t, dir, args)
	})
}
