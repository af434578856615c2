//go:build kafka

package runs

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
	"github.com/faultline-dev/faultline/internal/kafkalane"
)

// The Kafka lane (`make test-kafka`): the default job against a real
// Apache Kafka broker (internal/kafkalane), with the input written by
// faultline's --generate and everything counted with Kafka's own console
// consumer at read_committed, never with faultline's oracle: the expected
// order ids are the paid orders of the input topics as the default job
// joins them, the actual ones are what the sink's topic holds.

// joinTTL is the default job's state TTL (fixtures/jobs/orders.yaml): a
// paid order whose order and payment are further apart is not joined.
const joinTTL = time.Minute

// laneTopics are the topics of one run of the default job.
type laneTopics struct{ orders, payments, sink string }

var defaultTopics = laneTopics{"orders", "payments", "revenue"}

// args are the --topic flags that give the job these topics.
func (tp laneTopics) args() []string {
	return []string{"--topic", "orders-source=" + tp.orders, "--topic", "payments-source=" + tp.payments, "--topic", "sink=" + tp.sink}
}

// laneRecord is what the lane reads of a value: an order has order_id, a
// payment also payment_id, an output record customer_total_cents.
type laneRecord struct {
	OrderID       string  `json:"order_id"`
	PaymentID     *string `json:"payment_id"`
	CustomerTotal *int64  `json:"customer_total_cents"`
}

// laneCount is the lane's verdict on one run's committed output.
type laneCount struct {
	orders, payments, notJoined int
	expected                    map[string]bool
	got                         map[string]int // order id → committed copies
	output                      []kafkalane.Record
}

func (c laneCount) lost() []string {
	var ids []string
	for id := range c.expected {
		if c.got[id] == 0 {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func (c laneCount) duplicates() []string {
	var ids []string
	for id, n := range c.got {
		if n > 1 {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func (c laneCount) unexpected() []string {
	var ids []string
	for id := range c.got {
		if !c.expected[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func (c laneCount) String() string {
	copies := 0
	for _, n := range c.got {
		copies += n
	}
	return fmt.Sprintf("input %d orders, %d payments: %d paid orders expected (%d too far apart to join); output %d records, %d order ids; lost %d, duplicated %d, unexpected %d",
		c.orders, c.payments, len(c.expected), c.notJoined, copies, len(c.got), len(c.lost()), len(c.duplicates()), len(c.unexpected()))
}

// countRun reads the input topics and the sink's topic of a run with the
// console consumer at read_committed and joins them as the default job
// does: every order with a payment for it, their timestamps at most the
// join's TTL apart, is expected once in the output.
func countRun(t *testing.T, b *kafkalane.Tools, tp laneTopics) laneCount {
	t.Helper()
	c := laneCount{expected: map[string]bool{}, got: map[string]int{}}
	orders, payments := map[string]int64{}, map[string]int64{}
	for _, r := range b.ReadCommittedTopics(t, tp.orders, tp.payments) {
		var v laneRecord
		if json.Unmarshal([]byte(r.Value), &v) != nil || v.OrderID == "" {
			continue // not an order nor a payment: nothing is expected of it
		}
		if v.PaymentID != nil {
			payments[v.OrderID] = r.Timestamp
			c.payments++
		} else {
			orders[v.OrderID] = r.Timestamp
			c.orders++
		}
	}
	for id, ot := range orders {
		pt, paid := payments[id]
		switch {
		case !paid:
		case max(ot-pt, pt-ot) > joinTTL.Milliseconds():
			c.notJoined++
		default:
			c.expected[id] = true
		}
	}
	c.output = b.ReadCommitted(t, tp.sink)
	for _, r := range c.output {
		var v laneRecord
		if err := json.Unmarshal([]byte(r.Value), &v); err != nil || v.OrderID == "" || v.CustomerTotal == nil {
			t.Fatalf("%s holds a record that is no output of the job: %q=%q", tp.sink, r.Key, r.Value)
		}
		c.got[v.OrderID]++
	}
	return c
}

// exactlyOnce fails t unless every expected order id is in the output
// exactly once and nothing else is.
func (c laneCount) exactlyOnce(t *testing.T, what string) {
	t.Helper()
	t.Logf("%s: %s", what, c)
	if len(c.expected) == 0 {
		t.Fatalf("%s: no paid order in the input", what)
	}
	if l, d, u := c.lost(), c.duplicates(), c.unexpected(); len(l)+len(d)+len(u) > 0 {
		t.Fatalf("%s: not exactly once: lost %s; duplicated %s; unexpected %s", what, some(l), some(d), some(u))
	}
}

// nothingLost fails t when an expected order id is not in the output or
// the output holds one that is not expected; duplicates are allowed.
func (c laneCount) nothingLost(t *testing.T, what string) {
	t.Helper()
	t.Logf("%s: %s", what, c)
	if len(c.expected) == 0 {
		t.Fatalf("%s: no paid order in the input", what)
	}
	if l, u := c.lost(), c.unexpected(); len(l)+len(u) > 0 {
		t.Fatalf("%s: lost %s; unexpected %s", what, some(l), some(u))
	}
}

// some is the first few of ids and how many there are.
func some(ids []string) string {
	if len(ids) <= 8 {
		return fmt.Sprintf("%d %v", len(ids), ids)
	}
	return fmt.Sprintf("%d %v …", len(ids), ids[:8])
}

// laneArgs are the flags of a headless run of the default job on broker
// addr, writing the generator's input there, with its own state dir.
func laneArgs(t *testing.T, brokers string, extra ...string) []string {
	return append([]string{"run", "--headless", "--brokers", brokers, "--generate", "--state-dir", t.TempDir()}, extra...)
}

// runToEnd runs faultline to its end and returns its exit code, its
// report and its stderr; it gives up after limit.
func runToEnd(t *testing.T, limit time.Duration, args ...string) (int, map[string]any, string) {
	t.Helper()
	return runToEndWith(t, limit, nil, args...)
}

// runToEndWith is runToEnd with env (KEY=value) added to faultline's
// environment.
func runToEndWith(t *testing.T, limit time.Duration, env []string, args ...string) (int, map[string]any, string) {
	t.Helper()
	start := time.Now()
	cmd, stderr, lines := e2e.StartRunWith(t, env, args...)
	reported := make(chan map[string]any, 1)
	go func() { reported <- e2e.ReportOf(lines) }()
	var report map[string]any
	select {
	case report = <-reported:
	case <-time.After(limit):
		cmd.Process.Signal(syscall.SIGQUIT)
		<-reported
		cmd.Wait()
		t.Fatalf("faultline %s still ran after %s; stderr:\n%s", strings.Join(args, " "), limit, stderr)
	}
	code := exitCode(cmd.Wait())
	t.Logf("faultline ran %s, exit %d", time.Since(start).Round(100*time.Millisecond), code)
	return code, report, stderr.String()
}

// stoppedByCtrlC waits for cmd, sent a SIGINT, and fails t unless it
// stopped as a stopped run must: exit 0 with its output checked, or, where
// the lane's JVMs starve it of the CPU, exit 1 saying the stop's budget ran
// out before the check (which the next run does). Either way it ends
// within the stop's 5 s (given a second more here, for a starved machine
// to reap the process).
func stoppedByCtrlC(t *testing.T, cmd *exec.Cmd, stderr func() string, sent time.Time) {
	t.Helper()
	code := exitCode(cmd.Wait())
	took := time.Since(sent)
	switch {
	case took > 6*time.Second:
		t.Fatalf("stopped with Ctrl-C: exit %d after %s, over the stop's 5 s; stderr:\n%s", code, took, stderr())
	case code == 0:
	case code == 1 && strings.Contains(stderr(), "a stopped run has") && strings.Contains(stderr(), "it was not enough"):
		t.Logf("stopped with Ctrl-C in %s before the output was checked (the lane's CPU is busy): %s", took.Round(time.Millisecond), stderr())
	default:
		t.Fatalf("stopped with Ctrl-C: exit %d; stderr:\n%s", code, stderr())
	}
}

// exitCode is the exit code of a finished command, minus the signal's
// number when a signal ended it.
func exitCode(err error) int {
	ee, ok := err.(*exec.ExitError)
	if !ok {
		return 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -int(ws.Signal())
	}
	return ee.ExitCode()
}

// laneDuration is the length of a lane test's run from environment
// variable env (a Go duration), def when it is not set.
func laneDuration(t *testing.T, env string, def time.Duration) time.Duration {
	t.Helper()
	s := os.Getenv(env)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("$%s: %v", env, err)
	}
	return d
}
