package runs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
	"github.com/faultline-dev/faultline/internal/rest/resttest"
)

// events keeps a run's events as they come, for a test that acts on the
// run meanwhile.
type events struct {
	mu   sync.Mutex
	all  []map[string]any
	done chan struct{}
}

func collect(lines <-chan map[string]any) *events {
	e := &events{done: make(chan struct{})}
	go func() {
		defer close(e.done)
		for m := range lines {
			e.mu.Lock()
			e.all = append(e.all, m)
			e.mu.Unlock()
		}
	}()
	return e
}

// await waits for an event that match says is the one, and returns it.
func (e *events) await(t *testing.T, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	return e.awaitNth(t, 1, what, match)
}

// awaitNth waits for the nth event that match says is one.
func (e *events) awaitNth(t *testing.T, n int, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		e.mu.Lock()
		seen := 0
		for _, m := range e.all {
			if match(m) {
				if seen++; seen == n {
					e.mu.Unlock()
					return m
				}
			}
		}
		e.mu.Unlock()
		select {
		case <-e.done:
			t.Fatalf("the run ended with no %s", what)
		default:
		}
	}
	t.Fatalf("waited two minutes for %s", what)
	return nil
}

func named(name string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["event"] == name }
}

// getJSON GETs url and decodes its JSON answer.
func getJSON(t *testing.T, url string) any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var v any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", url, resp.StatusCode, err)
	}
	return v
}

// startServing starts a headless run with its REST API on a free port and
// returns it with the API's address and the job's id, once a checkpoint
// has completed.
func startServing(t *testing.T, dir string, extra ...string) (*events, func() (int, string), string, string) {
	t.Helper()
	args := append([]string{"run", "--headless", "--generate", "--rate", "3000", "--checkpoint-interval", "300ms",
		"--restart-delay", "100ms", "--rest-addr", "127.0.0.1:0", "--listen", "0", "--state-dir", dir}, extra...)
	cmd, stderr, lines := e2e.StartRun(t, args...)
	ev := collect(lines)
	wait := func() (int, string) {
		<-ev.done
		cmd.Wait()
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	started := ev.await(t, "run_started", named("run_started"))
	notice := ev.await(t, "the REST API's notice", func(m map[string]any) bool {
		text, _ := m["text"].(string)
		return m["event"] == "notice" && strings.Contains(text, "REST API")
	})
	addr := regexp.MustCompile(`http://([^,\s]+)`).FindStringSubmatch(notice["text"].(string))
	jobID, _ := started["job_id"].(string)
	if addr == nil || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(jobID) {
		t.Fatalf("notice %v, run_started %v", notice, started)
	}
	ev.await(t, "a completed checkpoint", named("checkpoint_completed"))
	return ev, wait, addr[1], jobID
}

// While a headless run goes on, faultline list finds it through its state
// dir, curl reads Flink's JSON shapes, faultline savepoint takes a
// savepoint its events confirm, and faultline stop --savepoint ends it
// with one; then nothing runs there.
func TestRESTSavepointAndStopFromAnotherShell(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ev, wait, addr, jobID := startServing(t, dir, "--inject", "after-records=3000,task=join/1,fault=panic")
	list := e2e.Faultline(t, "list", "--state-dir", dir)
	if list.Code != 0 || !strings.Contains(list.Stdout, " : "+jobID+" : orders (R") {
		t.Fatalf("faultline list: %d\n%s%s", list.Code, list.Stdout, list.Stderr)
	}
	// A savepoint is taken of a running job (Flink refuses one too while
	// the job restarts).
	ev.awaitNth(t, 2, "RUNNING again after the injected panic", func(e map[string]any) bool {
		return e["event"] == "job_status" && e["status"] == "RUNNING"
	})
	checkShapes(t, "http://"+addr, jobID)

	sp := e2e.Faultline(t, "savepoint", "--state-dir", dir)
	m := regexp.MustCompile(`Savepoint completed\. Path: (\d+)\n`).FindStringSubmatch(sp.Stdout)
	if sp.Code != 0 || m == nil {
		t.Fatalf("faultline savepoint: %d\n%s%s", sp.Code, sp.Stdout, sp.Stderr)
	}
	ev.await(t, "savepoint_completed "+m[1], func(e map[string]any) bool {
		return e["event"] == "savepoint_completed" && fmt.Sprint(e["id"]) == m[1]
	})

	stop := e2e.Faultline(t, "stop", "--savepoint", "--state-dir", dir)
	m = regexp.MustCompile(`Savepoint completed\. Path: (\d+)\n`).FindStringSubmatch(stop.Stdout)
	if stop.Code != 0 || m == nil {
		t.Fatalf("faultline stop --savepoint: %d\n%s%s", stop.Code, stop.Stdout, stop.Stderr)
	}
	code, stderr := wait()
	report := ev.await(t, "the report", func(e map[string]any) bool { return e["report"] != nil })["report"].(map[string]any)
	verdict := report["verify"].(map[string]any)
	if code != 0 || fmt.Sprint(report["savepoint"]) != m[1] || report["status"] != "CANCELED" || verdict["ok"] != true {
		t.Fatalf("exit %d, report %v; stderr:\n%s", code, report, stderr)
	}
	if !strings.Contains(stderr, "stopped with a savepoint through the REST API") {
		t.Errorf("stderr does not say how the run stopped:\n%s", stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "rest.json")); !os.IsNotExist(err) {
		t.Errorf("rest.json left in the state dir: %v", err)
	}
	if list := e2e.Faultline(t, "list", "--state-dir", dir); list.Code != 0 || !strings.HasPrefix(list.Stdout, "No running jobs") {
		t.Errorf("faultline list after the stop: %d\n%s%s", list.Code, list.Stdout, list.Stderr)
	}
}

// checkShapes reads each GET path of the API and holds it to the schema
// of Flink's REST API documentation.
func checkShapes(t *testing.T, base, jobID string) {
	t.Helper()
	api := resttest.Load(t)
	j := base + "/jobs/" + jobID
	details := getJSON(t, j)
	var join string
	for _, v := range resttest.Obj(details)["vertices"].([]any) {
		if resttest.Obj(v)["name"] == "join" {
			join = resttest.Obj(v)["id"].(string)
		}
	}
	cps := getJSON(t, j+"/checkpoints")
	last := resttest.Obj(resttest.Obj(cps)["latest"])["completed"]
	cid := fmt.Sprint(resttest.Obj(last)["id"])
	exceptions := getJSON(t, j+"/exceptions")
	entries, _ := resttest.Obj(resttest.Obj(exceptions)["exceptionHistory"])["entries"].([]any)
	if join == "" || last == nil || len(entries) == 0 || resttest.Obj(entries[0])["taskName"] != "join (2/2)" {
		t.Fatalf("join vertex %q, latest completed %v, exceptions %v", join, last, exceptions)
	}
	for path, flink := range map[string]string{
		"/jobs/overview":                                 "/jobs/overview",
		"/jobs/" + jobID:                                 "/jobs/{jobid}",
		"/jobs/" + jobID + "/checkpoints":                "/jobs/{jobid}/checkpoints",
		"/jobs/" + jobID + "/checkpoints/details/" + cid: "/jobs/{jobid}/checkpoints/details/{checkpointid}",
		"/jobs/" + jobID + "/checkpoints/details/" + cid + "/subtasks/" + join: "/jobs/{jobid}/checkpoints/details/{checkpointid}/subtasks/{vertexid}",
		"/jobs/" + jobID + "/exceptions":                                       "/jobs/{jobid}/exceptions",
		"/jobs/" + jobID + "/vertices/" + join + "/backpressure":               "/jobs/{jobid}/vertices/{vertexid}/backpressure",
	} {
		api.Check(t, path, getJSON(t, base+path), api.Response(t, "get", flink))
	}
}

// faultline cancel ends a run from another shell: its outputs are left as
// its last checkpoint had them and checked.
func TestRESTCancelFromAnotherShell(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, wait, _, jobID := startServing(t, dir)
	cancel := e2e.Faultline(t, "cancel", jobID, "--state-dir", dir)
	if cancel.Code != 0 || cancel.Stdout != "Cancelled job "+jobID+".\n" {
		t.Fatalf("faultline cancel: %d\n%s%s", cancel.Code, cancel.Stdout, cancel.Stderr)
	}
	if code, stderr := wait(); code != 0 || !strings.Contains(stderr, "cancelled through the REST API") {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	// Nothing runs there now, and a command that needs a job says so.
	if sp := e2e.Faultline(t, "savepoint", "--state-dir", dir); sp.Code != 1 || !strings.Contains(sp.Stderr, "no running job in "+dir) {
		t.Fatalf("faultline savepoint with no run: %d\n%s%s", sp.Code, sp.Stdout, sp.Stderr)
	}
}
