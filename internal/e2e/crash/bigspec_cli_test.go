package crash

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/faultline-dev/faultline/internal/e2e"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/spec"
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
			cmd := e2e.Command(t, "run", "--headless", "--job", tc.spec, "--records", "10000", "--state-dir", stateDir, "--listen", "0")
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

// nearLimitSpec writes a job spec just under faultline's limits, in the
// tester's shape: 21 pipelines source[4] → enrich[4] → sink[1] (63
// operators of the 64; 189 subtasks, 21 sink subtasks), the sinks writing
// seven topics (eight with orders, the limit).
func nearLimitSpec(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("name: near-limit\nverify: orders\noperators:\n")
	for i := range 21 {
		fmt.Fprintf(&b, "  - {name: source-%d, type: source, topic: orders, parallelism: 4}\n", i)
		fmt.Fprintf(&b, "  - {name: enrich-%d, type: enrich, parallelism: 4, inputs: [{from: source-%d, edge: forward}]}\n", i, i)
		fmt.Fprintf(&b, "  - {name: sink-%d, type: sink, topic: out-%d, inputs: [{from: enrich-%d, edge: rebalance}]}\n", i, i%7, i)
	}
	path := filepath.Join(t.TempDir(), "near-limit.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := spec.Load(path, orders.Catalogue())
	if err != nil {
		t.Fatal(err)
	}
	if s := spec.SizeOf(j); s.Operators != spec.MaxOperators-1 || s.Topics != spec.MaxTopics {
		t.Fatalf("the spec is %+v, not just under the limits", s)
	}
	return path
}

// SIGTERM and Ctrl-C end a run of a job just under the limits within 5 s
// wherever the run is — writing the input, deploying its subtasks,
// restoring them from a checkpoint, running — with a line on stderr that
// says it stopped: the supervisor and its child are gone. Before, a stop
// while the job restored took 10 s under -race, settling the outputs.
func TestStopEndsARunOfABigJobWithinFiveSeconds(t *testing.T) {
	t.Parallel()
	job := nearLimitSpec(t)
	event := func(name string) func(map[string]any) bool {
		return func(m map[string]any) bool { return m["event"] == name }
	}
	cases := []struct {
		name   string
		args   []string
		sig    syscall.Signal
		when   func(map[string]any) bool
		before []string // a run killed after its first checkpoint, to go on from
	}{
		{"writing the input", []string{"--records", "2000000"}, syscall.SIGTERM, event("input_progress"), nil},
		{"deploying", []string{"--records", "10000"}, syscall.SIGTERM, func(m map[string]any) bool {
			return m["event"] == "task_status" && m["status"] == "DEPLOYING"
		}, nil},
		{"restoring", []string{"--rate", "200", "--resume"}, syscall.SIGTERM, event("restored"), []string{"--rate", "200"}},
		{"running", []string{"--rate", "200"}, syscall.SIGINT, event("checkpoint_completed"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			base := []string{"run", "--headless", "--job", job, "--state-dir", dir, "--listen", "0", "--checkpoint-interval", "500ms"}
			if tc.before != nil {
				faultlineUntil(t, "checkpoint_completed", 1, append(base, tc.before...)...)
			}
			cmd, stderr, lines := e2e.StartRun(t, append(base, tc.args...)...)
			came := false
			for m := range lines {
				if came = tc.when(m); came {
					break
				}
			}
			if !came {
				cmd.Wait()
				t.Fatalf("the run ended before the moment to stop it; stderr %q", stderr)
			}
			child := childOf(t, cmd.Process.Pid)
			sent := time.Now()
			cmd.Process.Signal(tc.sig)
			go func() {
				for range lines {
				}
			}()
			waited := make(chan struct{})
			go func() {
				cmd.Wait()
				close(waited)
			}()
			select {
			case <-waited:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("faultline still runs 30 s after %s; stderr %q", unix.SignalName(tc.sig), stderr)
			}
			took := time.Since(sent)
			t.Logf("gone %s after %s (exit %d)", took.Round(time.Millisecond), unix.SignalName(tc.sig), cmd.ProcessState.ExitCode())
			if took > 5*time.Second {
				t.Errorf("faultline ended %s after %s, want within 5 s; stderr %q", took.Round(time.Millisecond), unix.SignalName(tc.sig), stderr)
			}
			if err := syscall.Kill(child, 0); err != syscall.ESRCH {
				t.Errorf("the supervised child %d is still there (%v)", child, err)
			}
			if want := "faultline: stopped by " + unix.SignalName(tc.sig); !strings.HasPrefix(stderr.String(), want) && !strings.Contains(stderr.String(), "\n"+want) {
				t.Errorf("stderr %q does not say %q", stderr, want)
			}
		})
	}
}
