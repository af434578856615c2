package faults

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// Any Kafka client can use the embedded broker: kcat lists its topics,
// produces an order and its payment that the job then processes, and reads
// the job's committed output.
func TestKcatAgainstFaultlineBroker(t *testing.T) {
	t.Parallel()
	addr := e2e.StartBroker(t)
	meta := e2e.Kcat(t, "", "-b", addr, "-L")
	for _, topic := range []string{`topic "orders" with 4 partitions`, `topic "payments" with 4 partitions`, `topic "revenue" with 1 partitions`} {
		if !strings.Contains(meta, topic) {
			t.Fatalf("kcat -L does not list %s:\n%s", topic, meta)
		}
	}
	e2e.Kcat(t, `{"order_id":"o-kcat-1","customer":"c-42","amount_cents":4200}`+"\n", "-b", addr, "-P", "-t", "orders", "-p", "1", "-k", "o-kcat-1")
	e2e.Kcat(t, `{"order_id":"o-kcat-1","payment_id":"p-kcat-1","amount_cents":4200}`+"\n", "-b", addr, "-P", "-t", "payments", "-p", "3", "-k", "o-kcat-1")

	r := e2e.Faultline(t, "run", "--headless", "--brokers", addr, "--bounded", "--checkpoint-interval", "100ms")
	if r.Code != 0 {
		t.Fatalf("exit %d, stderr %s", r.Code, r.Stderr)
	}
	if e2e.Num(r.Report, "verify", "expected") != 1 || e2e.Num(r.Report, "verify", "committed") != 1 {
		t.Fatalf("report %v", r.Report)
	}
	got := e2e.Kcat(t, "", "-b", addr, "-C", "-t", "revenue", "-e", "-q", "-X", "isolation.level=read_committed")
	if !strings.Contains(got, `"order_id":"o-kcat-1"`) || !strings.Contains(got, `"customer_total_cents":4200`) {
		t.Fatalf("kcat reads %q from revenue", got)
	}

	// A topic no one created is created on first use, as Kafka's default
	// auto.create.topics.enable does, with one partition (num.partitions):
	// kcat used to wait for it for ever.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	produce := exec.CommandContext(ctx, "kcat", "-b", addr, "-P", "-t", "scratch", "-k", "k1")
	produce.Stdin = strings.NewReader("hello\n")
	if out, err := produce.CombinedOutput(); err != nil {
		t.Fatalf("kcat producing to a new topic: %v (%v)\n%s", err, ctx.Err(), out)
	}
	if meta := e2e.Kcat(t, "", "-b", addr, "-L", "-t", "scratch"); !strings.Contains(meta, `topic "scratch" with 1 partitions`) {
		t.Fatalf("the new topic is not listed with one partition:\n%s", meta)
	}
	if got := e2e.Kcat(t, "", "-b", addr, "-C", "-t", "scratch", "-e", "-q", "-f", "%k=%s\n"); got != "k1=hello\n" {
		t.Fatalf("kcat reads %q back from the new topic", got)
	}
}

func TestUnreachableBrokersFailFast(t *testing.T) {
	t.Parallel()
	start := time.Now()
	r := e2e.Faultline(t, "run", "--headless", "--brokers", "127.0.0.1:1", "--records", "10")
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", r.Code, r.Stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %s to give up", d)
	}
	if !strings.Contains(r.Stderr, "127.0.0.1:1") {
		t.Fatalf("the error does not name the address: %q", r.Stderr)
	}
}

// With --brokers and without --generate nothing writes into a source topic,
// so one that does not exist is an error that names it, and nothing is
// created on the cluster: a misspelt --topic used to be created empty, read
// to its end at once, and the run reported success.
func TestMissingSourceTopicIsAnError(t *testing.T) {
	t.Parallel()
	addr := e2e.StartBroker(t)
	r := e2e.Faultline(t, "run", "--headless", "--brokers", addr, "--records", "10", "--topic", "orders-source=shop.orders")
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "no topic shop.orders (read by orders-source) at "+addr) || !strings.Contains(r.Stderr, "--generate") {
		t.Fatalf("stderr %q does not name the missing topic, its source and --generate", r.Stderr)
	}
	if meta := e2e.Kcat(t, "", "-b", addr, "-L"); strings.Contains(meta, "shop.orders") {
		t.Fatalf("the missing topic was created:\n%s", meta)
	}
	// --generate creates it and writes the generator's orders into it.
	r = e2e.Faultline(t, "run", "--headless", "--brokers", addr, "--records", "1000", "--generate", "--topic", "orders-source=shop.orders")
	if r.Code != 0 || e2e.Num(r.Report, "verify", "expected") == 0 {
		t.Fatalf("with --generate: exit %d, report %v, stderr %q", r.Code, r.Report, r.Stderr)
	}
}

// A cluster that goes away for good under a run (here the whole broker
// process) fails the job once its restarts are used up, and the run ends
// soon after, saying so: the input writer no longer waits the minute its
// producer would retry each record it still holds, and the outputs that
// cannot be settled are named.
func TestBrokerGoneForGoodEndsTheRun(t *testing.T) {
	t.Parallel()
	broker, addr := e2e.StartBrokerProcess(t)
	run, stderr, lines := e2e.StartRun(t, "run", "--headless", "--brokers", addr, "--generate", "--rate", "1000",
		"--checkpoint-interval", "200ms", "--restart-attempts", "2", "--restart-delay", "100ms", "--state-dir", t.TempDir())
	for m := range lines {
		if m["event"] == "checkpoint_completed" {
			break
		}
	}
	broker.Process.Kill()
	killed := time.Now()
	var err error
	exited := make(chan error, 1)
	go func() {
		for range lines {
		}
		exited <- run.Wait()
	}()
	select {
	case err = <-exited:
	case <-time.After(45 * time.Second):
		run.Process.Kill()
		<-exited
		t.Fatalf("still running 45 s after the broker went away; stderr:\n%s", stderr.String())
	}
	t.Logf("ended %s after the broker went away", time.Since(killed).Round(100*time.Millisecond))
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want code 1; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "the job ended FAILED") || !strings.Contains(stderr.String(), addr) {
		t.Fatalf("stderr does not say the job failed and name the broker:\n%s", stderr.String())
	}
}

// Writing a large bounded input into the broker before the job starts
// reports its progress every second (input_progress), and Ctrl-C in the
// middle of it stops the run there, saying how far it got.
func TestInputFillShowsProgressAndStops(t *testing.T) {
	t.Parallel()
	run, stderr, lines := e2e.StartRun(t, "run", "--headless", "--records", "20000000", "--listen", "0", "--state-dir", t.TempDir())
	var last float64
	for seen := 0; seen < 2; {
		m, ok := <-lines
		if !ok {
			run.Wait()
			t.Fatalf("stdout ended before two input_progress events; stderr:\n%s", stderr.String())
		}
		if m["event"] == "input_written" || m["event"] == "run_started" {
			t.Fatalf("the input was written before two progress reports: %v", m)
		}
		if m["event"] != "input_progress" {
			continue
		}
		seen++
		n, of := e2e.Num(m, "records"), e2e.Num(m, "of")
		if n <= last || n >= of || of < 20000000 {
			t.Fatalf("input_progress %v after %v records", m, last)
		}
		last = n
	}
	run.Process.Signal(syscall.SIGINT)
	go func() {
		for range lines {
		}
	}()
	err := run.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want code 1; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped while writing the input into Kafka, with about ") {
		t.Fatalf("stderr does not say where the input stopped:\n%s", stderr.String())
	}
}

// A broker log whose meta.json is gone or damaged is refused at once and
// named, never read as an empty broker beside the old data.
func TestDamagedLogDirIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"run", "--headless", "--records", "2000", "--state-dir", dir}
	if r := e2e.Faultline(t, args...); r.Code != 0 {
		t.Fatalf("first run: exit %d, stderr %q", r.Code, r.Stderr)
	}
	meta := filepath.Join(dir, "kafka", "meta.json")
	for _, damage := range []struct {
		name string
		do   func() error
		want string
	}{
		{"missing", func() error { return os.Remove(meta) }, "has no meta.json"},
		{"empty", func() error { return os.WriteFile(meta, nil, 0o644) }, "has an empty meta.json"},
		{"garbage", func() error { return os.WriteFile(meta, []byte("{bad"), 0o644) }, "parsing meta.json"},
	} {
		t.Run(damage.name, func(t *testing.T) {
			if err := damage.do(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r := e2e.Faultline(t, append(args, "--resume")...)
			if r.Code != 1 || !strings.Contains(r.Stderr, "the embedded Kafka broker's log is damaged") ||
				!strings.Contains(r.Stderr, damage.want) || !strings.Contains(r.Stderr, "--fresh") {
				t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("refused after %s", took)
			}
		})
	}
}

// A listener that accepts connections and never answers is reported within
// seconds, and Ctrl-C while waiting for it stops the run at once.
func TestSilentBrokerIsReportedInSecondsAndCtrlCStopsTheWait(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close() // held open, never answered
		}
	}()
	args := []string{"run", "--headless", "--brokers", ln.Addr().String(), "--bounded"}
	start := time.Now()
	r := e2e.Faultline(t, args...)
	if took := time.Since(start); r.Code != 1 || took > 15*time.Second ||
		!strings.Contains(r.Stderr, "accepted the connection but answered no request in 5s") {
		t.Fatalf("exit %d after %s, stderr %q; want exit 1 within seconds, saying the broker answered nothing", r.Code, took, r.Stderr)
	}
	cmd := e2e.Command(t, append(args, "--state-dir", t.TempDir())...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	start = time.Now()
	cmd.Wait()
	if took := time.Since(start); cmd.ProcessState.ExitCode() != 1 || took > 3*time.Second ||
		!strings.Contains(stderr.String(), "stopped while connecting to Kafka at "+ln.Addr().String()) {
		t.Fatalf("after Ctrl-C: exit %d after %s, stderr %q", cmd.ProcessState.ExitCode(), took, stderr.String())
	}
}
