package crash

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
	"github.com/faultline-dev/faultline/internal/e2e"
	"github.com/faultline-dev/faultline/tui"
)

// A bounded run leaves its checkpoints in the state dir; the checkpoints
// command lists, inspects, verifies and deletes them.
func TestCheckpointsCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := e2e.Faultline(t, "run", "--headless", "--records", "20000", "--checkpoint-interval", "50ms", "--state-dir", dir)
	if r.Code != 0 {
		t.Fatalf("run: exit %d %s", r.Code, r.Stderr)
	}
	last := int(e2e.Num(r.Report, "checkpoints", "last_completed"))
	list := e2e.Faultline(t, "checkpoints", "list", "--json", "--state-dir", dir)
	var cps []map[string]any
	if err := json.Unmarshal([]byte(list.Stdout), &cps); err != nil || list.Code != 0 {
		t.Fatalf("list --json: %v %q", err, list.Stdout)
	}
	if len(cps) != 3 || int(cps[2]["id"].(float64)) != last || cps[2]["job"] != "orders" {
		t.Fatalf("list: %v, want the newest three ending with %d", cps, last)
	}
	table := e2e.Faultline(t, "checkpoints", "list", "--state-dir", dir)
	if !strings.Contains(table.Stdout, "INCREMENTAL") || !strings.Contains(table.Stdout, "orders") {
		t.Fatalf("list table:\n%s", table.Stdout)
	}
	ins := e2e.Faultline(t, "checkpoints", "inspect", strings.TrimSpace(e2e.JSONNum(cps[2]["id"])), "--state-dir", dir)
	for _, want := range []string{"join/1", "sink/0", "source offsets orders:", "ALIGNMENT"} {
		if !strings.Contains(ins.Stdout, want) {
			t.Fatalf("inspect does not show %q:\n%s", want, ins.Stdout)
		}
	}
	if v := e2e.Faultline(t, "checkpoints", "verify", "--state-dir", dir); v.Code != 0 || strings.Count(v.Stdout, ": ok") != 3 {
		t.Fatalf("verify: exit %d\n%s", v.Code, v.Stdout)
	}
	if d := e2e.Faultline(t, "checkpoints", "delete", e2e.JSONNum(cps[0]["id"]), "--state-dir", dir); d.Code != 0 {
		t.Fatalf("delete: exit %d %s", d.Code, d.Stderr)
	}
	if d := e2e.Faultline(t, "checkpoints", "delete", "999", "--state-dir", dir); d.Code != 1 || !strings.Contains(d.Stderr, "no checkpoint 999") {
		t.Fatalf("delete of a missing id: exit %d %q", d.Code, d.Stderr)
	}
	if d := e2e.Faultline(t, "checkpoints", "inspect", "banana", "--state-dir", dir); d.Code != 2 {
		t.Fatalf("inspect banana: exit %d", d.Code)
	}
}

// flipNewestState damages, on disk, one state blob of the newest checkpoint
// in the state dir and returns that checkpoint's id and the one before it.
func flipNewestState(t *testing.T, stateDir string) (newest, previous int64) {
	t.Helper()
	// The killed run's child may hold the store for a moment more.
	var s *badgerstore.Store
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s, err = badgerstore.Open(filepath.Join(stateDir, "checkpoints"), 3)
		if !errors.Is(err, badgerstore.ErrLocked) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.All(context.Background())
	if err != nil || len(all) < 2 {
		t.Fatalf("%d checkpoints: %v", len(all), err)
	}
	c := all[len(all)-1]
	var blob []byte
	for _, a := range c.Tasks {
		if a.Bytes >= 1024 && !a.Finished { // large enough to sit in the value log
			if blob, err = s.GetState(context.Background(), a.Handle); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	s.Close()
	if blob == nil {
		t.Fatal("no state blob large enough to find on disk")
	}
	flipped := false
	filepath.Walk(filepath.Join(stateDir, "checkpoints"), func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || flipped {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		if i := bytes.Index(data, blob); i >= 0 {
			data[i+len(blob)/2] ^= 0xff
			os.WriteFile(path, data, info.Mode())
			flipped = true
		}
		return nil
	})
	if !flipped {
		t.Fatal("did not find the state blob's bytes on disk")
	}
	return c.ID, all[len(all)-2].ID
}

// Damaged bytes in the newest checkpoint on disk: the resumed run falls back
// to the one before, says so, and loses nothing.
func TestResumeFallsBackFromACorruptedCheckpoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	broker := e2e.StartBroker(t)
	base := []string{"run", "--headless", "--records", "60000", "--rate", "20000", "--checkpoint-interval", "100ms",
		"--state-dir", dir, "--brokers", broker, "--generate"}
	// Stop the first run part way (as a crash would) so that the job has
	// work left when it resumes.
	r := faultlineUntil(t, "checkpoint_completed", 4, base...)
	_ = r
	newest, previous := flipNewestState(t, dir)
	if v := e2e.Faultline(t, "checkpoints", "verify", "--state-dir", dir); v.Code != 1 || !strings.Contains(v.Stdout, "DAMAGED") {
		t.Fatalf("verify after flipping bytes: exit %d\n%s", v.Code, v.Stdout)
	}
	res := e2e.Faultline(t, append(base, "--resume")...)
	if res.Report == nil {
		t.Fatalf("resume: exit %d %s", res.Code, res.Stderr)
	}
	from := res.Report["checkpoints"].(map[string]any)["restored_from"].([]any)
	if len(from) == 0 || int64(from[0].(float64)) != previous {
		t.Fatalf("restored from %v, want %d (newest %d is damaged)", from, previous, newest)
	}
	invalid := false
	for _, e := range res.Events {
		invalid = invalid || e["event"] == "checkpoint_invalid" && int64(e["id"].(float64)) == newest
	}
	if !invalid {
		t.Fatal("no checkpoint_invalid event for the damaged checkpoint")
	}
	if e2e.Num(res.Report, "verify", "lost") != 0 {
		t.Fatalf("lost records after the fallback: %v", res.Report["verify"])
	}
}

// A second process on the same state dir is told which process holds it.
func TestSecondProcessOnTheStateDirIsTurnedAway(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := badgerstore.Open(filepath.Join(dir, "checkpoints"), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := e2e.Faultline(t, "run", "--headless", "--records", "1000", "--state-dir", dir)
	if r.Code != 1 || !strings.Contains(r.Stderr, dir) || !strings.Contains(r.Stderr, "pid") || strings.Contains(r.Stderr, "Cannot acquire") {
		t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
	}
}

// Stop with a savepoint (SIGTERM with --savepoint-on-exit), then go on from
// it at other parallelisms, on Kafka: the output ends up exact.
func TestStopWithSavepointAndRescale(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	broker := e2e.StartBroker(t)
	base := []string{"run", "--headless", "--records", "60000", "--rate", "20000", "--checkpoint-interval", "100ms",
		"--state-dir", dir, "--brokers", broker, "--generate"}
	cmd := e2e.Command(t, append(base, "--savepoint-on-exit", "--inject", "after=200ms,fault=savepoint")...)
	var stdout bytes.Buffer
	pr, pw := io.Pipe()
	cmd.Stdout = io.MultiWriter(&stdout, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	completed, injected := 0, 0
	for sc.Scan() && completed < 6 {
		line := sc.Text()
		if strings.Contains(line, `"event":"checkpoint_completed"`) {
			completed++
		}
		if strings.Contains(line, `"event":"savepoint_completed"`) {
			injected++
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	go func() {
		for sc.Scan() {
		}
	}()
	err := cmd.Wait()
	pw.Close()
	if err != nil {
		t.Fatalf("stopped run: %v\n%s", err, stdout.String())
	}
	var report struct {
		Report struct {
			Status    string `json:"status"`
			Savepoint int64  `json:"savepoint"`
			Verify    struct {
				OK bool `json:"ok"`
			} `json:"verify"`
		} `json:"report"`
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &report); err != nil {
		t.Fatal(err)
	}
	if report.Report.Status != "CANCELED" || report.Report.Savepoint == 0 || !report.Report.Verify.OK || injected == 0 {
		t.Fatalf("stopped run: %+v, %d savepoints injected before", report.Report, injected)
	}
	r := e2e.Faultline(t, append(base, "--from-savepoint", strconv.FormatInt(report.Report.Savepoint, 10), "--parallelism", "join=3,revenue=1")...)
	if r.Code != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 || e2e.Num(r.Report, "verify", "lost") != 0 {
		t.Fatalf("from savepoint %d at other parallelisms: exit %d %v %s", report.Report.Savepoint, r.Code, r.Report["verify"], r.Stderr)
	}
	if bad := e2e.Faultline(t, append(base, "--from-savepoint", "99999")...); bad.Code != 2 || !strings.Contains(bad.Stderr, "99999") {
		t.Fatalf("unknown savepoint: exit %d %q", bad.Code, bad.Stderr)
	}
}

// cutAtRecord truncates the value log file that holds the metadata record
// of checkpoint id where that record starts, as a disk that lost the end of
// the file would, and returns the file.
func cutAtRecord(t *testing.T, stateDir string, id int64) string {
	t.Helper()
	vlogs, err := filepath.Glob(filepath.Join(stateDir, "checkpoints", "*.vlog"))
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Appendf(nil, `{"id":%d,"kind":`, id)
	for _, path := range vlogs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, marker); i >= 0 {
			if err := os.Truncate(path, int64(i)); err != nil {
				t.Fatal(err)
			}
			return path
		}
	}
	t.Fatalf("the metadata record of checkpoint %d is in no value log file", id)
	return ""
}

// A value log cut short loses the newest checkpoint's metadata: list and
// verify say so instead of showing only what is left.
func TestCheckpointsShowDamagedRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// At most 20,000 records a second: a second of input, at least three
	// checkpoints.
	r := e2e.Faultline(t, "run", "--headless", "--records", "20000", "--rate", "20000", "--checkpoint-interval", "100ms", "--state-dir", dir)
	if r.Code != 0 {
		t.Fatalf("run: exit %d %s", r.Code, r.Stderr)
	}
	last := int64(e2e.Num(r.Report, "checkpoints", "last_completed"))
	t.Logf("cut %s", filepath.Base(cutAtRecord(t, dir, last)))

	list := e2e.Faultline(t, "checkpoints", "list", "--state-dir", dir)
	want := fmt.Sprintf("checkpoint %d: DAMAGED: ", last)
	if list.Code != 0 || !strings.Contains(list.Stdout, want) {
		t.Fatalf("list: exit %d, no %q:\n%s%s", list.Code, want, list.Stdout, list.Stderr)
	}
	js := e2e.Faultline(t, "checkpoints", "list", "--json", "--state-dir", dir)
	var cps []map[string]any
	if err := json.Unmarshal([]byte(js.Stdout), &cps); err != nil || len(cps) == 0 {
		t.Fatalf("list --json: %v %q", err, js.Stdout)
	}
	if newest := cps[len(cps)-1]; int64(newest["id"].(float64)) != last || newest["damaged"] != true || newest["error"] == "" {
		t.Fatalf("list --json: newest %v, want %d marked damaged", newest, last)
	}
	v := e2e.Faultline(t, "checkpoints", "verify", "--state-dir", dir)
	t.Logf("verify:\n%s%s", v.Stdout, v.Stderr)
	if v.Code != 1 || !strings.Contains(v.Stdout, want) || !strings.Contains(v.Stderr, "of 3 checkpoints are damaged") {
		t.Fatalf("verify: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
	}
	// The resumed run says it passes the checkpoint over, goes back to the
	// one before, and writes nothing twice of what the lost one committed.
	res := e2e.Faultline(t, "run", "--headless", "--records", "20000", "--rate", "20000", "--checkpoint-interval", "100ms", "--state-dir", dir, "--resume")
	invalid := false
	for _, e := range res.EventsNamed("checkpoint_invalid") {
		invalid = invalid || int64(e["id"].(float64)) == last
	}
	if res.Code != 0 || !invalid || e2e.Num(res.Report, "verify", "duplicates") != 0 || e2e.Num(res.Report, "verify", "lost") != 0 {
		t.Fatalf("resume: exit %d, checkpoint_invalid for %d: %v, verify %v, stderr %q", res.Code, last, invalid, res.Report["verify"], res.Stderr)
	}
	if from := res.Report["checkpoints"].(map[string]any)["restored_from"].([]any); len(from) == 0 || int64(from[0].(float64)) >= last {
		t.Fatalf("restored from %v, want a checkpoint before %d", from, last)
	}
}

// Random bytes in a table of the checkpoint store: every command that opens
// it says which file is damaged and what to do, in one line, and none
// panics.
func TestDamagedTableIsAnErrorNotAPanic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if r := e2e.Faultline(t, "run", "--headless", "--records", "30000", "--checkpoint-interval", "100ms", "--state-dir", dir); r.Code != 0 {
		t.Fatalf("run: exit %d %s", r.Code, r.Stderr)
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "checkpoints", "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table in the checkpoint store")
	}
	f, err := os.OpenFile(tables[0], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 1000)
	for i := range junk {
		junk[i] = byte(i*7 + 13)
	}
	if _, err := f.WriteAt(junk, 100); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, args := range [][]string{
		{"checkpoints", "list", "--state-dir", dir},
		{"checkpoints", "verify", "--state-dir", dir},
		{"checkpoints", "delete", "1", "--yes", "--state-dir", dir},
		{"run", "--headless", "--resume", "--records", "30000", "--state-dir", dir},
		{"run", "--headless", "--records", "30000", "--state-dir", dir},
	} {
		r := e2e.Faultline(t, args...)
		line := strings.TrimSpace(r.Stderr)
		t.Logf("%s: exit %d: %s", strings.Join(args[:2], " "), r.Code, line)
		if r.Code != 1 || strings.Count(line, "\n") != 0 || strings.Contains(line, "goroutine") || strings.Contains(line, "panic") ||
			!strings.Contains(line, "checkpoint store damaged") || !strings.Contains(line, tables[0]) || !strings.Contains(line, "faultline run --fresh") {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line naming %s and the way on", strings.Join(args, " "), r.Code, r.Stderr, tables[0])
		}
	}
	// The way on works: --fresh removes the damaged store and starts over.
	if r := e2e.Faultline(t, "run", "--headless", "--records", "30000", "--state-dir", dir, "--fresh"); r.Code != 0 || e2e.Num(r.Report, "verify", "duplicates") != 0 {
		t.Fatalf("--fresh on a damaged store: exit %d, verify %v, stderr %q", r.Code, r.Report["verify"], r.Stderr)
	}
}

// A mistyped state dir is an error, and nothing is created there.
func TestCheckpointsCommandsOnAMissingStore(t *testing.T) {
	t.Parallel()
	typo := filepath.Join(t.TempDir(), "typo")
	for _, args := range [][]string{{"list"}, {"inspect", "1"}, {"verify"}, {"delete", "1"}} {
		r := e2e.Faultline(t, append(append([]string{"checkpoints"}, args...), "--state-dir", typo)...)
		if r.Code != 1 || !strings.Contains(r.Stderr, "no checkpoint store in "+filepath.Join(typo, "checkpoints")+": is --state-dir right?") {
			t.Errorf("checkpoints %s: exit %d, stderr %q", args[0], r.Code, r.Stderr)
		}
		if _, err := os.Stat(typo); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("checkpoints %s created %s: %v", args[0], typo, err)
		}
	}
}

// The commands that only look at the store are turned away, with the name
// of the process, while a run has it open.
func TestCheckpointsListWhileARunHoldsTheStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := badgerstore.Open(filepath.Join(dir, "checkpoints"), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := e2e.Faultline(t, "checkpoints", "list", "--state-dir", dir)
	if r.Code != 1 || !strings.Contains(r.Stderr, "checkpoint store locked") || !strings.Contains(r.Stderr, fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("list while held: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

// sourceRecords sums the source offsets of a checkpoint as list --json
// shows it.
func sourceRecords(c map[string]any) map[string]float64 {
	out := map[string]float64{}
	for topic, parts := range c["offsets"].(map[string]any) {
		for p, off := range parts.(map[string]any) {
			out[topic+"/"+p] = off.(float64)
		}
	}
	return out
}

// Deleting the newest checkpoint says what it costs and asks: without a
// terminal it refuses unless --yes is given. Older ones go without a word.
func TestCheckpointsDeleteNewestAsks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Stopped part way, so that the newest checkpoint committed output
	// the one before did not; stopped cleanly, so that it is committed. On
	// a busy machine the last interval sometimes read next to nothing (the
	// sources starved): the run then goes on (--resume) and is stopped
	// again, until the newest checkpoint holds 2,000 input records more;
	// 120,000 records leave each of those runs six seconds of input. An
	// interval of 250 ms holds about 5,000 at the rate: at 100 ms (2,000)
	// a make test with the machine busy stopped five times short of it.
	args := []string{"run", "--headless", "--records", "120000", "--rate", "20000", "--checkpoint-interval", "250ms", "--listen", "0", "--state-dir", dir}
	list := func() []map[string]any {
		l := e2e.Faultline(t, "checkpoints", "list", "--json", "--state-dir", dir)
		var cps []map[string]any
		if err := json.Unmarshal([]byte(l.Stdout), &cps); err != nil || len(cps) == 0 {
			t.Fatalf("list --json: %v %q", err, l.Stdout)
		}
		return cps
	}
	var cps []map[string]any
	var newest, previous map[string]any
	var want float64
	for try := 0; want < 2000; try++ {
		if try == 5 {
			t.Fatalf("five stops, and the newest checkpoint never held 2,000 input records more than the one before (%v)", want)
		}
		run := args
		if try > 0 {
			run = append(append([]string{}, args...), "--resume")
		}
		cmd, stderr, lines := e2e.StartRun(t, run...)
		e2e.WaitEvents(t, lines, "checkpoint_completed", 5)
		cmd.Process.Signal(syscall.SIGINT)
		for range lines {
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("run: %v %s", err, stderr)
		}
		if cps = list(); len(cps) < 3 {
			t.Fatalf("%d checkpoints, want 3", len(cps))
		}
		newest, previous = cps[len(cps)-1], cps[len(cps)-2]
		from := sourceRecords(previous)
		want = 0
		for p, off := range sourceRecords(newest) {
			want += off - from[p]
		}
	}
	id := e2e.JSONNum(newest["id"])
	warning := fmt.Sprintf("checkpoint %s is the newest of job orders: a resumed run will go back to checkpoint %s and read again the %s input records after it",
		id, e2e.JSONNum(previous["id"]), tui.Thousands(int64(want)))

	d := e2e.Faultline(t, "checkpoints", "delete", id, "--state-dir", dir)
	if d.Code != 2 || strings.Count(strings.TrimSpace(d.Stderr), "\n") != 0 || !strings.Contains(d.Stderr, warning) || !strings.Contains(d.Stderr, "--yes") {
		t.Fatalf("delete of the newest without a terminal: exit %d, stderr %q; want exit 2, one line with %q", d.Code, d.Stderr, warning)
	}
	if got := list(); len(got) != len(cps) {
		t.Fatalf("refused delete deleted something: %d checkpoints, had %d", len(got), len(cps))
	}
	if d := e2e.Faultline(t, "checkpoints", "delete", e2e.JSONNum(cps[0]["id"]), "--state-dir", dir); d.Code != 0 || d.Stderr != "" {
		t.Fatalf("delete of an older checkpoint: exit %d, stderr %q", d.Code, d.Stderr)
	}
	d = e2e.Faultline(t, "checkpoints", "delete", id, "--yes", "--state-dir", dir)
	if d.Code != 0 || !strings.Contains(d.Stderr, warning) || !strings.Contains(d.Stdout, "deleted checkpoint "+id) {
		t.Fatalf("delete --yes of the newest: exit %d, stdout %q, stderr %q", d.Code, d.Stdout, d.Stderr)
	}
	if got := list(); e2e.JSONNum(got[len(got)-1]["id"]) != e2e.JSONNum(previous["id"]) {
		t.Fatalf("after deleting %s the newest is %v, want %s", id, got[len(got)-1]["id"], e2e.JSONNum(previous["id"]))
	}
	// The resumed run goes back to the previous checkpoint, and what the
	// deleted one committed is not written twice.
	res := e2e.Faultline(t, append(args, "--resume")...)
	if res.Code != 0 || e2e.Num(res.Report, "verify", "duplicates") != 0 || e2e.Num(res.Report, "verify", "lost") != 0 || e2e.Num(res.Report, "replay_skipped") == 0 {
		t.Fatalf("resume after the delete: exit %d, verify %v, replay_skipped %v, stderr %q", res.Code, res.Report["verify"], res.Report["replay_skipped"], res.Stderr)
	}
}
