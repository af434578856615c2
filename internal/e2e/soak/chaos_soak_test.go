package soak

import (
	"fmt"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// The chaos soak: the default job through faults drawn from the whole
// catalogue, with aligned and with unaligned checkpoints.

// chaosFault is one fault of the chaos soak: at is its time since the soak's
// first run started, counted over every run.
type chaosFault struct {
	at   time.Duration
	kind string
	spec string // --inject without after=
}

// The default job's subtasks, which task faults pick from.
var chaosTasks = []string{"orders-source/0", "orders-source/1", "payments-source/0", "payments-source/1",
	"parse-orders/0", "parse-orders/1", "parse-payments/0", "parse-payments/1",
	"join/0", "join/1", "revenue/0", "revenue/1", "sink/0"}

// chaosSchedule draws n faults of every kind of the catalogue but poison
// (which fails a job on purpose), a gap of gap/2 to 3*gap/2 apart. Every
// kind comes about as often; the first is never a crash (the job must
// have started) and the seeded order is printed with the seed.
func (s *soak) chaosSchedule(n int, gap time.Duration) []chaosFault {
	kinds := []string{"panic", "error", "slow", "broker-down", "storage-fail", "corrupt-checkpoint", "crash", "savepoint"}
	var out []chaosFault
	at := 2 * time.Second
	for i := range n {
		at += gap/2 + time.Duration(s.rng.Int63n(int64(gap)))
		kind := kinds[s.rng.Intn(len(kinds))]
		if i == 0 && kind == "crash" {
			kind = "panic"
		}
		f := chaosFault{at: at, kind: kind}
		switch kind {
		case "panic", "error":
			f.spec = fmt.Sprintf("task=%s,fault=%s", chaosTasks[s.rng.Intn(len(chaosTasks))], kind)
		case "slow":
			f.spec = fmt.Sprintf("task=%s,fault=slow,factor=%d,for=%dms", chaosTasks[s.rng.Intn(len(chaosTasks))], 5+s.rng.Intn(20), 500+s.rng.Intn(1500))
		case "broker-down":
			f.spec = fmt.Sprintf("fault=broker-down,for=%dms", 300+s.rng.Intn(1200))
		case "storage-fail":
			f.spec = fmt.Sprintf("fault=storage-fail,count=%d", 1+s.rng.Intn(3))
		default:
			f.spec = "fault=" + kind
		}
		out = append(out, f)
	}
	return out
}

// chaosSoak runs the default job, exactly-once, on the embedded broker
// through n faults drawn from the whole catalogue. A crash fault kills the
// process; the next run resumes with the faults still to come, at the
// same times counted from its own start. The input is written at a rate
// that lasts past the last fault, and the last run goes on to the end of
// it and checks the output.
func chaosSoak(t *testing.T, n int, gap time.Duration, rate int64, extra ...string) {
	name := fmt.Sprintf("chaos soak, %d faults", n)
	if len(extra) > 0 {
		name += " " + strings.Join(extra, " ")
	}
	s := newSoak(t, name)
	faults := s.chaosSchedule(n, gap)
	end := faults[len(faults)-1].at
	records := rate * int64((end + 4*time.Second).Seconds())
	common := []string{"run", "--headless", "--records", fmt.Sprint(records), "--rate", fmt.Sprint(rate),
		"--checkpoint-interval", "200ms", "--restart-strategy", "fixed-delay", "--restart-attempts", "1000000",
		"--restart-delay", "50ms", "--retained-checkpoints", "5", "--retention-interval", "500ms",
		"--listen", "0", "--state-dir", s.stateDir(), "--resume"}
	common = append(common, extra...)
	fired := map[string]int{}
	restarts, savepoints := 0, 0
	var report map[string]any
	var code int
	elapsed := time.Duration(0) // the soak's time when this run started
	for next := 0; ; {
		// This run's faults: up to and including the next crash.
		args := append([]string{}, common...)
		last := next
		for last < len(faults) {
			f := faults[last]
			args = append(args, "--inject", fmt.Sprintf("after=%dms,%s", max(f.at-elapsed, 0).Milliseconds(), f.spec))
			last++
			if f.kind == "crash" {
				break
			}
		}
		started := time.Now()
		r := s.start(args...)
		seen := map[string]bool{}
		for m := range r.events {
			switch m["event"] {
			case "fault_injected":
				if spec, _ := m["spec"].(string); !seen[spec] {
					seen[spec] = true
					fired[m["fault"].(string)]++
				}
			case "restart_scheduled":
				restarts++
			case "savepoint_completed":
				savepoints++
			}
			if rep, ok := m["report"].(map[string]any); ok {
				report = rep
			}
		}
		code = r.exit(s)
		elapsed += time.Since(started)
		crashed := code == -int(syscall.SIGKILL)
		s.log = append(s.log, fmt.Sprintf("run %d: faults %d-%d, exit %d after %s", s.runs, next+1, last, code, time.Since(started).Round(time.Millisecond)))
		if crashed {
			if !seen[faults[last-1].spec] {
				fired["crash"]++ // its event died with the process
			}
			next = last
			continue
		}
		break
	}
	for _, l := range s.log {
		t.Log(s.name + ": " + l)
	}
	total := 0
	var kinds []string
	for k, c := range fired {
		total += c
		kinds = append(kinds, fmt.Sprintf("%s %d", k, c))
	}
	sort.Strings(kinds)
	if report == nil {
		t.Fatalf("%s: the last run printed no report (exit %d)", s.name, code)
	}
	v := report["verify"].(map[string]any)
	t.Logf("%s: seed %d, %d runs, %d faults fired (%s), %d restarts scheduled, %d savepoints, replay_skipped %v, verify: expected %.0f committed %.0f duplicates %.0f lost %.0f",
		s.name, s.seed, s.runs, total, strings.Join(kinds, ", "), restarts, savepoints, report["replay_skipped"], v["expected"], v["committed"], v["duplicates"], v["lost"])
	if code != 0 || v["duplicates"] != 0.0 || v["lost"] != 0.0 || v["expected"] == 0.0 {
		t.Fatalf("%s: the last run exited %d with %v", s.name, code, v)
	}
	if total < n*9/10 {
		t.Fatalf("%s: only %d of %d faults fired", s.name, total, n)
	}
}

// TestSoakChaos is the chaos soak: 100 faults with make soak, 12 in make
// test.
func TestSoakChaos(t *testing.T) {
	t.Parallel()
	if e2e.Soak() {
		chaosSoak(t, 100, 800*time.Millisecond, 10000)
		return
	}
	chaosSoak(t, 12, 600*time.Millisecond, 5000)
}

// TestSoakChaosUnaligned is the chaos soak with unaligned checkpoints: the
// slow faults fill queues for the barriers to overtake, and every other
// fault restores checkpoints that hold records in flight.
func TestSoakChaosUnaligned(t *testing.T) {
	t.Parallel()
	if e2e.Soak() {
		chaosSoak(t, 100, 800*time.Millisecond, 10000, "--unaligned")
		return
	}
	chaosSoak(t, 12, 600*time.Millisecond, 5000, "--unaligned")
}
