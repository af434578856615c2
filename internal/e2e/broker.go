package e2e

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// StartBroker runs `faultline broker` and returns its address.
func StartBroker(t *testing.T) string {
	t.Helper()
	_, addr := StartBrokerProcess(t)
	return addr
}

// StartBrokerProcess starts `faultline broker`, stopped when the test ends,
// and returns it with its address.
func StartBrokerProcess(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	return StartBrokerWith(t, "--in-memory")
}

// StartBrokerWith starts `faultline broker` with args (--in-memory, or
// --state-dir DIR), stopped when the test ends, and returns it with its
// address.
func StartBrokerWith(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := Command(t, append([]string{"broker", "--listen", "0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("faultline broker printed nothing: %v", err)
	}
	_, rest, ok := strings.Cut(line, "listening on ")
	addr, _, _ := strings.Cut(rest, " ")
	if !ok || addr == "" {
		t.Fatalf("no address in %q", line)
	}
	return cmd, addr
}

// Kcat runs kcat with args and stdin and returns what it printed; it fails
// t when kcat fails or is not installed.
func Kcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatal("kcat is not installed: `make deps` (or .ci/run) installs it from Debian's packages")
	}
	cmd := exec.Command("kcat", args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kcat %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// CommittedIDs reads the state dir's output topic as a read_committed
// consumer of its own (kcat, through `faultline broker` on the state dir)
// and counts each order id.
func CommittedIDs(t *testing.T, stateDir string) map[string]int {
	t.Helper()
	ids := map[string]int{}
	for _, r := range Committed(t, stateDir, "revenue") {
		var v struct {
			OrderID string `json:"order_id"`
		}
		if err := json.Unmarshal([]byte(r.Value), &v); err != nil || v.OrderID == "" {
			t.Fatalf("output record %q: %v", r.Value, err)
		}
		ids[v.OrderID]++
	}
	return ids
}

// KV is a record's key and value.
type KV struct{ Key, Value string }

// Committed reads topic of the state dir's embedded broker as a
// read_committed consumer of its own (kcat, through `faultline broker` on
// the state dir): every record's key and value.
func Committed(t *testing.T, stateDir, topic string) []KV {
	t.Helper()
	b, addr := StartBrokerWith(t, "--state-dir", stateDir)
	out := Kcat(t, "", "-b", addr, "-C", "-t", topic, "-e", "-q", "-X", "isolation.level=read_committed", "-f", "%k\t%s\n")
	b.Process.Signal(syscall.SIGTERM)
	b.Wait()
	var recs []KV
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("kcat printed %q, want key, tab, value", line)
		}
		recs = append(recs, KV{k, v})
	}
	return recs
}

// DeleteAllCheckpoints deletes every checkpoint in the state dir, newest
// first, as a user would with `faultline checkpoints delete ID --yes`.
func DeleteAllCheckpoints(t *testing.T, dir string) {
	t.Helper()
	l := Faultline(t, "checkpoints", "list", "--json", "--state-dir", dir)
	var cps []map[string]any
	if err := json.Unmarshal([]byte(l.Stdout), &cps); err != nil || len(cps) == 0 {
		t.Fatalf("list --json: %v %q", err, l.Stdout)
	}
	for i := len(cps) - 1; i >= 0; i-- {
		if d := Faultline(t, "checkpoints", "delete", JSONNum(cps[i]["id"]), "--yes", "--state-dir", dir); d.Code != 0 {
			t.Fatalf("delete %v: exit %d %s", cps[i]["id"], d.Code, d.Stderr)
		}
	}
}
