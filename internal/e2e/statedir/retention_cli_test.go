package statedir

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// A run on the embedded broker deletes from its log what no recovery and
// no verification needs, across a crash of the whole process and a
// resumed run, and the resumed run's verdict still covers everything from
// the first record: nothing lost, nothing duplicated. (The resumed run
// ends with its input, so that its check of the whole output is not held
// to the 3.5 s a stopped run has for it.)
func TestRetentionTrimsTheBrokerLogAndKeepsTheVerdictWhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"run", "--headless", "--records", "200000", "--rate", "10000", "--checkpoint-interval", "200ms",
		"--retention-interval", "300ms", "--listen", "0", "--state-dir", dir}
	cmd, _, lines := e2e.StartRun(t, args...)
	e2e.WaitEvents(t, lines, "checkpoint_completed", 15)
	// Killed once retention has deleted the first segment of partition 0
	// of the input and of the output (its files are gone from the log),
	// however slow or fast the machine made it: the input lasts 20 s, for
	// many rounds of retention before the run reaches its end.
	first := func(topic string) string {
		return filepath.Join(dir, "kafka", "partitions", topic+"-0", "0.dat")
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		gone := 0
		for _, topic := range []string{"orders", "payments", "revenue"} {
			if _, err := os.Stat(first(topic)); os.IsNotExist(err) {
				gone++
			}
		}
		if gone == 3 {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "faultline.log"))
			t.Fatalf("retention deleted no first segment of all three topics in a minute; the log:\n%s", log)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for range lines {
	}

	r := e2e.Faultline(t, append(args, "--resume")...)
	if r.Code != 0 || r.Report == nil {
		t.Fatalf("resumed run: exit %d, report %v\n%s", r.Code, r.Report, r.Stderr)
	}
	if e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 || e2e.Num(r.Report, "verify", "expected") < 10000 {
		t.Fatalf("verify %v", r.Report["verify"])
	}

	// The log no longer starts at 0, for the input and the output.
	b, addr := e2e.StartBrokerWith(t, "--state-dir", dir)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cl, err := sarama.NewClient([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"orders", "payments", "revenue"} {
		start, err := cl.GetOffset(topic, 0, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		if start == 0 {
			t.Errorf("%s/0 still starts at offset 0", topic)
		}
	}
	cl.Close()
	b.Process.Signal(syscall.SIGTERM)
	b.Wait()

	// With every checkpoint deleted, a resumed run would read the input
	// from its beginning, which the broker has deleted: it is refused, in
	// one line, and --fresh goes on.
	e2e.DeleteAllCheckpoints(t, dir)
	r = e2e.Faultline(t, append(args, "--resume")...)
	if r.Code != 1 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || !strings.Contains(r.Stderr, "holds no checkpoint of job orders") || !strings.Contains(r.Stderr, "--fresh") {
		t.Fatalf("resume with no checkpoint over a trimmed log: exit %d, stderr %q; want exit 1 and one line naming --fresh", r.Code, r.Stderr)
	}
	if r := e2e.Faultline(t, "run", "--headless", "--records", "5000", "--fresh", "--state-dir", dir); r.Code != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 {
		t.Fatalf("--fresh after the refusal: exit %d\n%s", r.Code, r.Stderr)
	}
}
