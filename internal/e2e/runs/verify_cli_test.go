package runs

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/internal/e2e"
)

// faultline verify checks the committed output of a job on its own: that
// of a finished run on `faultline broker` as the run's report did, and
// copies of it written by another client as another engine would write
// them, with a duplicate committed (and one aborted, which a read_committed
// reader never sees), half of it, or none.
func TestVerifyChecksTheCommittedOutputOfAnyJob(t *testing.T) {
	t.Parallel()
	_, addr := e2e.StartBrokerWith(t, "--state-dir", t.TempDir())
	run := e2e.Faultline(t, "run", "--headless", "--brokers", addr, "--generate", "--records", "20000")
	if run.Code != 0 || run.Report["verify"].(map[string]any)["ok"] != true {
		t.Fatalf("run: exit %d, report %v\n%s", run.Code, run.Report, run.Stderr)
	}
	n := int(e2e.Num(run.Report, "verify", "expected"))

	r, v := verifyJSON(t, "--brokers", addr)
	if r.Code != 0 || v["ok"] != true || int(e2e.Num(v, "expected")) != n || e2e.Num(v, "committed") != float64(n) ||
		e2e.Num(v, "duplicates") != 0 || e2e.Num(v, "lost") != 0 || v["guarantee"] != "exactly-once" {
		t.Fatalf("verify of the run's output: exit %d, %v, want ok with expected %d as the run's report\n%s", r.Code, v, n, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "verify: reading orders, payments and revenue from "+addr) {
		t.Errorf("stderr does not say what it reads: %q", r.Stderr)
	}

	out := committedRecords(t, addr, "revenue", n)
	writePlain(t, addr, "revenue-dup", out)
	writeTxn(t, addr, "revenue-dup", out[0], true)
	writeTxn(t, addr, "revenue-dup", out[1], false)
	r, v = verifyJSON(t, "--brokers", addr, "--output", "revenue-dup")
	if r.Code != 4 || v["ok"] != false || e2e.Num(v, "duplicates") != 1 || e2e.Num(v, "lost") != 0 || e2e.Num(v, "committed") != float64(n+1) {
		t.Fatalf("a committed duplicate: exit %d, %v, want exit 4 with 1 duplicate\n%s", r.Code, v, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "verification failed: 1 duplicate") {
		t.Errorf("stderr does not say why it failed: %q", r.Stderr)
	}
	human := e2e.Faultline(t, "verify", "--brokers", addr, "--output", "revenue-dup", "--guarantee", "at-least-once")
	if human.Code != 0 || !strings.HasPrefix(human.Stdout, "verify: at-least-once ✓") || !strings.Contains(human.Stdout, "duplicates 1") {
		t.Fatalf("at-least-once: exit %d, stdout %q, want exit 0 and a line that counts the duplicate\n%s", human.Code, human.Stdout, human.Stderr)
	}

	writePlain(t, addr, "revenue-half", out[:n/2])
	r, v = verifyJSON(t, "--brokers", addr, "--output", "revenue-half")
	if r.Code != 4 || int(e2e.Num(v, "lost")) != n-n/2 || e2e.Num(v, "duplicates") != 0 {
		t.Fatalf("half the output: exit %d, %v, want exit 4 with %d lost\n%s", r.Code, v, n-n/2, r.Stderr)
	}
	r, v = verifyJSON(t, "--brokers", addr, "--output", "revenue-none")
	if r.Code != 4 || int(e2e.Num(v, "lost")) != n || !strings.Contains(r.Stderr, "no topic revenue-none at "+addr) {
		t.Fatalf("no output topic: exit %d, %v, want exit 4 with all %d lost and a line naming it\n%s", r.Code, v, n, r.Stderr)
	}
	r = e2e.Faultline(t, "verify", "--brokers", addr, "--inputs", "shop.orders,payments")
	if r.Code != 1 || !strings.Contains(r.Stderr, "no topic shop.orders at "+addr) {
		t.Fatalf("a missing input topic: exit %d, stderr %q, want exit 1 naming it", r.Code, r.Stderr)
	}
}

// A flag that cannot be right is exit 2 with a line that says which; a
// broker that is not there is exit 1 within seconds, naming its address.
func TestVerifyRefusesBadFlagsAndUnreachableBrokers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify"}, "--brokers"},
		{[]string{"verify", "--brokers", "127.0.0.1:9092", "--guarantee", "none"}, "--guarantee"},
		{[]string{"verify", "--brokers", "127.0.0.1:9092", "--job", "../../../fixtures/jobs/orders.yaml", "--relation", "orders"}, "--relation and --job"},
		{[]string{"verify", "--brokers", "127.0.0.1:9092", "--no-such-flag"}, "unknown flag"},
	} {
		r := e2e.Faultline(t, tc.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) || r.Stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 and a line with %q", tc.args, r.Code, r.Stderr, r.Stdout, tc.want)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	start := time.Now()
	r := e2e.Faultline(t, "verify", "--brokers", closed, "--json")
	if r.Code != 1 || !strings.Contains(r.Stderr, closed) || r.Stdout != "" {
		t.Fatalf("a closed port: exit %d, stderr %q, stdout %q; want exit 1 naming %s", r.Code, r.Stderr, r.Stdout, closed)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("took %s to give up on a closed port", d)
	}
}

// verifyJSON runs faultline verify --json with args and returns what it
// left with its verdict, the object under "verify".
func verifyJSON(t *testing.T, args ...string) (e2e.Result, map[string]any) {
	t.Helper()
	r := e2e.Faultline(t, append([]string{"verify", "--json"}, args...)...)
	var out struct {
		Verify map[string]any `json:"verify"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || out.Verify == nil || strings.Count(r.Stdout, "\n") != 1 {
		t.Fatalf("verify %v: stdout %q is not one JSON object {\"verify\":…}: %v (exit %d)\n%s", args, r.Stdout, err, r.Code, r.Stderr)
	}
	return r, out.Verify
}

// saramaConfig is a Sarama configuration for the broker of faultline.
func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	return cfg
}

// committedRecords reads the n records of the first partition of topic,
// the output's only one, as a read_committed consumer.
func committedRecords(t *testing.T, addr, topic string, n int) []*sarama.ConsumerMessage {
	t.Helper()
	cfg := saramaConfig()
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	c, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var out []*sarama.ConsumerMessage
	timeout := time.After(time.Minute)
	for len(out) < n {
		select {
		case m := <-pc.Messages():
			out = append(out, m)
		case <-timeout:
			t.Fatalf("read %d records of %s in a minute, want %d", len(out), topic, n)
		}
	}
	return out
}

// writePlain creates topic with one partition and writes recs into it
// without a transaction, as an at-least-once sink does.
func writePlain(t *testing.T, addr, topic string, recs []*sarama.ConsumerMessage) {
	t.Helper()
	admin, err := sarama.NewClusterAdmin([]string{addr}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	p, err := sarama.NewSyncProducer([]string{addr}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, len(recs))
	for i, m := range recs {
		msgs[i] = &sarama.ProducerMessage{Topic: topic, Key: sarama.ByteEncoder(m.Key), Value: sarama.ByteEncoder(m.Value)}
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
}

// writeTxn writes rec into topic inside a Kafka transaction, committed or
// aborted, as an exactly-once sink does.
func writeTxn(t *testing.T, addr, topic string, rec *sarama.ConsumerMessage, commit bool) {
	t.Helper()
	cfg := saramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = "verify-test-" + topic
	cfg.Net.MaxOpenRequests = 1
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.ByteEncoder(rec.Key), Value: sarama.ByteEncoder(rec.Value)}); err != nil {
		t.Fatal(err)
	}
	end := p.CommitTxn
	if !commit {
		end = p.AbortTxn
	}
	if err := end(); err != nil {
		t.Fatal(err)
	}
}
