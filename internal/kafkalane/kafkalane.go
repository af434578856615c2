// Package kafkalane runs a real Apache Kafka broker for faultline's Kafka
// test lane (`make test-kafka`): one node in KRaft mode (process.roles
// broker,controller), started from the published jars that the lane fetches
// with Maven into $FAULTLINE_KAFKA_LIB, on free loopback ports, with its log
// dir in the test's temporary dir. Kafka's own command-line tools (the
// console consumer and producer, consumer groups, transactions, topics) run
// from the same jars, so that a test counts what the broker holds without
// trusting any of faultline's readers.
//
// The package is plain Go and builds with the rest of the module; its tests
// and the lane's tests in internal/cli carry the build tag kafka and run
// only in `make test-kafka`, which needs Java 17 and Maven.
package kafkalane

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// LibEnv names the directory of the Kafka jars.
const LibEnv = "FAULTLINE_KAFKA_LIB"

// SCRAM credentials of the SASL_PLAINTEXT listener, created when the log dir
// is formatted (kafka-storage format --add-scram), for both mechanisms.
const (
	SCRAMUser     = "faultline"
	SCRAMPassword = "faultline-secret"
)

// Main classes in the jars (Kafka 4.x), run as `java -cp <lib>/* <class>`.
const (
	classBroker       = "kafka.Kafka"
	classStorage      = "kafka.tools.StorageTool"
	classConsumer     = "org.apache.kafka.tools.consumer.ConsoleConsumer"
	classProducer     = "org.apache.kafka.tools.ConsoleProducer"
	classGroups       = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
	classTransactions = "org.apache.kafka.tools.TransactionsCommand"
	classTopics       = "org.apache.kafka.tools.TopicCommand"
	classCopier       = "org.apache.kafka.tools.TransactionalMessageCopier"
)

// startTimeout is how long a broker may take from `java` to answering a
// metadata request (a JVM on two busy cores takes a few seconds).
const startTimeout = 90 * time.Second

// Options says which listeners a broker has besides PLAINTEXT. The zero
// value is plaintext only.
type Options struct {
	// SCRAM adds a SASL_PLAINTEXT listener with SCRAM-SHA-256 and
	// SCRAM-SHA-512, user SCRAMUser with password SCRAMPassword.
	SCRAM bool
	// TLS adds an SSL listener whose certificate, for 127.0.0.1, is signed
	// by a CA the harness makes (CAFile).
	TLS bool
}

// Broker is one running single-node Kafka.
type Broker struct {
	Tools // aimed at the PLAINTEXT listener
	opt   Options

	plain, controller, scram, tls int // ports
	caFile                        string
	logFile                       string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	runs int
}

// Lib is the directory of the Kafka jars, $FAULTLINE_KAFKA_LIB; it fails t
// when that is not set.
func Lib(t testing.TB) string {
	t.Helper()
	lib := os.Getenv(LibEnv)
	if lib == "" {
		t.Fatalf("$%s is not set: run the Kafka lane with `make test-kafka`, which fetches Apache Kafka's jars and sets it", LibEnv)
	}
	jars, _ := filepath.Glob(filepath.Join(lib, "kafka_2.13-*.jar"))
	if len(jars) == 0 {
		t.Fatalf("$%s is %s, which holds no kafka_2.13 jar: remove it and run `make test-kafka` again", LibEnv, lib)
	}
	return lib
}

// Start formats a KRaft log dir in a temporary dir of t, starts a broker on
// it on free loopback ports, and waits until it answers a metadata request.
// The broker is killed when t ends; its output goes to a file whose tail
// is logged when t failed.
func Start(t testing.TB, opt Options) *Broker {
	t.Helper()
	b := &Broker{Tools: Tools{lib: Lib(t), dir: t.TempDir()}, opt: opt}
	b.logFile = filepath.Join(b.dir, "broker.log")
	ports := freePorts(t, 4)
	b.plain, b.controller = ports[0], ports[1]
	b.addr = addr(b.plain)
	if opt.SCRAM {
		b.scram = ports[2]
	}
	if opt.TLS {
		b.tls = ports[3]
		if err := writeCerts(b.dir); err != nil {
			t.Fatal(err)
		}
		b.caFile = filepath.Join(b.dir, "ca.pem")
	}
	if err := os.WriteFile(filepath.Join(b.dir, "server.properties"), []byte(b.properties()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, "log4j2.properties"), []byte(log4jBroker), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, "log4j2-tools.properties"), []byte(log4jTools), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.stop()
		if t.Failed() {
			t.Logf("the Kafka broker's output ends:\n%s", tail(b.logFile, 60))
		}
	})
	b.format(t)
	b.Restart(t)
	return b
}

// Addr is the PLAINTEXT listener's host:port.
func (b *Broker) Addr() string { return addr(b.plain) }

// SCRAMAddr is the SASL_PLAINTEXT listener's host:port ("" without
// Options.SCRAM).
func (b *Broker) SCRAMAddr() string {
	if b.scram == 0 {
		return ""
	}
	return addr(b.scram)
}

// TLSAddr is the SSL listener's host:port ("" without Options.TLS).
func (b *Broker) TLSAddr() string {
	if b.tls == 0 {
		return ""
	}
	return addr(b.tls)
}

// CAFile is the PEM file of the CA that signed the SSL listener's
// certificate ("" without Options.TLS).
func (b *Broker) CAFile() string { return b.caFile }

// LogFile is the file the broker's stdout and stderr go to.
func (b *Broker) LogFile() string { return b.logFile }

// Kill kills the broker process (SIGKILL), as a crash would, and waits
// until it is gone.
func (b *Broker) Kill(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.cmd = nil
	b.mu.Unlock()
	if cmd == nil {
		t.Fatal("Kill: the Kafka broker is not running")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the Kafka broker (pid %d) did not exit within 30 s of SIGKILL", cmd.Process.Pid)
	}
}

// Restart starts the broker again, on the same ports and log dir, and
// waits until it answers. Start calls it for the first start.
func (b *Broker) Restart(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	if b.cmd != nil {
		b.mu.Unlock()
		t.Fatal("Restart: the Kafka broker is still running; Kill it first")
	}
	b.runs++
	log, err := os.OpenFile(b.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.mu.Unlock()
		t.Fatal(err)
	}
	fmt.Fprintf(log, "\n=== kafkalane: start %d of the broker\n", b.runs)
	cmd := exec.Command("java", "-Xms128m", "-Xmx512m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
		"-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile="+filepath.Join(b.dir, "log4j2.properties"),
		"-cp", b.classpath(), classBroker, filepath.Join(b.dir, "server.properties"))
	cmd.Dir = b.dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		b.mu.Unlock()
		t.Fatalf("starting the Kafka broker: %v", err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		log.Close()
		close(done)
	}()
	b.cmd, b.done = cmd, done
	b.mu.Unlock()

	start := time.Now()
	for {
		err := b.ping()
		if err == nil {
			t.Logf("Kafka broker up at %s after %s (start %d, pid %d)", b.Addr(), time.Since(start).Round(10*time.Millisecond), b.runs, cmd.Process.Pid)
			return
		}
		select {
		case <-done:
			t.Fatalf("the Kafka broker exited while starting (%s); its output ends:\n%s", cmd.ProcessState, tail(b.logFile, 40))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Since(start) > startTimeout {
			t.Fatalf("the Kafka broker did not answer at %s within %s: %v", b.Addr(), startTimeout, err)
		}
	}
}

// ping asks the broker for the cluster's metadata and checks that it lists
// itself.
func (b *Broker) ping() error {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0
	cfg.Net.DialTimeout = time.Second
	cfg.Net.ReadTimeout = 2 * time.Second
	cfg.Metadata.Retry.Max = 0
	cfg.ClientID = "kafkalane"
	c, err := sarama.NewClient([]string{b.Addr()}, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	if len(c.Brokers()) == 0 {
		return errors.New("the metadata lists no broker")
	}
	if _, err := c.Controller(); err != nil {
		return fmt.Errorf("no controller: %w", err)
	}
	return nil
}

// stop kills the broker if it runs; the log dir is thrown away with the
// test's temporary dir, so nothing needs a clean shutdown.
func (b *Broker) stop() {
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.cmd = nil
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// format writes the KRaft metadata into the log dir, with the SCRAM
// credentials when asked for.
func (b *Broker) format(t testing.TB) {
	t.Helper()
	args := []string{"format", "--cluster-id", clusterID(), "--config", filepath.Join(b.dir, "server.properties"), "--standalone"}
	if b.opt.SCRAM {
		for _, m := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
			args = append(args, "--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", m, SCRAMUser, SCRAMPassword))
		}
	}
	if _, err := b.java(classStorage, nil, args...); err != nil {
		t.Fatalf("formatting the Kafka log dir: %v", err)
	}
}

// properties is the broker's server.properties.
func (b *Broker) properties() string {
	listeners := []string{"PLAINTEXT://" + b.Addr(), "CONTROLLER://" + addr(b.controller)}
	advertised := []string{"PLAINTEXT://" + b.Addr()}
	protocols := []string{"PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT"}
	var extra []string
	if b.opt.SCRAM {
		listeners = append(listeners, "SASL_PLAINTEXT://"+b.SCRAMAddr())
		advertised = append(advertised, "SASL_PLAINTEXT://"+b.SCRAMAddr())
		protocols = append(protocols, "SASL_PLAINTEXT:SASL_PLAINTEXT")
		extra = append(extra,
			"sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
			"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
			"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;")
	}
	if b.opt.TLS {
		listeners = append(listeners, "SSL://"+b.TLSAddr())
		advertised = append(advertised, "SSL://"+b.TLSAddr())
		protocols = append(protocols, "SSL:SSL")
		extra = append(extra,
			"ssl.keystore.type=PEM",
			"ssl.keystore.location="+filepath.Join(b.dir, "server-keystore.pem"),
			"ssl.client.auth=none")
	}
	lines := []string{
		"process.roles=broker,controller",
		"node.id=1",
		"controller.quorum.bootstrap.servers=" + addr(b.controller),
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"listeners=" + strings.Join(listeners, ","),
		"advertised.listeners=" + strings.Join(advertised, ","),
		"listener.security.protocol.map=" + strings.Join(protocols, ","),
		"log.dirs=" + filepath.Join(b.dir, "data"),
		"num.partitions=1",
		"offsets.topic.replication.factor=1",
		"offsets.topic.num.partitions=4",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"transaction.state.log.num.partitions=4",
		"group.initial.rebalance.delay.ms=0",
		// A broker killed and started again registers anew, which the
		// controller allows once the old registration's session has
		// expired (9 s by default).
		"broker.session.timeout.ms=2000",
		"broker.heartbeat.interval.ms=500",
		"auto.create.topics.enable=true",
		"share.coordinator.state.topic.replication.factor=1",
		"share.coordinator.state.topic.min.isr=1",
		"num.network.threads=2",
		"num.io.threads=4",
	}
	return strings.Join(append(lines, extra...), "\n") + "\n"
}

func (tl *Tools) classpath() string { return filepath.Join(tl.lib, "*") }

// java runs one of Kafka's tools to its end, with stdin, and returns its
// standard output; a failure names the tool and holds its stderr.
func (tl *Tools) java(class string, stdin []byte, args ...string) (string, error) {
	out, errOut, err := tl.javaBoth(class, stdin, args...)
	if err != nil {
		return out, fmt.Errorf("%s %s: %v\n%s", class, strings.Join(args, " "), err, errOut)
	}
	return out, nil
}

// javaBoth runs a tool and returns its stdout and stderr.
func (tl *Tools) javaBoth(class string, stdin []byte, args ...string) (string, string, error) {
	cmd := exec.Command("java", append([]string{
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + filepath.Join(tl.dir, "log4j2-tools.properties"),
		"-cp", tl.classpath(), class}, args...)...)
	cmd.Dir = tl.dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.SysProcAttr = procAttr()
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// log4jBroker logs the broker at INFO (its state changes, the transaction
// coordinator's decisions) to stdout, which Start sends to the log file.
const log4jBroker = `status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
logger.request.name = kafka.request.logger
logger.request.level = warn
logger.clients.name = org.apache.kafka.clients
logger.clients.level = warn
`

// log4jTools logs the tools' warnings to stderr: their stdout is what the
// harness parses.
const log4jTools = `status = error
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.err.ref = err
`

// clusterID is a new KRaft cluster id: 16 random bytes, base64url without
// padding, as kafka-storage random-uuid prints, and like Kafka's never one
// that starts with '-' (the storage tool would read it as an option).
func clusterID() string {
	for {
		var u [16]byte
		rand.Read(u[:])
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		if id := base64.RawURLEncoding.EncodeToString(u[:]); id[0] != '-' {
			return id
		}
	}
}

// freePorts is n distinct loopback TCP ports nothing listens on now. It
// holds each one open until it has them all: a port closed before the next
// is asked for may come back again, and Kafka refuses two listeners on one
// port.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func addr(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

// tail is the last n lines of file.
func tail(file string, n int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
