//go:build kafka

package runs

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/internal/e2e"
	"github.com/faultline-dev/faultline/internal/kafkalane"
)

// An exactly-once run through three panics, in three different operators,
// and a crash of the Kafka broker itself (SIGKILL, then started again on
// the same log dir) ends with every paid order in the committed output
// exactly once.
func TestRealKafkaExactlyOnceSurvivesPanicsAndABrokerKill(t *testing.T) {
	t.Parallel()
	b := kafkalane.Start(t, kafkalane.Options{})
	args := laneArgs(t, b.Addr(), "--records", "120000", "--rate", "3000", "--checkpoint-interval", "500ms",
		"--restart-attempts", "1000", "--restart-delay", "200ms",
		"--inject", "after=6s,task=join/1,fault=panic",
		"--inject", "after=14s,task=revenue/0,fault=panic",
		"--inject", "after=30s,task=sink/0,fault=panic")
	start := time.Now()
	cmd, stderr, lines := e2e.StartRun(t, args...)
	var mu sync.Mutex
	seen := map[string]int{}
	failures := map[string]int{} // what the tasks failed with, and how often
	reported := make(chan map[string]any, 1)
	go func() {
		var report map[string]any
		for m := range lines {
			if r, ok := m["report"].(map[string]any); ok {
				report = r
			}
			if e, ok := m["event"].(string); ok {
				mu.Lock()
				seen[e]++
				if e == "task_failed" || e == "checkpoint_failed" {
					why := fmt.Sprint(m["fault"], m["error"], m["reason"])
					failures[e+": "+why[:min(len(why), 200)]]++
				}
				mu.Unlock()
			}
		}
		reported <- report
	}()
	// The broker dies between the second panic and the third, with
	// checkpoints completed before it.
	time.Sleep(20*time.Second - time.Since(start))
	mu.Lock()
	before := seen["checkpoint_completed"]
	mu.Unlock()
	b.Kill(t)
	killed := time.Now()
	b.Restart(t)
	t.Logf("the broker was down %s, %s into the run, after %d completed checkpoints", time.Since(killed).Round(100*time.Millisecond), killed.Sub(start).Round(time.Second), before)
	var report map[string]any
	select {
	case report = <-reported:
	case <-time.After(4 * time.Minute):
		cmd.Process.Signal(syscall.SIGQUIT)
		<-reported
		cmd.Wait()
		t.Fatalf("still running after 4 min; stderr:\n%s", stderr)
	}
	code := exitCode(cmd.Wait())
	mu.Lock()
	t.Logf("faultline ran %s, exit %d: %d faults injected, %d restarts scheduled, %d checkpoints completed, %d failed; stderr:\n%s",
		time.Since(start).Round(100*time.Millisecond), code, seen["fault_injected"], seen["restart_scheduled"], seen["checkpoint_completed"], seen["checkpoint_failed"], lastLines(stderr.String(), 20))
	for why, n := range failures {
		t.Logf("%d× %s", n, why)
	}
	mu.Unlock()
	if code != 0 || report == nil {
		t.Fatalf("exit %d, report %v", code, report)
	}
	if n := len(report["failures"].([]any)); n < 3 {
		t.Errorf("the report lists %d failures, want the 3 panics at least: %v", n, report["failures"])
	}
	countRun(t, &b.Tools, defaultTopics).exactlyOnce(t, "three panics and a broker kill")
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Ten SIGKILLs of faultline at random moments (while it starts and
// recovers, after a checkpoint is triggered, right after one completes),
// each run resumed with --resume on the same state dir, and a last run to
// the end of the input: the committed output holds every paid order
// exactly once. The seed is printed; FAULTLINE_KAFKA_SEED=N replays it.
func TestRealKafkaKillSoak(t *testing.T) {
	t.Parallel()
	b := kafkalane.Start(t, kafkalane.Options{})
	seed := time.Now().UnixNano() % 1_000_000_007
	if s := os.Getenv("FAULTLINE_KAFKA_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("$FAULTLINE_KAFKA_SEED: %v", err)
		}
	}
	t.Logf("kill soak seed %d (replay: FAULTLINE_KAFKA_SEED=%d make test-kafka)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	jitter := func(d time.Duration) time.Duration { return time.Duration(rng.Int63n(int64(d) + 1)) }
	common := []string{"run", "--headless", "--brokers", b.Addr(), "--generate", "--records", "200000",
		"--checkpoint-interval", "200ms", "--restart-delay", "50ms", "--state-dir", t.TempDir(), "--resume"}
	const kills = 10
	killed := 0
	for i := range kills {
		args := append(append([]string{}, common...), "--rate", "5000")
		cmd, stderr, lines := e2e.StartRun(t, args...)
		start := time.Now()
		var moment string
		var timer <-chan time.Time
		arm := func(d time.Duration, what string) {
			if timer == nil {
				timer, moment = time.After(d), what
			}
		}
		kind, nth := rng.Intn(3), 1+rng.Intn(4)
		if kind == 0 {
			arm(300*time.Millisecond+jitter(3*time.Second), "")
		}
		seen := map[string]int{}
		ended := false
	watch:
		for {
			select {
			case m, ok := <-lines:
				if !ok || m["report"] != nil {
					ended = true
					break watch
				}
				e, _ := m["event"].(string)
				seen[e]++
				switch {
				case kind == 1 && e == "checkpoint_triggered" && seen[e] == nth:
					arm(jitter(150*time.Millisecond), fmt.Sprintf("just after checkpoint %d was triggered", nth))
				case kind == 2 && e == "checkpoint_completed" && seen[e] == nth:
					arm(jitter(50*time.Millisecond), fmt.Sprintf("just after checkpoint %d completed", nth))
				}
			case <-timer:
				break watch
			}
		}
		if moment == "" {
			moment = "while it ran"
		}
		at := time.Since(start).Round(time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		go func() {
			for range lines {
			}
		}()
		code := exitCode(cmd.Wait())
		switch {
		case code == -int(syscall.SIGKILL) && !ended:
			killed++
			t.Logf("run %d: killed %s after %s (%d checkpoints completed, %d restored)", i+1, moment, at, seen["checkpoint_completed"], seen["restored"])
		case code == 0 || code == -int(syscall.SIGKILL):
			t.Logf("run %d: ended (exit %d) before its kill %s", i+1, code, moment)
		default:
			t.Fatalf("run %d: exit %d; stderr:\n%s", i+1, code, stderr)
		}
	}
	code, report, stderr := runToEnd(t, 5*time.Minute, common...)
	if code != 0 || report == nil {
		t.Fatalf("the last run: exit %d, report %v; stderr:\n%s", code, report, stderr)
	}
	t.Logf("seed %d: %d of %d runs killed; faultline's own verdict: %v", seed, killed, kills, report["verify"])
	countRun(t, &b.Tools, defaultTopics).exactlyOnce(t, fmt.Sprintf("after %d kills", killed))
	if killed < kills*3/4 {
		t.Fatalf("only %d of %d runs died at their moment", killed, kills)
	}
}

// Once a checkpoint has completed, the sources have committed their
// offsets to the job's consumer group (faultline-<job>): Kafka's
// kafka-consumer-groups shows a committed offset and the lag for every
// partition of both input topics, moving on with the checkpoints.
func TestRealKafkaConsumerGroupLag(t *testing.T) {
	t.Parallel()
	b := kafkalane.Start(t, kafkalane.Options{})
	cmd, stderr, lines := e2e.StartRun(t, laneArgs(t, b.Addr(), "--rate", "2000", "--checkpoint-interval", "500ms")...)
	e2e.WaitEvents(t, lines, "checkpoint_completed", 3)
	first := groupOffsets(t, &b.Tools, "faultline-orders", "after 3 checkpoints", defaultTopics)
	e2e.WaitEvents(t, lines, "checkpoint_completed", 3)
	second := groupOffsets(t, &b.Tools, "faultline-orders", "3 checkpoints later", defaultTopics)
	go func() {
		for range lines {
		}
	}()
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	stoppedByCtrlC(t, cmd, stderr.String, sent)
	for tp, off := range first {
		if second[tp].Committed <= off.Committed {
			t.Errorf("%s: committed %d, and %d three checkpoints later", tp, off.Committed, second[tp].Committed)
		}
	}
}

// A bounded run that has finished leaves its group (--group) at the end
// of every input partition, lag 0, as Flink's KafkaSource does with the
// final checkpoint of its finished tasks.
func TestRealKafkaConsumerGroupAfterABoundedRun(t *testing.T) {
	t.Parallel()
	b := kafkalane.Start(t, kafkalane.Options{})
	tp := laneTopics{"orders-bounded", "payments-bounded", "revenue-bounded"}
	args := laneArgs(t, b.Addr(), append([]string{"--records", "20000", "--checkpoint-interval", "300ms", "--group", "lane-bounded"}, tp.args()...)...)
	if code, report, stderr := runToEnd(t, 3*time.Minute, args...); code != 0 || report == nil {
		t.Fatalf("exit %d, report %v; stderr:\n%s", code, report, stderr)
	}
	for p, off := range groupOffsets(t, &b.Tools, "lane-bounded", "after the bounded run", tp) {
		if off.Lag != 0 {
			t.Errorf("%s: lag %d after the run read everything", p, off.Lag)
		}
	}
	if t.Failed() {
		dir := args[slices.Index(args, "--state-dir")+1]
		log, _ := os.ReadFile(filepath.Join(dir, "faultline.log"))
		t.Logf("faultline.log:\n%s", log)
	}
}

// groupOffsets describes group with kafka-consumer-groups and fails t
// unless it has a committed offset for every partition of the input
// topics, with the lag the log end less the committed offset.
func groupOffsets(t *testing.T, b *kafkalane.Tools, group, when string, tp laneTopics) map[string]groupView {
	t.Helper()
	got := map[string]groupView{}
	for _, o := range b.Groups(t, group) {
		t.Logf("%s: group %s %s/%d committed %d, log end %d, lag %d", when, group, o.Topic, o.Partition, o.Committed, o.End, o.Lag)
		if o.Committed >= 0 {
			got[fmt.Sprintf("%s/%d", o.Topic, o.Partition)] = groupView{o.Committed, o.Lag}
		}
		if o.Committed >= 0 && o.End >= 0 && o.Lag != o.End-o.Committed {
			t.Errorf("%s: %s/%d lag %d, but log end %d - committed %d", when, o.Topic, o.Partition, o.Lag, o.End, o.Committed)
		}
	}
	for _, topic := range []string{tp.orders, tp.payments} {
		for p := range 4 {
			if _, ok := got[fmt.Sprintf("%s/%d", topic, p)]; !ok {
				t.Errorf("%s: group %s has no committed offset for %s/%d", when, group, topic, p)
			}
		}
	}
	return got
}

// groupView is a committed offset and its lag.
type groupView struct{ Committed, Lag int64 }

// The sink's weaker guarantees on real Kafka: at-least-once through a
// panic loses nothing (duplicates are its price); none without faults
// loses nothing either (a failure could lose what it had in flight).
func TestRealKafkaAtLeastOnceAndNone(t *testing.T) {
	t.Parallel()
	b := kafkalane.Start(t, kafkalane.Options{})
	for _, tc := range []struct {
		guarantee string
		extra     []string
	}{
		{"at-least-once", []string{"--inject", "after-records=6000,task=join/1,fault=panic"}},
		{"none", nil},
	} {
		t.Run(tc.guarantee, func(t *testing.T) {
			tp := laneTopics{"orders-" + tc.guarantee, "payments-" + tc.guarantee, "revenue-" + tc.guarantee}
			args := laneArgs(t, b.Addr(), append(append([]string{"--records", "40000", "--rate", "8000",
				"--checkpoint-interval", "300ms", "--restart-delay", "100ms", "--sink-guarantee", tc.guarantee,
				"--group", "lane-" + tc.guarantee}, tp.args()...), tc.extra...)...)
			code, report, stderr := runToEnd(t, 3*time.Minute, args...)
			if code != 0 || report == nil {
				t.Fatalf("exit %d, report %v; stderr:\n%s", code, report, stderr)
			}
			t.Logf("faultline's own verdict: restarts %v, %v", report["restarts"], report["verify"])
			c := countRun(t, &b.Tools, tp)
			c.nothingLost(t, tc.guarantee)
			if tc.extra != nil && e2e.Num(report, "restarts") < 1 {
				t.Errorf("the panic caused no restart: %v", report)
			}
		})
	}
}

// Bounded runs through the SASL_PLAINTEXT listener (SCRAM-SHA-512, and
// SCRAM-SHA-256 with the password from $FAULTLINE_SASL_PASSWORD) and the
// TLS listener (its CA given with --tls-ca) end exactly once.
func TestRealKafkaSCRAMAndTLS(t *testing.T) {
	t.Parallel()
	b := kafkalane.Start(t, kafkalane.Options{SCRAM: true, TLS: true})
	for _, tc := range []struct {
		name, brokers string
		flags, env    []string
	}{
		{"scram-sha-512", b.SCRAMAddr(), []string{"--sasl-mechanism", "scram-sha-512", "--sasl-user", kafkalane.SCRAMUser, "--sasl-password", kafkalane.SCRAMPassword}, nil},
		{"scram-sha-256", b.SCRAMAddr(), []string{"--sasl-mechanism", "scram-sha-256", "--sasl-user", kafkalane.SCRAMUser}, []string{"FAULTLINE_SASL_PASSWORD=" + kafkalane.SCRAMPassword}},
		{"tls", b.TLSAddr(), []string{"--tls", "--tls-ca", b.CAFile()}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := laneTopics{"orders-" + tc.name, "payments-" + tc.name, "revenue-" + tc.name}
			args := laneArgs(t, tc.brokers, append(append([]string{"--records", "20000", "--checkpoint-interval", "300ms",
				"--group", "lane-" + tc.name, "--txn-prefix", "lane-" + tc.name}, tp.args()...), tc.flags...)...)
			code, report, stderr := runToEndWith(t, 3*time.Minute, tc.env, args...)
			if code != 0 || report == nil {
				t.Fatalf("exit %d, report %v; stderr:\n%s", code, report, stderr)
			}
			countRun(t, &b.Tools, tp).exactlyOnce(t, tc.name)
		})
	}
}

// A keyed record of faultline's sink lands in the partition Kafka's own
// Java producer puts the same key in (murmur2 of the key, as every client
// that follows Kafka's default partitioner does), so that a consumer of
// the sink's topic finds a customer where any other producer would have
// written it. The sink's topic is created with several partitions; each
// key of its output is then produced with the console producer to a
// second topic of the same partition count, and the partitions compared.
func TestRealKafkaKeyedRecordsLandWhereJavaPutsThem(t *testing.T) {
	t.Parallel()
	b := kafkalane.Start(t, kafkalane.Options{})
	const partitions = 6
	tp := laneTopics{"orders", "payments", "revenue-keyed"}
	b.CreateTopic(t, tp.sink, partitions)
	b.CreateTopic(t, "java-keyed", partitions)
	args := laneArgs(t, b.Addr(), append([]string{"--records", "10000", "--checkpoint-interval", "300ms"}, tp.args()...)...)
	if code, report, stderr := runToEnd(t, 3*time.Minute, args...); code != 0 || report == nil {
		t.Fatalf("exit %d, report %v; stderr:\n%s", code, report, stderr)
	}
	c := countRun(t, &b.Tools, tp)
	c.exactlyOnce(t, "keyed sink")
	sink := map[string]int32{}
	var keys []kafkalane.Record
	for _, r := range c.output {
		if p, ok := sink[r.Key]; ok && p != r.Partition {
			t.Fatalf("key %q is in partitions %d and %d of %s", r.Key, p, r.Partition, tp.sink)
		}
		if _, ok := sink[r.Key]; !ok {
			keys = append(keys, kafkalane.Record{Key: r.Key, Value: "java"})
		}
		sink[r.Key] = r.Partition
	}
	if len(keys) < partitions {
		t.Fatalf("only %d keys in the output", len(keys))
	}
	b.ProduceRecords(t, "java-keyed", keys)
	java := map[string]int32{}
	for _, r := range b.ReadCommitted(t, "java-keyed") {
		java[r.Key] = r.Partition
	}
	var wrong []string
	for k, p := range sink {
		if jp, ok := java[k]; !ok || jp != p {
			wrong = append(wrong, fmt.Sprintf("%s: faultline %d, Java %d", k, p, jp))
		}
	}
	sort.Strings(wrong)
	if len(wrong) > 0 {
		t.Fatalf("%d of %d keys are not in the partition Kafka's Java producer picks for them, e.g. %v", len(wrong), len(sink), wrong[:min(8, len(wrong))])
	}
	t.Logf("all %d keys in the partition the Java producer picks", len(sink))
}

// An unbounded exactly-once run ($FAULTLINE_KAFKA_TXN_DURATION, 45s by
// default, some 150 checkpoints; run it for 10m by hand) leaves the
// broker's transaction coordinator with few transactional ids of the job's
// prefix: at most 4 per sink subtask, since a sink that reuses its ids
// needs no more (Flink's KafkaSink keeps a small pool), whereas a new id
// per checkpoint leaves one entry per checkpoint on the broker until
// transactional.id.expiration.ms (7 days) has passed.
func TestRealKafkaTransactionalIDsStayBounded(t *testing.T) {
	t.Parallel()
	d := laneDuration(t, "FAULTLINE_KAFKA_TXN_DURATION", 45*time.Second)
	b := kafkalane.Start(t, kafkalane.Options{})
	const sinkParallelism = 2
	cmd, stderr, lines := e2e.StartRun(t, laneArgs(t, b.Addr(), "--rate", "2000", "--checkpoint-interval", "250ms",
		"--parallelism", fmt.Sprintf("sink=%d", sinkParallelism))...)
	completed := make(chan int, 1)
	go func() {
		n := 0
		for m := range lines {
			if m["event"] == "checkpoint_completed" {
				n++
			}
		}
		completed <- n
	}()
	time.Sleep(d)
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	n := <-completed
	stoppedByCtrlC(t, cmd, stderr.String, sent)
	var ours []string
	for _, id := range b.TransactionalIDs(t) {
		if strings.HasPrefix(id, "faultline-orders/") {
			ours = append(ours, id)
		}
	}
	sort.Strings(ours)
	t.Logf("after %s and %d completed checkpoints the broker knows %d transactional ids of the job", d, n, len(ours))
	if limit := sinkParallelism * 4; len(ours) > limit {
		t.Fatalf("%d transactional ids of the job after %s (at most %d wanted): %v … %v", len(ours), d, limit, ours[:min(4, len(ours))], ours[max(0, len(ours)-2):])
	}
}
