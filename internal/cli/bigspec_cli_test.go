package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pipelinesSpec writes a job spec of n pipelines shaped like
// fixtures/jobs/pipeline.yaml (source → enrich → sink over forward edges),
// each of parallelism p, the sinks writing topic (a format of the
// pipeline's number, or one name for all), and returns its path.
func pipelinesSpec(t *testing.T, n, p int, topic string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("name: pipelines\nmax_parallelism: 128\nverify: orders\noperators:\n")
	par := "" // parallelism 1 is the default: the tester's spec left it out
	if p != 1 {
		par = fmt.Sprintf("    parallelism: %d\n", p)
	}
	for i := range n {
		sink := topic
		if strings.Contains(topic, "%d") {
			sink = fmt.Sprintf(topic, i)
		}
		fmt.Fprintf(&b, "  - name: source-%d\n    type: source\n    topic: orders\n%s", i, par)
		fmt.Fprintf(&b, "  - name: enrich-%d\n    type: enrich\n%s    inputs:\n      - {from: source-%d, edge: forward}\n", i, par, i)
		fmt.Fprintf(&b, "  - name: sink-%d\n    type: sink\n    topic: %s\n%s    inputs:\n      - {from: enrich-%d, edge: forward}\n", i, sink, par, i)
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("pipelines-%d.yaml", n))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A valid job spec too big to run (the tester's: 3,334 pipelines, 10,002
// operators, 838 KB) is refused before anything starts: exit 2, one line
// that names the file and what is too big, and nothing in the state dir.
func TestJobTooBigIsRefusedBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		spec string
		want string
	}{
		{"the tester's spec", pipelinesSpec(t, 3334, 1, "out-%d"), "10002 operators, more than the 64"},
		{"too many subtasks", pipelinesSpec(t, 3, 30, "enriched-orders"), "270 subtasks"},
		{"too many topics", pipelinesSpec(t, 8, 1, "enriched-orders-%d"), "9 Kafka topics"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stateDir := filepath.Join(t.TempDir(), "state")
			cmd := command(t, "run", "--headless", "--job", tc.spec, "--records", "10000", "--state-dir", stateDir, "--listen", "0")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Before the fix the tester's spec ran for minutes: end it.
			stop := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
			defer stop.Stop()
			err := cmd.Wait()
			code := -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err == nil {
				code = 0
			}
			want := tc.spec + ":4: operators: the job is too big to run: "
			if code != 2 || !strings.HasPrefix(stderr.String(), "faultline: "+want) || !strings.Contains(stderr.String(), tc.want) ||
				strings.Count(stderr.String(), "\n") != 1 {
				t.Fatalf("exit %d, stderr %q; want exit 2 and one line %q…%s…", code, stderr.String(), want, tc.want)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout %q, want nothing: the run never started", stdout.String())
			}
			if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
				t.Errorf("the state dir was made (%v): the run started", err)
			}
		})
	}
}
