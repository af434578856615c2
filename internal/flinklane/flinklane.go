//go:build flink

// Package flinklane runs faultline's Flink peer job (bench/flink's
// PeerJob, a local MiniCluster in a JVM of its own) against faultline's
// embedded broker, for the tests of the Flink lane: a broker with the
// default job's input (Broker), the job started and driven through Flink's
// REST API (StartPeer, Peer), and faults written to its control topic
// (Produce). It needs Java 17 and the module built by `make flink-jars`
// ($FAULTLINE_FLINK_LIB), so every file carries the build tag flink:
//
//	make flink-jars
//	FAULTLINE_FLINK_LIB=$PWD/build/flink/2.2.0/lib go test -tags flink -v ./internal/flinklane/
//
// $FAULTLINE_BIN names the faultline program to use; without it each test
// builds one.
package flinklane

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/internal/kafkalane"
)

// Lib is $FAULTLINE_FLINK_LIB, the directory of faultline's Flink module
// and its dependencies; it fails t when that is not set or is no such
// directory.
func Lib(t testing.TB) string {
	t.Helper()
	return kafkalane.FlinkLib(t)
}

// binEnv names the faultline program the lane runs (make bench-flink sets
// it for its own lane too).
const binEnv = "FAULTLINE_BIN"

// Binary is $FAULTLINE_BIN, or else the module's program built into t's
// temporary dir.
func Binary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(binEnv); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("$%s: %v", binEnv, err)
		}
		return bin
	}
	bin := filepath.Join(t.TempDir(), "faultline")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/faultline-dev/faultline").CombinedOutput(); err != nil {
		t.Fatalf("building faultline: %v\n%s", err, out)
	}
	return bin
}

// Broker starts `faultline broker` (its log in t's temporary dir, stopped
// when t ends), writes records of the default job's input (orders and
// payments) into it with a faultline run, and returns its address.
func Broker(t testing.TB, records int) (addr string) {
	t.Helper()
	bin := Binary(t)
	cmd := exec.Command(bin, "broker", "--listen", "0", "--state-dir", t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // the broker and the process it supervises
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("faultline broker printed nothing: %v", err)
	}
	_, rest, ok := strings.Cut(line, "listening on ")
	addr, _, _ = strings.Cut(rest, " ")
	if !ok || addr == "" {
		t.Fatalf("no address in %q", line)
	}
	fill(t, bin, addr, records)
	return addr
}

// fill writes records of input into the broker at addr with a faultline
// run of the default job, which also checks its own output of them.
func fill(t testing.TB, bin, addr string, records int) {
	t.Helper()
	out, err := exec.Command(bin, "run", "--headless", "--brokers", addr, "--generate", "--records", fmt.Sprint(records),
		"--state-dir", t.TempDir(), "--topic", "sink=revenue-fill", "--txn-prefix", "fill").Output()
	if err != nil {
		t.Fatalf("writing the input: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var last struct {
		Report struct {
			Status string `json:"status"`
			Verify struct {
				OK bool `json:"ok"`
			} `json:"verify"`
		} `json:"report"`
	}
	if json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil || last.Report.Status != "FINISHED" || !last.Report.Verify.OK {
		t.Fatalf("the run that writes the input: %s", lines[len(lines)-1])
	}
}

// Produce writes values to topic of the Kafka at addr, without keys, and
// returns once the broker has them.
func Produce(t testing.TB, addr, topic string, values ...string) {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("a producer for %s: %v", topic, err)
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, len(values))
	for i, v := range values {
		msgs[i] = &sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(v)}
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatalf("writing to %s: %v", topic, err)
	}
}

// freePort is a TCP port nothing listens on just now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitFor calls done every 250 ms until it says yes, and fails t with what
// and done's last error when that takes longer than timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, done func() (bool, error)) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		var ok bool
		if ok, err = done(); ok {
			return
		}
	}
	t.Fatalf("waited %s for %s (last error: %v)", timeout, what, err)
}
