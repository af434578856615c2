package crash

import (
	"encoding/json"
	"testing"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// The second job spec, fixtures/jobs/pipeline.yaml, names its own id and
// sink key (id: order_id, key: tier): run with the embedded broker in the
// process, killed (SIGKILL) after its third checkpoint, broker and all, and
// resumed, it ends exact, and its committed output is keyed by each
// record's tier and holds every order once.
func TestPipelineSpecThroughAKillKeysByItsOwnFields(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := []string{"run", "--headless", "--job", "../../../fixtures/jobs/pipeline.yaml", "--records", "30000", "--rate", "10000",
		"--checkpoint-interval", "200ms", "--state-dir", dir, "--listen", "0"}
	faultlineUntil(t, "checkpoint_completed", 3, base...)
	r := e2e.Faultline(t, append(base, "--resume")...)
	expected := int(e2e.Num(r.Report, "verify", "expected"))
	if r.Code != 0 || e2e.Num(r.Report, "verify", "lost") != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 || expected == 0 {
		t.Fatalf("resume: exit %d, verify %v, stderr %q", r.Code, r.Report["verify"], r.Stderr)
	}
	seen := map[string]int{}
	for _, rec := range e2e.Committed(t, dir, "enriched-orders") {
		var v struct {
			OrderID string `json:"order_id"`
			Tier    string `json:"tier"`
		}
		if err := json.Unmarshal([]byte(rec.Value), &v); err != nil || v.OrderID == "" || v.Tier == "" {
			t.Fatalf("output record %q: %v", rec.Value, err)
		}
		if rec.Key != v.Tier {
			t.Fatalf("record %s is keyed %q, want its tier %q (the spec's key)", v.OrderID, rec.Key, v.Tier)
		}
		seen[v.OrderID]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("order %s is in the output %d times", id, n)
		}
	}
	if len(seen) != expected {
		t.Fatalf("the output holds %d orders, the verification expected %d", len(seen), expected)
	}
}
