package runs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// A job spec with verify: false runs without the oracle: no verification
// events, exit 0 although nothing was shown exactly once, and a report that
// says the verification was off and counts the records the sinks wrote.
// The same job with the oracle on counts the same records, committed.
func TestVerifyFalseRunsWithoutTheOracleAndSaysSo(t *testing.T) {
	t.Parallel()
	fixture, err := os.ReadFile(filepath.Join("..", "..", "..", "fixtures", "jobs", "orders.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	off := strings.Replace(string(fixture), "\nverify: paid-orders\n", "\nverify: false\n", 1)
	if off == string(fixture) {
		t.Fatal("the fixture no longer says verify: paid-orders")
	}
	job := filepath.Join(t.TempDir(), "orders-unverified.yaml")
	if err := os.WriteFile(job, []byte(off), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e2e.Faultline(t, "run", "--headless", "--records", "50000", "--job", job)
	if r.Code != 0 {
		t.Fatalf("exit %d, stderr %s", r.Code, r.Stderr)
	}
	for _, name := range []string{"verify_started", "verify_status"} {
		if n := len(r.EventsNamed(name)); n != 0 {
			t.Errorf("%d %s events with the verification off", n, name)
		}
	}
	v, _ := r.Report["verify"].(map[string]any)
	if reason, _ := v["off"].(string); !strings.Contains(reason, "verify: false") || v["ok"] != false {
		t.Fatalf("report's verify: %v", v)
	}
	checked := e2e.Faultline(t, "run", "--headless", "--records", "50000")
	if checked.Code != 0 {
		t.Fatalf("the same job verified: exit %d, stderr %s", checked.Code, checked.Stderr)
	}
	if got, want := e2e.Num(r.Report, "records_out"), e2e.Num(checked.Report, "verify", "committed"); got != want || got == 0 {
		t.Fatalf("records_out %v with the verification off, %v committed with it on", got, want)
	}
}
