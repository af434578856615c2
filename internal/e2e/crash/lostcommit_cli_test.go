package crash

import (
	"bytes"
	"os/exec"
	"syscall"
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// A crash of the whole process as a checkpoint completes, before the sink
// commits the transaction it pre-committed for it (the after-checkpoints
// crash fault dies before the coordinator tells the subtasks): the
// embedded broker dies with that transaction open and aborts it when it
// loads its log again. The resumed run writes the transaction's records
// again from the log, says so (txn_rewritten, for the checkpoint it
// restored), and its output holds every paid order once.
func TestCrashBeforeTheCommitRewritesTheLostTransaction(t *testing.T) {
	t.Parallel()
	base := []string{"run", "--headless", "--records", "60000", "--rate", "20000", "--checkpoint-interval", "300ms",
		"--state-dir", t.TempDir(), "--listen", "0"}
	cmd := e2e.Command(t, append(base, "--inject", "after-checkpoints=3,fault=crash")...)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the crash fault did not kill the process: %v\n%s", err, out.String())
	}
	r := e2e.Faultline(t, append(base, "--resume")...)
	if r.Code != 0 || e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 {
		t.Fatalf("resumed run: exit %d, report %v, stderr %s", r.Code, r.Report, r.Stderr)
	}
	restored := r.EventsNamed("restored")
	if len(restored) == 0 || restored[0]["checkpoint"] != 3.0 {
		t.Fatalf("the resumed run restored %v, want checkpoint 3:\n%.3000s", restored, r.Stdout)
	}
	rewritten := r.EventsNamed("txn_rewritten")
	if len(rewritten) != 1 || rewritten[0]["task"] != "sink/0" || rewritten[0]["checkpoint"] != 3.0 || e2e.Num(rewritten[0], "records") <= 0 {
		t.Fatalf("txn_rewritten %v, want one of sink/0 for checkpoint 3 with records:\n%.3000s", rewritten, r.Stdout)
	}
}
