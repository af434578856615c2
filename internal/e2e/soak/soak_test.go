package soak

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// The soaks kill and break the default job again and again and then check
// that the committed output holds every paid order exactly once. `make
// test` runs them short; `make soak` runs them at full length (-soak):
//
//	make soak                       # every soak, seeds from the clock
//	make soak SOAK_SEED=42          # the same schedules again
//
// Each prints its seed first. A failing soak keeps its state dir and every
// run's events and stderr (the path is in the failure), so that it can be
// looked at and replayed with the same seed. (The flags -soak and
// -soak.seed are e2e's: e2e.Soak, e2e.SoakSeed.)

// soak is one soak's schedule, its folder and what it has seen.
type soak struct {
	t    *testing.T
	name string
	seed int64
	rng  *rand.Rand
	dir  string // kept when the soak fails
	runs int
	// rewritten counts the transactions the broker lost that a recovery
	// wrote again (txn_rewritten), and their records.
	rewritten, rewrittenRecords int
	log                         []string // what each run did, for the summary and a replay
}

func newSoak(t *testing.T, name string) *soak {
	t.Helper()
	seed := e2e.SoakSeed()
	if seed == 0 {
		seed = time.Now().UnixNano() % 1_000_000_007
	}
	dir, err := os.MkdirTemp("", "faultline-soak-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	s := &soak{t: t, name: name, seed: seed, rng: rand.New(rand.NewSource(seed)), dir: dir}
	t.Logf("%s: seed %d (replay: make soak SOAK_SEED=%d)", name, seed, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s: the state dir and every run's events are kept in %s", name, dir)
			return
		}
		os.RemoveAll(dir)
	})
	return s
}

// stateDir is the job's state dir inside the soak's folder.
func (s *soak) stateDir() string { return filepath.Join(s.dir, "state") }

// soakRun is one faultline process of a soak.
type soakRun struct {
	cmd    *exec.Cmd
	events chan map[string]any // every JSON line, the report included
	done   chan struct{}       // closed when stdout ended
	stderr *bytes.Buffer
	out    *os.File
}

// start starts faultline with args, copying what it prints into the soak's
// folder (run-NN.jsonl, run-NN.stderr).
func (s *soak) start(args ...string) *soakRun {
	s.t.Helper()
	s.runs++
	base := filepath.Join(s.dir, fmt.Sprintf("run-%02d", s.runs))
	out, err := os.Create(base + ".jsonl")
	if err != nil {
		s.t.Fatal(err)
	}
	os.WriteFile(base+".args", []byte(strings.Join(args, "\n")+"\n"), 0o644)
	cmd := e2e.Command(s.t, args...)
	r := &soakRun{cmd: cmd, events: make(chan map[string]any, 4096), done: make(chan struct{}), stderr: &bytes.Buffer{}, out: out}
	cmd.Stderr = r.stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		defer close(r.events)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			out.Write(append(sc.Bytes(), '\n'))
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				select {
				case r.events <- m:
				default: // nobody is watching any more
				}
			}
		}
	}()
	return r
}

// wait waits for the run to exit and returns its exit code (-9 when it was
// killed) and its report, if it printed one.
func (r *soakRun) wait(s *soak) (int, map[string]any) {
	var report map[string]any
	for m := range r.events {
		if rep, ok := m["report"].(map[string]any); ok {
			report = rep
		}
		s.note(m)
	}
	return r.exit(s), report
}

// exit waits for the run to exit, once its events have been read, and
// returns its exit code (-9 when it was killed).
func (r *soakRun) exit(s *soak) int {
	<-r.done
	err := r.cmd.Wait()
	r.out.Close()
	os.WriteFile(strings.TrimSuffix(r.out.Name(), ".jsonl")+".stderr", r.stderr.Bytes(), 0o644)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = -int(ws.Signal())
		}
	} else if err != nil {
		s.t.Fatal(err)
	}
	return code
}

// kill kills the whole process, as a crash would.
func (r *soakRun) kill() { r.cmd.Process.Signal(syscall.SIGKILL) }

// A kill's moment, named by what the job is doing.
const (
	phaseFill       = "input fill"
	phaseCheckpoint = "checkpoint"
	phaseCommit     = "commit"
	phaseBetween    = "between checkpoints"
	phaseRecovery   = "recovery"
	phaseVerify     = "final verification"
)

// killSchedule is the order of the kills' moments: the input fill first
// (only then is there input left to write), the final verification last
// (only a finished job verifies), the others in a seeded order between.
func (s *soak) killSchedule(kills int) []string {
	fills := max(1, kills/6)
	var middle []string
	for i := 0; len(middle) < kills-fills-1; i++ {
		middle = append(middle, []string{phaseCheckpoint, phaseCommit, phaseBetween, phaseRecovery}[i%4])
	}
	s.rng.Shuffle(len(middle), func(i, j int) { middle[i], middle[j] = middle[j], middle[i] })
	var out []string
	for range fills {
		out = append(out, phaseFill)
	}
	return append(append(out, middle...), phaseVerify)
}

// note counts what the soak reports of a run's event m (killWhen and
// wait read them, each its part of the run).
func (s *soak) note(m map[string]any) {
	if m["event"] == "txn_rewritten" {
		s.rewritten++
		s.rewrittenRecords += int(m["records"].(float64))
	}
}

// nth is which moment of its kind a run dies at, chosen by the seed.
func (s *soak) nth() int {
	if e2e.Soak() {
		return 1 + s.rng.Intn(20) // runs long enough for many retention rounds
	}
	return 1 + s.rng.Intn(4)
}

// killWhen watches a run's events and kills it at the moment phase names
// (the nth such moment of the run, n chosen by the schedule's seed). It
// returns the moment it killed at, "" when the run ended before.
func (s *soak) killWhen(r *soakRun, phase string, interval time.Duration) string {
	jitter := func(d time.Duration) time.Duration { return time.Duration(s.rng.Int63n(int64(d) + 1)) }
	nth := s.nth()
	var timer <-chan time.Time
	armed := ""
	arm := func(d time.Duration, in string) {
		if timer == nil {
			timer, armed = time.After(d), in
		}
	}
	if phase == phaseFill {
		// The fill starts once the broker is up: at broker_started with
		// the embedded broker, a moment after the start with another.
		arm(100*time.Millisecond+jitter(200*time.Millisecond), phaseFill)
	}
	seen := map[string]int{}
	sinkRunning := false
	for {
		select {
		case m, ok := <-r.events:
			if !ok {
				return ""
			}
			if m["report"] != nil {
				return ""
			}
			s.note(m)
			name, _ := m["event"].(string)
			seen[name]++
			switch {
			case name == "task_status" && m["task"] == "sink/0" && m["status"] == "RUNNING":
				sinkRunning = true
			case phase == phaseFill && name == "broker_started":
				timer, armed = nil, ""
				arm(jitter(100*time.Millisecond), phaseFill)
			case phase == phaseFill && name == "input_written":
				// Too late for the fill; the job must not run to its end
				// here, or the later kills find nothing left to do.
				r.kill()
				return "just after the input fill"
			case phase == phaseCheckpoint && name == "checkpoint_triggered" && seen[name] == nth:
				arm(jitter(interval/2), phaseCheckpoint)
			case phase == phaseCommit && name == "checkpoint_completed" && seen[name] == nth:
				r.kill()
				return phaseCommit
			case phase == phaseBetween && name == "checkpoint_completed" && seen[name] == nth:
				arm(interval/4+jitter(interval/2), phaseBetween)
			case phase == phaseRecovery && name == "restored" && !sinkRunning:
				arm(jitter(30*time.Millisecond), phaseRecovery)
			case phase == phaseVerify && name == "verify_started":
				arm(jitter(300*time.Millisecond), phaseVerify)
			}
		case <-timer:
			if armed == phaseRecovery && sinkRunning {
				armed = "just after recovery"
			}
			r.kill()
			return armed
		}
	}
}

// killSoak runs the default job on one state dir, killing it (SIGKILL) at
// kills moments of every kind and starting it again with --resume each
// time, then lets a last run finish and checks its report. brokers "" is
// the embedded broker, which dies with each kill.
func killSoak(t *testing.T, name, brokers string, kills int, records, rate int64, extra ...string) {
	s := newSoak(t, name)
	interval := 100 * time.Millisecond
	// Retention runs often, so that kills also fall between its saving the
	// ledger and deleting records, and the final verdict must go on from
	// the ledger.
	common := []string{"run", "--headless", "--records", fmt.Sprint(records),
		"--checkpoint-interval", interval.String(), "--restart-delay", "20ms",
		"--retention-interval", "100ms", "--state-dir", s.stateDir(), "--resume"}
	common = append(common, extra...)
	if brokers == "" {
		common = append(common, "--listen", "0")
	} else {
		common = append(common, "--brokers", brokers, "--generate")
	}
	counts := map[string]int{}
	schedule := s.killSchedule(kills)
	for i, phase := range schedule {
		args := append([]string{}, common...)
		if phase != phaseFill && phase != phaseVerify {
			// The input arrives while the job runs, so that every run has
			// work in flight when it dies.
			args = append(args, "--rate", fmt.Sprint(rate))
		}
		if phase == phaseCommit {
			// The run crashes itself (SIGKILL, the embedded broker with
			// it) right after its nth checkpoint completes, before the
			// sink commits: the broker loses the pre-committed
			// transaction, and the next run writes it again. A kill sent
			// on reading checkpoint_completed races the commit.
			args = append(args, "--inject", fmt.Sprintf("after-checkpoints=%d,fault=crash", s.nth()))
		}
		r := s.start(args...)
		at := phaseCommit
		if phase != phaseCommit {
			at = s.killWhen(r, phase, interval)
		}
		code, report := r.wait(s)
		switch {
		case at != "" && code == -int(syscall.SIGKILL):
			counts[at]++
			s.log = append(s.log, fmt.Sprintf("run %d: killed (%s)", s.runs, at))
		case code == 0 || code == -int(syscall.SIGKILL):
			s.log = append(s.log, fmt.Sprintf("run %d: meant to die during %s, ended first (exit %d)", s.runs, phase, code))
		default:
			t.Fatalf("%s: run %d (kill %d of %d, %s) exit %d, report %v\nstderr:\n%s", name, s.runs, i+1, kills, phase, code, report, r.stderr)
		}
	}
	r := s.start(common...)
	code, report := r.wait(s)
	killed := 0
	for _, n := range counts {
		killed += n
	}
	var moments []string
	for m, n := range counts {
		moments = append(moments, fmt.Sprintf("%s %d", m, n))
	}
	sort.Strings(moments)
	for _, l := range s.log {
		t.Log(name + ": " + l)
	}
	if report == nil {
		t.Fatalf("%s: the last run printed no report (exit %d):\n%s", name, code, r.stderr)
	}
	v := report["verify"].(map[string]any)
	log, _ := os.ReadFile(filepath.Join(s.stateDir(), "faultline.log"))
	rounds := strings.Count(string(log), "broker retention: output floor")
	t.Logf("%s: seed %d, %d runs, %d kills (%s), %d retention rounds, %d lost transactions written again (%d records), verify: expected %.0f committed %.0f duplicates %.0f lost %.0f",
		name, s.seed, s.runs, killed, strings.Join(moments, ", "), rounds, s.rewritten, s.rewrittenRecords, v["expected"], v["committed"], v["duplicates"], v["lost"])
	if code != 0 || v["duplicates"] != 0.0 || v["lost"] != 0.0 || v["expected"] == 0.0 {
		t.Fatalf("%s: after %d kills the last run exited %d with %v", name, killed, code, v)
	}
	if killed < kills*3/4 {
		t.Fatalf("%s: only %d of %d runs died at their moment; the schedule no longer fits the job's pace", name, killed, kills)
	}
}

// TestKillSoakEmbeddedBroker kills the whole process, the embedded broker
// with it, at every kind of moment: while the input is written, while a
// checkpoint is taken, while the sink commits, between checkpoints, while
// a resumed run recovers, and while the final run verifies.
func TestKillSoakEmbeddedBroker(t *testing.T) {
	t.Parallel()
	if e2e.Soak() {
		killSoak(t, "kill soak, embedded broker", "", 20, 1_000_000, 20000)
		return
	}
	killSoak(t, "kill soak, embedded broker", "", 6, 60_000, 10000)
}

// TestKillSoakUnaligned kills the whole process, embedded broker and all,
// while it takes unaligned checkpoints with a join subtask slowed, so that
// the barriers overtake full queues and checkpoints hold in-flight
// records: every resumed run replays them into their channels.
func TestKillSoakUnaligned(t *testing.T) {
	t.Parallel()
	slow := []string{"--unaligned", "--inject", "after=300ms,task=join/0,fault=slow,factor=10,for=2s"}
	if e2e.Soak() {
		killSoak(t, "kill soak, unaligned", "", 20, 1_000_000, 20000, slow...)
		return
	}
	killSoak(t, "kill soak, unaligned", "", 6, 60_000, 10000, slow...)
}

// TestKillSoakBrokerProcess is the same with the broker in a process of its
// own, which outlives every kill, as a Kafka cluster would.
func TestKillSoakBrokerProcess(t *testing.T) {
	t.Parallel()
	broker := e2e.StartBroker(t)
	if e2e.Soak() {
		killSoak(t, "kill soak, broker process", broker, 20, 1_000_000, 20000)
		return
	}
	killSoak(t, "kill soak, broker process", broker, 6, 150_000, 10000)
}
