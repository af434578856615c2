//go:build flinkbench

// Package flinkbench measures faultline against Apache Flink on the same
// job and the same Kafka (make bench-flink): the input is written once,
// then faultline's default job, Flink's peer of it (bench/flink's PeerJob)
// as it comes and the same tuned as an expert would run alternate, each
// over the whole input into an output topic of its own, and the table of
// ratios faultline / Flink is printed. Both outputs are counted by the same
// reader (Flink's KafkaSource at read_committed), so faultline runs with
// verify: false, as a benchmark run would.
package flinkbench

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/kafkalane"
)

var (
	records    = flag.Int("records", 2_000_000, "input records (orders plus payments) written once")
	rounds     = flag.Int("rounds", 3, "rounds of faultline, default Flink and tuned Flink, alternated")
	slowRounds = flag.Int("slow-rounds", 1, "rounds that also run each engine with join/0 slowed tenfold, aligned and unaligned (they take longest)")
	kafkas     = flag.String("kafka", "embedded,apache", "the brokers to measure on: embedded (faultline broker) and apache (Kafka from the lane's jars)")
)

// binEnv names the faultline program to measure (make bench-flink builds it).
const binEnv = "FAULTLINE_BIN"

func TestFlinkPeer(t *testing.T) {
	bin := os.Getenv(binEnv)
	if bin == "" {
		t.Fatalf("$%s is not set: run make bench-flink", binEnv)
	}
	for _, kind := range strings.Split(*kafkas, ",") {
		t.Run(kind, func(t *testing.T) {
			var addr string
			switch kind {
			case "embedded":
				addr = startEmbedded(t, bin)
			case "apache":
				addr = kafkalane.Start(t, kafkalane.Options{}).Addr()
			default:
				t.Fatalf("-kafka %s: want embedded or apache", kind)
			}
			b := &bench{t: t, bin: bin, addr: addr, flink: kafkalane.FlinkFor(t, addr)}
			b.fill()
			runs := map[string][]measure{}
			for r := 1; r <= *rounds; r++ {
				sets := []string{"", failed}
				if r <= *slowRounds {
					sets = append(sets, slowed, slowedUnaligned)
				}
				for _, set := range sets {
					for _, e := range engines {
						m := b.run(e, r, set)
						t.Logf("%s round %d: %s", e+set, r, m)
						runs[e+set] = append(runs[e+set], m)
					}
				}
			}
			fmt.Printf("\nfaultline / Flink on %s Kafka, %d input records, %d rounds\n\n%s\n", kind, *records, *rounds, table(runs))
		})
	}
}

// engines are what a round runs, in its order: each over the input as it
// is, then each with a panic in join/0 a fifth of the way through, then
// (in the first -slow-rounds rounds) each with join/0 slowed, aligned and
// unaligned.
var engines = []string{"faultline", "flink", "flink-tuned"}

// failed, slowed and slowedUnaligned mark the runs with a failure, with
// join/0 slowed tenfold from a tenth of the way through, and the same with
// unaligned checkpoints.
const (
	failed          = " with a failure"
	slowed          = " with join/0 slowed"
	slowedUnaligned = " with join/0 slowed, unaligned"
)

// bench is one broker's measurement.
type bench struct {
	t        *testing.T
	bin      string
	addr     string
	flink    *kafkalane.Flink
	expected int // the output records of the whole input
}

// fill writes the input with a faultline run that also counts what the
// output of the whole input must be.
func (b *bench) fill() {
	t := b.t
	start := time.Now()
	out, err := exec.Command(b.bin, "run", "--headless", "--brokers", b.addr, "--generate", "--records", fmt.Sprint(*records),
		"--state-dir", t.TempDir(), "--topic", "sink=revenue-fill", "--txn-prefix", "fill").Output()
	if err != nil {
		t.Fatalf("writing the input: %v", err)
	}
	rep := reportOf(t, out)
	b.expected = int(num(rep, "verify", "committed"))
	if rep["verify"].(map[string]any)["ok"] != true || b.expected == 0 {
		t.Fatalf("the filling run: %v", rep)
	}
	t.Logf("input: %d records written and checked in %s; %d output records expected", *records, time.Since(start).Round(time.Second), b.expected)
}

// startEmbedded starts `faultline broker` on a free port, stopped when t
// ends.
func startEmbedded(t *testing.T, bin string) string {
	port := freePort(t)
	cmd := exec.Command(bin, "broker", "--listen", fmt.Sprint(port), "--state-dir", t.TempDir())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitListening(t, addr)
	return addr
}

// unverifiedJob writes the default job with verify: false into dir.
func unverifiedJob(t *testing.T, dir string) string {
	fixture, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "jobs", "orders.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	job := filepath.Join(dir, "orders-unverified.yaml")
	if err := os.WriteFile(job, []byte(strings.Replace(string(fixture), "\nverify: paid-orders\n", "\nverify: false\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return job
}
