package statedir

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// copyDir copies the folder src, with everything in it, to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
}

// finishedRun is a state dir that a headless run of records records left,
// finished and verified.
func finishedRun(t *testing.T, records string) string {
	t.Helper()
	dir := t.TempDir()
	if r := e2e.Faultline(t, "run", "--headless", "--records", records, "--checkpoint-interval", "100ms", "--state-dir", dir); r.Code != 0 {
		t.Fatalf("first run: exit %d, stderr %q", r.Code, r.Stderr)
	}
	return dir
}

// trimmedRun is a state dir that an unbounded run left, stopped once
// retention had deleted the first segment of revenue/0 (1 MiB): its log
// starts above offset 0, and its ledger accounts for what was deleted.
func trimmedRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd, stderr, lines := e2e.StartRun(t, "run", "--headless", "--rate", "40000", "--checkpoint-interval", "100ms",
		"--retention-interval", "200ms", "--listen", "0", "--state-dir", dir)
	part := filepath.Join(dir, "kafka", "partitions", "revenue-0")
	first := filepath.Join(part, "0.dat")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		segs, _ := filepath.Glob(filepath.Join(part, "*.dat"))
		if _, err := os.Stat(first); len(segs) > 0 && errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("retention kept %s for a minute\n%s", first, stderr)
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	report := e2e.ReportOf(lines)
	// What is wanted is the state dir: a stop whose check of the whole
	// output did not fit its 3.5 s (a busy machine) leaves it as whole,
	// with the check to the next run, and says so.
	err := cmd.Wait()
	checkLeft := strings.Contains(stderr.String(), "stopped before the output was checked")
	if (err != nil || report == nil) && !checkLeft {
		t.Fatalf("unbounded run: %v, report %v\n%s", err, report, stderr)
	}
	return dir
}

// refused runs faultline with args, which must refuse to start: a run or a
// broker that starts anyway is stopped after twenty seconds.
func refused(t *testing.T, args ...string) e2e.Result {
	t.Helper()
	cmd := e2e.Command(t, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := time.AfterFunc(20*time.Second, func() { cmd.Process.Signal(syscall.SIGTERM) })
	defer stop.Stop()
	cmd.Wait()
	return e2e.Result{Code: cmd.ProcessState.ExitCode(), Stdout: out.String(), Stderr: errb.String()}
}

// Damage to the embedded broker's log in a state dir is refused before the
// broker reads it, by a run and by `faultline broker`, with one line that
// names the damaged file or part and the way on; the way on (--fresh, or
// faultline reset) then works on the same state dir.
func TestDamagedBrokerLogIsRefusedWithTheWayOn(t *testing.T) {
	t.Parallel()
	small := finishedRun(t, "5000")
	trimmed := trimmedRun(t)
	for _, tc := range []struct {
		name   string
		base   string
		damage string // a path in the state dir, and what to do to it
		where  string
		want   string
		reset  bool // the way on is faultline reset (else --fresh)
	}{
		{"topics.json missing", small, "kafka/topics.json rm", "kafka/topics.json: ", "it is missing, and the log holds partitions", false},
		{"the kafka folder missing", small, "kafka rm", "kafka: ", "the log is missing, and the state dir holds checkpoints", true},
		{"a byte changed in a record", small, "kafka/partitions/orders-1/0.dat flip", "orders-1/0.dat: ", "fails its CRC-32C", false},
		{"a segment cut short", small, "kafka/partitions/revenue-0/0.dat cut", "revenue-0/0.dat: ", "cut short", true},
		{"a segment deleted", small, "kafka/partitions/payments-2/0.dat rm", "payments-2/0.dat: ", "it is missing, and its index 0.idx is there", false},
		{"the ledger of a trimmed log missing", trimmed, "verify/ledger rm", "/partitions/", "verify/ledger, which accounts for the records retention deletes, is missing", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "state")
			copyDir(t, tc.base, dir)
			path, do, _ := strings.Cut(tc.damage, " ")
			damageFile(t, filepath.Join(dir, path), do)
			input := []string{"--records", "5000"}
			if tc.base == trimmed {
				input = []string{"--rate", "40000"}
			}
			run := append([]string{"run", "--headless", "--checkpoint-interval", "100ms", "--listen", "0", "--state-dir", dir, "--resume"}, input...)
			for _, r := range []e2e.Result{refused(t, run...), refused(t, "broker", "--listen", "0", "--state-dir", dir)} {
				line := strings.TrimRight(r.Stderr, "\n")
				if r.Code != 1 || strings.Contains(line, "\n") || !strings.Contains(line, "the embedded Kafka broker's log is damaged: ") ||
					!strings.Contains(line, tc.where) || !strings.Contains(line, tc.want) || !strings.Contains(line, "--fresh or faultline reset") {
					t.Fatalf("exit %d, stderr %q; want exit 1 and one line naming %s…%s…, and the way on", r.Code, r.Stderr, tc.where, tc.want)
				}
			}
			way := []string{"run", "--headless", "--records", "5000", "--checkpoint-interval", "100ms", "--state-dir", dir}
			if tc.reset {
				if r := e2e.Faultline(t, "reset", "--yes", "--state-dir", dir); r.Code != 0 {
					t.Fatalf("reset: exit %d, stderr %q", r.Code, r.Stderr)
				}
			} else {
				way = append(way, "--fresh")
			}
			if r := e2e.Faultline(t, way...); r.Code != 0 || e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 {
				t.Fatalf("the way on: exit %d, verify %v, stderr %q", r.Code, r.Report["verify"], r.Stderr)
			}
		})
	}
}

// damageFile does to path what do says: rm removes it (rm+idx its segment's
// index too), flip changes a byte in its middle, cut cuts it at its last
// record batch's start.
func damageFile(t *testing.T, path, do string) {
	t.Helper()
	var err error
	switch do {
	case "rm":
		err = os.RemoveAll(path)
	case "rm+idx":
		if err = os.Remove(path); err == nil {
			err = os.Remove(strings.TrimSuffix(path, ".dat") + ".idx")
		}
	case "flip":
		var b []byte
		if b, err = os.ReadFile(path); err == nil {
			b[len(b)/2] ^= 0x5a
			err = os.WriteFile(path, b, 0o644)
		}
	case "cut":
		var b []byte
		if b, err = os.ReadFile(path); err == nil {
			last := 0
			for pos := 0; pos+12 <= len(b); pos += 12 + int(uint32(b[pos+8])<<24|uint32(b[pos+9])<<16|uint32(b[pos+10])<<8|uint32(b[pos+11])) {
				last = pos
			}
			err = os.Truncate(path, int64(last))
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}
