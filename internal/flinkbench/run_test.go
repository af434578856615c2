//go:build flinkbench

package flinkbench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// measure is what one run of one engine took.
type measure struct {
	jobMs   float64 // the job's run: faultline's elapsed_ms, Flink's net runtime
	spanMs  float64 // first output record → last commit, as a reader of the output sees them
	cpuMs   float64 // user and system CPU time of the whole process tree
	rssMB   float64 // peak RSS of the process tree, sampled every 25 ms
	jobRSS  float64 // the same until the last commit (without what follows)
	startMs float64 // process start → first output record
	ckptMs  float64 // median checkpoint duration, trigger to completion
	alignMs float64 // median over checkpoints of the longest alignment of a subtask
	records int     // input records, for the throughput
	started int64   // Unix ns when the process started
	// With a failure injected: when it happened (Unix ns), and how long
	// until the first output record after the restart and until the
	// committed output was back where the output was at the failure.
	faultAt         int64
	againMs, backMs float64
}

func (m measure) String() string {
	s := fmt.Sprintf("first output → last commit %.0f ms (%.0f rec/s), start → first output %.0f ms, job %.0f ms, CPU %.0f ms, "+
		"peak RSS %.0f MB (%.0f MB to the last commit), checkpoint median %.0f ms, longest alignment median %.1f ms",
		m.spanMs, m.throughput(), m.startMs, m.jobMs, m.cpuMs, m.rssMB, m.jobRSS, m.ckptMs, m.alignMs)
	if m.faultAt != 0 {
		s += fmt.Sprintf("; failure → output again %.0f ms, → back where it was %.0f ms", m.againMs, m.backMs)
	}
	return s
}

// throughput is the input records over the time from the first output
// record to the last commit.
func (m measure) throughput() float64 { return float64(m.records) / (m.spanMs / 1000) }

// jobThroughput is the input records over the job's own run, its start-up
// included.
func (m measure) jobThroughput() float64 { return float64(m.records) / (m.jobMs / 1000) }

// run runs engine over the whole input into an output topic of its own,
// as set says (plain, with a failure, with join/0 slowed), and checks,
// with Flink's KafkaSource at read_committed, that the output holds every
// expected record once.
func (b *bench) run(engine string, round int, set string) measure {
	t := b.t
	dir := t.TempDir()
	output := fmt.Sprintf("revenue-%s-%d%s", engine, round, strings.NewReplacer(" ", "-", ",", "", "/", "").Replace(set))
	fault := faultArgs(engine, set)
	fail := set == failed
	var m measure
	watch := watchOutput(t, b.addr, output, b.expected)
	if engine == "faultline" {
		m = b.runFaultline(dir, output, round, watch, fault)
	} else {
		m = b.runFlink(dir, output, round, engine == "flink-tuned", watch, fault)
	}
	m.spanMs = float64(watch.span().Milliseconds())
	m.startMs = float64(watch.first.Load()-m.started) / 1e6
	m.records = *records
	if m.spanMs == 0 {
		t.Fatalf("%s round %d: the watch of %s saw no first record or no last commit", engine, round, output)
	}
	if fail {
		again, back, ok := watch.recovery(m.faultAt, 300*time.Millisecond)
		if m.faultAt == 0 || !ok {
			t.Fatalf("%s round %d: no failure seen (at %d), or no restart in the output", engine, round, m.faultAt)
		}
		m.againMs, m.backMs = float64(again.Milliseconds()), float64(max(back, 0).Milliseconds())
	}
	if n, distinct := b.flink.Count(t, output); n != b.expected || distinct != b.expected {
		t.Fatalf("%s round %d committed %d records (%d distinct) to %s, want %d once each", engine, round, n, distinct, output, b.expected)
	}
	return m
}

func (b *bench) runFaultline(dir, output string, round int, watch *outputWatch, fault []string) measure {
	t := b.t
	cmd := exec.Command(b.bin, append([]string{"run", "--headless", "--brokers", b.addr, "--bounded", "--job", unverifiedJob(t, dir),
		"--state-dir", filepath.Join(dir, "state"), "--topic", "sink=" + output,
		"--txn-prefix", "faultline-" + output, "--group", "faultline-bench-" + output}, fault...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	m := runSampled(t, cmd, watch)
	rep := reportOf(t, out.Bytes())
	if rep["status"] != "FINISHED" {
		t.Fatalf("faultline round %d: %v", round, rep)
	}
	m.jobMs = num(rep, "elapsed_ms")
	var durations, aligns []float64
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) == nil && e["event"] == "checkpoint_completed" {
			durations = append(durations, num(e, "duration_ms"))
			aligns = append(aligns, num(e, "max_alignment_us")/1000)
		}
		if e["event"] == "task_failed" && m.faultAt == 0 {
			if ts, err := time.Parse(time.RFC3339Nano, fmt.Sprint(e["ts"])); err == nil {
				m.faultAt = ts.UnixNano()
			}
		}
	}
	m.ckptMs, m.alignMs = median(durations), median(aligns)
	return m
}

func (b *bench) runFlink(dir, output string, round int, tuned bool, watch *outputWatch, fault []string) measure {
	t := b.t
	port := freePort(t)
	args := []string{"-Xms1g", "-Xmx1g", "-Djava.awt.headless=true", "-cp", filepath.Join(os.Getenv("FAULTLINE_FLINK_LIB"), "*"),
		"faultline.flink.PeerJob", b.addr, "output=" + output, fmt.Sprintf("prefix=flink-%s-%d", output, round),
		fmt.Sprintf("rest-port=%d", port), "checkpoint-dir=" + filepath.Join(dir, "checkpoints"), fmt.Sprintf("tuned=%v", tuned),
		"control="} // no fault control topic: the peer as measured before it had one
	args = append(args, fault...)
	cmd := exec.Command("java", args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	ckpts := pollCheckpoints(fmt.Sprintf("http://127.0.0.1:%d", port))
	m := runSampled(t, cmd, watch)
	durations, aligns := ckpts()
	var res struct {
		NetRuntimeMs float64 `json:"net_runtime_ms"`
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for _, l := range lines {
		var f struct {
			FaultAtMs int64 `json:"fault_at_ms"`
		}
		if json.Unmarshal([]byte(l), &f) == nil && f.FaultAtMs > 0 {
			m.faultAt = f.FaultAtMs * 1e6
		}
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || res.NetRuntimeMs == 0 {
		t.Fatalf("Flink round %d: %q\n%s", round, out.String(), lastLines(errOut.String(), 40))
	}
	m.jobMs = res.NetRuntimeMs
	m.ckptMs, m.alignMs = median(durations), median(aligns)
	return m
}

// faultArgs are engine's arguments for set: a panic in join/0 a fifth of
// the way through, or join/0 slowed tenfold from a tenth of the way
// through to the end, with aligned or unaligned checkpoints.
func faultArgs(engine, set string) []string {
	after := *records / 20 // join/0 sees about half the records
	kind := "panic"
	switch set {
	case "":
		return nil
	case failed:
		after = *records / 10
	default:
		kind = "slow"
	}
	if engine == "faultline" {
		args := []string{"--inject", fmt.Sprintf("after-records=%d,task=join/0,fault=%s", after, kind)}
		if kind == "slow" {
			args[1] += ",factor=10,for=1h"
		}
		if set == slowedUnaligned {
			args = append(args, "--unaligned")
		}
		return args
	}
	args := []string{fmt.Sprintf("fault=%s:join/0:%d", kind, after)}
	if set == slowedUnaligned {
		args = append(args, "unaligned=true")
	}
	return args
}

// runSampled runs cmd to its end, sampling its process tree's RSS, and
// returns its CPU time and peak RSS, over the whole run and until watch
// saw the last commit.
func runSampled(t *testing.T, cmd *exec.Cmd, watch *outputWatch) measure {
	started := time.Now().UnixNano()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var jobPeak int64
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v", cmd.Args[0], err)
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			return measure{cpuMs: float64(cpu.Milliseconds()), rssMB: float64(peak) / 1e6, jobRSS: float64(jobPeak) / 1e6, started: started}
		case <-tick.C:
			rss := e2e.TreeRSS(cmd.Process.Pid)
			peak = max(peak, rss)
			if watch.last.Load() == 0 {
				jobPeak = max(jobPeak, rss)
			}
		}
	}
}

func getJSON(c *http.Client, url string, v any) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// table is the ratios faultline / Flink, min / median / max over the
// rounds, for Flink as it comes and tuned.
func table(runs map[string][]measure) string {
	rows := []struct {
		name string
		set  string // "", failed, slowed or slowedUnaligned: which runs it is read from
		of   func(measure) float64
	}{
		{"throughput, first output → last commit", "", measure.throughput},
		{"throughput over the job's run, start-up included", "", measure.jobThroughput},
		{"CPU time per run", "", func(m measure) float64 { return m.cpuMs }},
		{"checkpoint duration, median", "", func(m measure) float64 { return m.ckptMs }},
		{"longest alignment in a checkpoint, median", "", func(m measure) float64 { return m.alignMs }},
		{"join/0 slowed tenfold: checkpoint duration, median", slowed, func(m measure) float64 { return m.ckptMs }},
		{"same, longest alignment in a checkpoint, median", slowed, func(m measure) float64 { return m.alignMs }},
		{"join/0 slowed tenfold, unaligned: checkpoint duration, median", slowedUnaligned, func(m measure) float64 { return m.ckptMs }},
		{"failure → first output record again", failed, func(m measure) float64 { return m.againMs }},
		{"failure → output back where it was", failed, func(m measure) float64 { return m.backMs }},
		{"process start → first output record", "", func(m measure) float64 { return m.startMs }},
		{"peak RSS until the last commit", "", func(m measure) float64 { return m.jobRSS }},
		{"peak RSS of the process tree", "", func(m measure) float64 { return m.rssMB }},
	}
	var b strings.Builder
	b.WriteString("| figure | vs Flink as it comes | vs Flink tuned |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s", r.name)
		for _, peer := range []string{"flink", "flink-tuned"} {
			var ratios []float64
			for i, m := range runs["faultline"+r.set] {
				if p := runs[peer+r.set]; i < len(p) && r.of(p[i]) > 0 {
					ratios = append(ratios, r.of(m)/r.of(p[i]))
				}
			}
			slices.Sort(ratios)
			if len(ratios) == 0 {
				b.WriteString(" | –")
				continue
			}
			fmt.Fprintf(&b, " | %.2f / %.2f / %.2f", ratios[0], median(ratios), ratios[len(ratios)-1])
		}
		b.WriteString(" |\n")
	}
	b.WriteString("\nratios faultline / Flink, min / median / max over the rounds; throughput: higher is faultline's lead, the others: lower is\n\n")
	for _, set := range []string{"", failed, slowed, slowedUnaligned} {
		for _, e := range engines {
			for i, m := range runs[e+set] {
				fmt.Fprintf(&b, "%s round %d: %s\n", e+set, i+1, m)
			}
		}
	}
	return b.String()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// reportOf is the report line of a headless run's output.
func reportOf(t *testing.T, out []byte) map[string]any {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			if r, ok := m["report"].(map[string]any); ok {
				return r
			}
		}
	}
	t.Fatalf("no report in the run's output:\n%s", lastLines(string(out), 20))
	return nil
}

func num(m map[string]any, path ...string) float64 {
	for i, k := range path {
		if i == len(path)-1 {
			f, _ := m[k].(float64)
			return f
		}
		m, _ = m[k].(map[string]any)
	}
	return 0
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitListening(t *testing.T, addr string) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
	}
	t.Fatalf("nothing listens on %s", addr)
}
