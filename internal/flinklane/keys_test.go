//go:build flink

package flinklane

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// The keys of `faultline attach` drive the Flink job through its REST API:
// c triggers a checkpoint that completes, s a savepoint, S S stops the
// job with a savepoint; each appears in Flink's REST API. The job takes
// no periodic checkpoint (its interval is an hour), so every one is the
// keys'. The peer keeps its REST API up for a while after the job ends
// (linger), so that the stop's savepoint and the job's end are seen
// there, by the test and by the screen.
func TestAttachKeysCheckpointSavepointAndStopAFlinkJob(t *testing.T) {
	lib := Lib(t)
	addr := Broker(t, 100_000)
	p := StartPeer(t, lib, addr, "bounded=false", "interval=1h", "output=revenue-keys", "prefix=keys", "linger="+keysLinger.String())
	api := watchCheckpoints(t, p)
	s := startAttach(t, p, addr)
	// Flink takes a checkpoint only once every subtask runs.
	s.WaitFor("the job RUNNING, every subtask RUNNING", time.Minute, func(sc string) bool {
		return e2e.HeaderStatus(sc) == "RUNNING" && allRows(sc)
	})

	s.Keys("c")
	waitFor(t, time.Minute, "the checkpoint triggered with c completed in Flink's REST API", func() (bool, error) {
		return api.count(false) == 1, nil
	})
	s.WaitFor("the checkpoint on the screen", 10*time.Second, e2e.Contains("checkpoint 1 completed in"))

	s.Keys("s")
	waitFor(t, time.Minute, "the savepoint taken with s completed in Flink's REST API", func() (bool, error) {
		return api.count(true) == 1, nil
	})
	s.WaitFor("the savepoint on the screen", 10*time.Second, e2e.Contains("written"))

	s.Keys("S")
	s.WaitFor("S asked again", 5*time.Second, e2e.Contains("press S again to stop the job with a savepoint"))
	s.Keys("S")
	checkStopped(t, p, api, s)
	// Both savepoints are also where Flink writes the job's savepoints.
	if metas, _ := filepath.Glob(filepath.Join(p.CheckpointDir, "savepoints", "savepoint-*", "_metadata")); len(metas) != 2 {
		t.Errorf("%d savepoints written under %s, want 2 (s, then S S): %q", len(metas), p.CheckpointDir, metas)
	}
	if err := p.Wait(2*time.Minute + keysLinger); err != nil {
		t.Fatalf("the peer after stop with a savepoint: %v", err)
	}
	lines := p.Lines()
	if last := lines[len(lines)-1]; !strings.Contains(last, `"net_runtime_ms"`) {
		t.Errorf("the peer's last line after stop with a savepoint: %q (want its end)", last)
	}
}

// keysLinger is how long the peer of the keys' test keeps its REST API up
// after its job ended: time for the checks of checkStopped, which the
// peer's exit would otherwise cut short.
const keysLinger = 15 * time.Second

// checkStopped holds a stop with a savepoint to what Flink's REST API says
// once the job ended: both savepoints (s's and the stop's) completed, the
// job FINISHED, and the screen's header FINISHED while the API still
// answers (before the peer exits).
func checkStopped(t *testing.T, p *Peer, api *restCheckpoints, s *e2e.Session) {
	t.Helper()
	waitFor(t, 2*time.Minute, "the job FINISHED in Flink's REST API", func() (bool, error) {
		state, err := p.State()
		return state == "FINISHED", err
	})
	// The watcher polls every 200 ms: it may see the stop's savepoint a
	// moment after the job's state.
	waitFor(t, 5*time.Second, "the stop's savepoint completed in Flink's REST API", func() (bool, error) {
		return api.count(true) == 2, nil
	})
	s.WaitFor("the job FINISHED on the screen", 10*time.Second, func(sc string) bool {
		return e2e.HeaderStatus(sc) == "FINISHED"
	})
	select {
	case <-p.exited:
		t.Errorf("the peer exited (%v) before the checks of its end were done: linger %s is too short", p.err, keysLinger)
	default:
	}
}

// A panic injected from the keys into the peer job's join subtask, through
// its control topic, makes Flink restart the job: the screen shows the
// failure's root cause and the restore, and the live verify line nothing
// lost or twice; faultline verify then finds every paid order in the
// job's committed output once.
func TestAPanicFromTheKeysRestartsTheFlinkJobAndNothingIsLost(t *testing.T) {
	lib := Lib(t)
	addr := Broker(t, 600_000)
	p := StartPeer(t, lib, addr, "bounded=true", "interval=1s", "output=revenue-panic", "prefix=panic")
	s := startAttach(t, p, addr, "--output", "revenue-panic")
	s.WaitFor("a completed checkpoint, join/0 selected", time.Minute, func(sc string) bool {
		return completedOnScreen.MatchString(sc) && strings.Contains(sc, "▸join/0")
	})
	s.Inject("1", "panic", "join/0")
	s.WaitFor("the failure's root cause and the restore", time.Minute, func(sc string) bool {
		return strings.Contains(sc, "join/0 failed: java.lang.RuntimeException: injected panic from the control topic") &&
			strings.Contains(sc, "restored checkpoint")
	})
	restored := regexp.MustCompile(`restored from checkpoint (\d+)`)
	liveLine := regexp.MustCompile(`verify +committed [\d,]+ +dup 0 +lost 0 ✓ +as of #(\d+)`)
	s.WaitFor("the live verify line past the restore, nothing lost or twice", time.Minute, func(sc string) bool {
		r, v := restored.FindStringSubmatch(sc), liveLine.FindStringSubmatch(sc)
		if strings.Contains(sc, "verify  committed") && !strings.Contains(sc, "dup 0  lost 0") {
			t.Fatalf("the live verify line says something was lost or twice:\n%s", sc)
		}
		return r != nil && v != nil && atoi(v[1]) > atoi(r[1])
	})
	if err := p.Wait(5 * time.Minute); err != nil {
		t.Fatalf("the peer after the panic: %v", err)
	}
	v, code := verifyOutput(t, addr, "revenue-panic")
	if code != 0 || v.Duplicates != 0 || v.Lost != 0 || v.Expected == 0 || v.Committed != v.Expected {
		t.Fatalf("faultline verify after the panic: exit %d, %+v", code, v)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// verdict is what faultline verify --json says.
type verdict struct {
	Expected, Committed, Duplicates, Lost int
	OK                                    bool
}

// verifyOutput runs faultline verify on output and returns its verdict
// and exit code.
func verifyOutput(t *testing.T, addr, output string, args ...string) (verdict, int) {
	t.Helper()
	cmd := exec.Command(e2e.Binary(t), append([]string{"verify", "--brokers", addr, "--output", output, "--json"}, args...)...)
	out, err := cmd.Output()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var v struct{ Verify verdict }
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("faultline verify printed %q (exit %d): %v", out, code, err)
	}
	return v.Verify, code
}
