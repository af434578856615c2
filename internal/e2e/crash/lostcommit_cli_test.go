package crash

import (
	"bytes"
	"os/exec"
	"syscall"
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// A crash of the whole process right after a checkpoint completes, before
// the sink commits the transaction it pre-committed for it: the embedded
// broker dies with that transaction open and aborts it when it loads its
// log again. The resumed run writes the transaction's records again from
// the log, says so (txn_rewritten, for the checkpoint it restored), and its
// output holds every paid order once. Whether the crash comes before the
// commit is a race the crash nearly always wins; each try runs on a fresh
// state dir, and one rewrite in three tries is asked for (every try's
// output must be exact).
func TestCrashBeforeTheCommitRewritesTheLostTransaction(t *testing.T) {
	t.Parallel()
	rewritten := 0
	for try := 0; try < 3 && rewritten == 0; try++ {
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
			t.Fatalf("try %d, resumed run: exit %d, report %v, stderr %s", try+1, r.Code, r.Report, r.Stderr)
		}
		restored := r.EventsNamed("restored")
		if len(restored) == 0 {
			t.Fatalf("try %d: the resumed run restored no checkpoint:\n%.3000s", try+1, r.Stdout)
		}
		for _, e := range r.EventsNamed("txn_rewritten") {
			if e["task"] != "sink/0" || e["checkpoint"] != restored[0]["checkpoint"] || e2e.Num(e, "records") <= 0 {
				t.Fatalf("try %d: %v, after restoring checkpoint %v", try+1, e, restored[0]["checkpoint"])
			}
			rewritten++
		}
		t.Logf("try %d: restored checkpoint %v, %d lost transactions written again", try+1, restored[0]["checkpoint"], rewritten)
	}
	if rewritten == 0 {
		t.Fatal("three crashes right after a checkpoint completed, and no resumed run wrote a lost transaction again")
	}
}
