package soak

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// A damage is what a careless copy, a full disk or a user's rm does to a
// state dir between two runs: the soak applies one after each kill. A run
// on the damaged state dir either goes on (nothing lost, nothing written
// twice) or is refused at start in one line that names the damaged part
// (names) and the way on; mend then takes that way.
type damage struct {
	name  string
	apply func(s *soak) (applied bool)
	names string // a word the refusal names
	mend  func(s *soak) []string
}

// fresh is the way on from damage that only starting again mends.
func fresh(*soak) []string { return []string{"--fresh"} }

// damages are the kinds of damage to a state dir the soak applies in turn.
func damages() []damage {
	return []damage{
		{name: "every checkpoint deleted", apply: func(s *soak) bool { return s.deleteCheckpoints(true) }, names: "--fresh", mend: fresh},
		{name: "the newest checkpoint deleted", apply: func(s *soak) bool { return s.deleteCheckpoints(false) }, names: "--fresh", mend: fresh},
		{name: "topics.json removed", apply: func(s *soak) bool { return s.remove("kafka", "topics.json") }, names: "topics.json", mend: fresh},
		{name: "the broker's log removed", apply: func(s *soak) bool { return s.remove("kafka") }, names: "kafka", mend: fresh},
		{name: "a byte of a log segment changed", apply: func(s *soak) bool { return s.damageSegment(false) }, names: ".dat", mend: fresh},
		{name: "a log segment cut short", apply: func(s *soak) bool { return s.damageSegment(true) }, names: ".dat", mend: fresh},
		{name: "the store's memtable logs removed", apply: func(s *soak) bool { return s.removeAll("checkpoints", "*.mem") }, names: "--fresh", mend: fresh},
		{name: "the store's LOCK a folder", apply: func(s *soak) bool { return s.folderFor("checkpoints", "LOCK") }, names: "LOCK",
			mend: func(s *soak) []string { os.Remove(filepath.Join(s.stateDir(), "checkpoints", "LOCK")); return nil }},
		{name: "a table of the store a folder", apply: func(s *soak) bool { return s.folderFor("checkpoints", "*.sst") }, names: ".sst", mend: fresh},
	}
}

// remove removes a file or folder of the state dir; false when it is not
// there.
func (s *soak) remove(path ...string) bool {
	p := filepath.Join(append([]string{s.stateDir()}, path...)...)
	if _, err := os.Stat(p); err != nil {
		return false
	}
	if err := os.RemoveAll(p); err != nil {
		s.t.Fatal(err)
	}
	return true
}

// removeAll removes the files of the state dir matching pattern in dir;
// false when there are none.
func (s *soak) removeAll(dir, pattern string) bool {
	files, _ := filepath.Glob(filepath.Join(s.stateDir(), dir, pattern))
	for _, f := range files {
		if err := os.Remove(f); err != nil {
			s.t.Fatal(err)
		}
	}
	return len(files) > 0
}

// folderFor replaces the first file of the state dir matching pattern in
// dir with an empty folder.
func (s *soak) folderFor(dir, pattern string) bool {
	files, _ := filepath.Glob(filepath.Join(s.stateDir(), dir, pattern))
	if len(files) == 0 {
		return false
	}
	if err := os.Remove(files[0]); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Mkdir(files[0], 0o755); err != nil {
		s.t.Fatal(err)
	}
	return true
}

// damageSegment changes a byte in the middle of an input segment of the
// broker's log, or cuts the segment there.
func (s *soak) damageSegment(cut bool) bool {
	files, _ := filepath.Glob(filepath.Join(s.stateDir(), "kafka", "partitions", "orders-*", "*.dat"))
	var big []string
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Size() > 4096 {
			big = append(big, f)
		}
	}
	if len(big) == 0 {
		return false
	}
	sort.Strings(big)
	f := big[s.rng.Intn(len(big))]
	b, err := os.ReadFile(f)
	if err != nil {
		s.t.Fatal(err)
	}
	at := len(b)/4 + s.rng.Intn(len(b)/2)
	if cut {
		b = b[:at]
	} else {
		b[at] ^= 0x55
	}
	if err := os.WriteFile(f, b, 0o644); err != nil {
		s.t.Fatal(err)
	}
	return true
}

// deleteCheckpoints deletes the newest checkpoint, or all of them, as a
// user would with `faultline checkpoints delete ID --yes`.
func (s *soak) deleteCheckpoints(all bool) bool {
	l := e2e.Faultline(s.t, "checkpoints", "list", "--json", "--state-dir", s.stateDir())
	var cps []map[string]any
	if l.Code != 0 || json.Unmarshal([]byte(l.Stdout), &cps) != nil || len(cps) == 0 {
		return false
	}
	for i := len(cps) - 1; i >= 0 && (all || i == len(cps)-1); i-- {
		if d := e2e.Faultline(s.t, "checkpoints", "delete", e2e.JSONNum(cps[i]["id"]), "--yes", "--state-dir", s.stateDir()); d.Code != 0 {
			s.t.Fatalf("delete checkpoint %v: exit %d %s", cps[i]["id"], d.Code, d.Stderr)
		}
	}
	return true
}

// damageSoak kills the default job on the embedded broker again and again
// and damages its state dir after each kill, a kind of damage after
// another; every run resumes. A refused run must say so in one line that
// names the damaged part, and the soak then takes the way on the line
// gives. The last run goes on to the end, and the output read back on its
// own (kcat, read_committed) must hold every paid order once.
func damageSoak(t *testing.T, rounds int, records, rate int64) {
	s := newSoak(t, "damage soak")
	interval := 100 * time.Millisecond
	common := []string{"run", "--headless", "--records", fmt.Sprint(records), "--checkpoint-interval", interval.String(),
		"--restart-delay", "20ms", "--state-dir", s.stateDir(), "--listen", "0",
		// The output is read back whole at the end: the broker keeps it
		// all. (A trimmed log without its ledger is refused:
		// TestDamagedBrokerLogIsRefusedWithTheWayOn.)
		"--retention-interval", "0"}
	kinds := damages()
	s.rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	way := []string{"--resume"}
	refused := map[string]int{}
	for i := range rounds {
		r := s.start(append(append(append([]string{}, common...), way...), "--rate", fmt.Sprint(rate))...)
		phase := []string{phaseCheckpoint, phaseCommit, phaseBetween}[s.rng.Intn(3)]
		at := s.killWhen(r, phase, interval)
		code, _ := r.wait(s)
		s.log = append(s.log, fmt.Sprintf("run %d (%s): killed at %q, exit %d", s.runs, strings.Join(way, " "), at, code))
		if code != 0 && code != -int(syscall.SIGKILL) {
			t.Fatalf("%s: run %d exit %d\n%s", s.name, s.runs, code, r.stderr)
		}
		way = []string{"--resume"}
		d := kinds[i%len(kinds)]
		if !d.apply(s) {
			s.log = append(s.log, "  nothing to damage for: "+d.name)
			continue
		}
		// The next run either goes on, or refuses at start.
		probe := s.start(append(append([]string{}, common...), "--resume")...)
		code, report := probe.wait(s)
		switch {
		case code == 1 || code == 2:
			line := strings.TrimSpace(probe.stderr.String())
			if strings.Count(line, "\n") != 0 || !strings.Contains(line, d.names) {
				t.Fatalf("%s: %s: refused with exit %d and %q; want one line naming %q", s.name, d.name, code, line, d.names)
			}
			refused[d.name]++
			way = append(d.mend(s), "--resume")
			s.log = append(s.log, fmt.Sprintf("  %s: refused (%s), then %v", d.name, line, way))
		case code == 0 && report != nil:
			checkWholeOutput(t, s, d.name, report)
			way = []string{"--fresh"} // it ran to the end: start the next round afresh
			s.log = append(s.log, "  "+d.name+": went on to the end, exact")
		default:
			t.Fatalf("%s: after %s the run exited %d\n%s", s.name, d.name, code, probe.stderr)
		}
		if way[0] == "--fresh" {
			way = way[:1]
		}
	}
	r := s.start(append(append(append([]string{}, common...), way...), "--rate", fmt.Sprint(rate))...)
	code, report := r.wait(s)
	for _, l := range s.log {
		t.Log(s.name + ": " + l)
	}
	if code != 0 || report == nil {
		t.Fatalf("%s: the last run exited %d\n%s", s.name, code, r.stderr)
	}
	checkWholeOutput(t, s, "the last run", report)
	t.Logf("%s: seed %d, %d runs, refused %v", s.name, s.seed, s.runs, refused)
}

// checkWholeOutput reads the state dir's output back on its own and checks
// that it holds every paid order the report expects, once.
func checkWholeOutput(t *testing.T, s *soak, after string, report map[string]any) {
	t.Helper()
	v := report["verify"].(map[string]any)
	ids := e2e.CommittedIDs(t, s.stateDir())
	twice := 0
	for _, n := range ids {
		if n > 1 {
			twice++
		}
	}
	if v["ok"] != true || v["duplicates"] != 0.0 || v["lost"] != 0.0 || twice != 0 || float64(len(ids)) != v["expected"] {
		t.Fatalf("%s: %s: the output holds %d ids, %d more than once; the report says %v", s.name, after, len(ids), twice, v)
	}
}

// TestDamageSoak kills the whole process and damages its state dir in
// every way the state dir's checks know between the kills: each run goes
// on exact or is refused with the way on.
func TestDamageSoak(t *testing.T) {
	t.Parallel()
	if e2e.Soak() {
		damageSoak(t, 3*len(damages()), 300_000, 20000)
		return
	}
	damageSoak(t, len(damages()), 25_000, 15000)
}
