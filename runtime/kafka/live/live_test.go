package live

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
	"github.com/faultline-dev/faultline/runtime/verify"
)

// noLeaks checks, when the test ends, that no goroutine started since it
// was called is left (the broker's own, started before, are not counted; go-metrics'
// arbiter, which Sarama starts once per process, neither).
func noLeaks(t *testing.T) func() {
	opts := []goleak.Option{goleak.IgnoreCurrent(), goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick")}
	return func() { goleak.VerifyNone(t, opts...) }
}

// fakeCommitted stands in for the job: the newest checkpoint whose output
// is committed.
type fakeCommitted struct {
	mu       sync.Mutex
	id       int64
	bounds   checkpoint.Offsets
	inFlight []string
}

func (f *fakeCommitted) set(id int64, b checkpoint.Offsets) {
	cp := checkpoint.Offsets{}
	for t, ps := range b {
		cp[t] = map[int32]int64{}
		for p, o := range ps {
			cp[t][p] = o
		}
	}
	f.mu.Lock()
	f.id, f.bounds = id, cp
	f.mu.Unlock()
}

func (f *fakeCommitted) get() (int64, checkpoint.Offsets, []string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.id, f.bounds, f.inFlight, f.id > 0
}

// liveRun runs v against committed and watches every Status it can get
// while it runs: ok must hold for each. stop ends the run and reports what
// Run returned.
type liveRun struct {
	t      *testing.T
	v      *LiveVerifier
	cancel context.CancelFunc
	runErr chan error
	done   chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	bad     string
	samples int
}

func startLive(t *testing.T, v *LiveVerifier, committed Committed, ok func(LiveStatus) error) *liveRun {
	ctx, cancel := context.WithCancel(context.Background())
	r := &liveRun{t: t, v: v, cancel: cancel, runErr: make(chan error, 1), done: make(chan struct{})}
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		r.runErr <- v.Run(ctx, committed)
	}()
	go func() {
		defer r.wg.Done()
		for {
			s := v.Status()
			if err := ok(s); err != nil {
				r.mu.Lock()
				if r.bad == "" {
					r.bad = fmt.Sprintf("%v (status %+v)", err, s)
				}
				r.mu.Unlock()
			}
			r.mu.Lock()
			r.samples++
			r.mu.Unlock()
			select {
			case <-r.done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return r
}

func (r *liveRun) stop() {
	r.t.Helper()
	r.cancel()
	select {
	case err := <-r.runErr:
		if err != nil {
			r.t.Errorf("Run returned %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		r.t.Fatal("Run did not return after its context ended")
	}
	close(r.done)
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bad != "" {
		r.t.Errorf("a status seen while the verifier ran: %s", r.bad)
	}
	r.t.Logf("%d statuses sampled", r.samples)
}

// waitFor polls v until cond holds, or fails the test after a deadline.
func waitFor(t *testing.T, v *LiveVerifier, what string, cond func(LiveStatus) bool) LiveStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := v.Status()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: status %+v", what, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gate holds back whoever passes it while it is closed.
type gate struct {
	mu sync.Mutex
	ch chan struct{} // nil while open; closed to let the waiting pass
}

func (g *gate) close() {
	g.mu.Lock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
	g.mu.Unlock()
}

func (g *gate) open() {
	g.mu.Lock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
	g.mu.Unlock()
}

func (g *gate) pass() {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// waitInputRead waits until v has consumed its input up to b.
func waitInputRead(t *testing.T, v *LiveVerifier, b checkpoint.Offsets) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v.mu.Lock()
		done := len(v.st.in) > 0
		for _, lp := range v.st.in {
			done = done && lp.next >= b[lp.gen][lp.p]
		}
		v.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the verifier did not read its input")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitSure(t *testing.T, v *LiveVerifier, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for v.sureWait.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("no check needed the sure step (want %d): status %+v", n, v.Status())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The job's output is exact: checkpoint after checkpoint, Lost stays 0 and
// Committed follows the output, although each checkpoint is reported the
// moment its transaction commits and its input was written just before —
// the verifier has to wait for both. The third checkpoint's transaction
// lies behind the fourth's, still open, as a second sink subtask would put
// it: the verifier must wait for the open one to end rather than call the
// hidden records lost.
func TestLiveVerifierFollowsExactOutput(t *testing.T) {
	_, c := kafkatest.LiveBroker(t, 2)
	defer noLeaks(t)() // after the broker started: its goroutines stay until cleanup
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	o, err := sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()

	gen := orders.NewGenerator(7, 800, orders.GeneratorPartitions)
	topics := []string{orders.TopicOrders, orders.TopicPayments}
	var committed fakeCommitted
	v := NewLiveVerifier(LiveConfig{Client: c, Inputs: map[string]string{"orders": "orders", "payments": "payments"}, Output: "revenue", Expect: kafkatest.ExpectOrders("paid-orders", 0)})
	var holdIn, holdOut gate // held: that side's consumers wait
	v.beforeDeliver = func(input bool) {
		if input {
			holdIn.pass()
		} else {
			holdOut.pass()
		}
	}
	run := startLive(t, v, committed.get, func(s LiveStatus) error {
		if s.Lost != 0 || s.Duplicates != 0 {
			return fmt.Errorf("lost %d, duplicates %d", s.Lost, s.Duplicates)
		}
		return nil
	})
	defer run.stop()
	defer holdIn.open() // before stop, should the test fail while one is held
	defer holdOut.open()

	// Checkpoint 1 is reported while the verifier's output consumer is held
	// back (its input is all read), checkpoint 2 while its input consumers
	// are: either way it must wait, and judge only once they caught up. A
	// verifier that does not wait has a third of a second to show a loss.
	const steps = 4
	var prevB checkpoint.Offsets
	prevE := map[string]orders.Order{}
	for k := int64(1); k <= 2; k++ {
		b := kafkatest.Bounds(gen, topics, k, steps)
		exp := kafkatest.ExpectedBelow(t, gen, b, true)
		hold := &holdOut
		if k == 2 {
			hold = &holdIn
		}
		if k == 1 {
			kafkatest.WriteInputs(t, c, gen, prevB, b)
			waitInputRead(t, v, b)
			hold.close()
		} else {
			hold.close()
			kafkatest.WriteInputs(t, c, gen, prevB, b)
		}
		kafkatest.Commit(t, o, kafkatest.WriteTxn(t, o, fmt.Sprintf("sink-%d", k), kafkatest.NewSince(exp, prevE)))
		committed.set(k, b)
		time.Sleep(300 * time.Millisecond)
		if s := v.Status(); s.AsOf == k {
			t.Fatalf("checkpoint %d checked while a consumer was held back: %+v", k, s)
		}
		hold.open()
		s := waitFor(t, v, fmt.Sprintf("checkpoint %d", k), func(s LiveStatus) bool { return s.AsOf == k })
		if !s.Available || s.Lost != 0 || s.Duplicates != 0 || s.Committed != len(exp) || s.Err != "" {
			t.Fatalf("checkpoint %d: %+v, want %d committed, none lost", k, s, len(exp))
		}
		prevB, prevE = b, exp
	}

	// Checkpoint 4's transaction opens first; 3's, written after it,
	// commits and is reported.
	b3, b4 := kafkatest.Bounds(gen, topics, 3, steps), kafkatest.Bounds(gen, topics, 4, steps)
	e3, e4 := kafkatest.ExpectedBelow(t, gen, b3, true), kafkatest.ExpectedBelow(t, gen, b4, true)
	kafkatest.WriteInputs(t, c, gen, prevB, b4)
	c4 := kafkatest.WriteTxn(t, o, "sink-4", kafkatest.NewSince(e4, e3))
	kafkatest.Commit(t, o, kafkatest.WriteTxn(t, o, "sink-3", kafkatest.NewSince(e3, prevE)))
	committed.set(3, b3)
	waitSure(t, v, 1)
	time.Sleep(300 * time.Millisecond) // a verifier that does not wait judges now
	if s := v.Status(); s.AsOf != 2 || s.Lost != 0 || s.Committed != len(prevE) {
		t.Fatalf("while checkpoint 3's output is hidden: %+v, want as of 2, %d committed", s, len(prevE))
	}
	kafkatest.Commit(t, o, c4)
	s := waitFor(t, v, "checkpoint 3", func(s LiveStatus) bool { return s.AsOf == 3 })
	if s.Lost != 0 || s.Committed != len(e4) {
		t.Fatalf("checkpoint 3: %+v, want %d committed (3's and 4's), none lost", s, len(e4))
	}
	committed.set(4, b4)
	s = waitFor(t, v, "checkpoint 4", func(s LiveStatus) bool { return s.AsOf == 4 })
	if s.Lost != 0 || s.Duplicates != 0 || s.Committed != len(e4) || s.Err != "" {
		t.Fatalf("checkpoint 4: %+v, want %d committed, none lost", s, len(e4))
	}
	// Run as the report's oracle would, the output agrees.
	recs, err := kafka.ReadCommitted(context.Background(), c, "revenue", nil)
	if err != nil {
		t.Fatal(err)
	}
	ver, err := verify.Verify(context.Background(), kafka.Inputs{C: c}, kafkatest.ExpectOrders("paid-orders", 0), "exactly-once", b4, recs)
	if err != nil {
		t.Fatal(err)
	}
	if ver.Lost != s.Lost || ver.Duplicates != s.Duplicates || ver.Committed != s.Committed {
		t.Fatalf("oracle %+v, live %+v", ver, s)
	}
}

// A record committed twice is a duplicate at once; an expected record whose
// transaction aborted is lost once its checkpoint is checked; a record in
// an open transaction is not counted, and a checkpoint whose record is in
// it waits for it to end.
func TestLiveVerifierDuplicatesLossAndOpenTransactions(t *testing.T) {
	_, c := kafkatest.LiveBroker(t, 1)
	defer noLeaks(t)() // after the broker started: its goroutines stay until cleanup
	cl, err := c.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	o, err := sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()

	gen := orders.NewGenerator(11, 600, orders.GeneratorPartitions)
	topics := []string{orders.TopicOrders, orders.TopicPayments}
	var committed fakeCommitted
	v := NewLiveVerifier(LiveConfig{Client: c, Inputs: map[string]string{"orders": "orders", "payments": "payments"}, Output: "revenue", Expect: kafkatest.ExpectOrders("paid-orders", 0)})
	run := startLive(t, v, committed.get, func(s LiveStatus) error {
		switch {
		case s.AsOf < 2 && s.Lost != 0:
			return fmt.Errorf("lost %d before the aborted record's checkpoint", s.Lost)
		case s.Lost > 1:
			return fmt.Errorf("lost %d, only one record was", s.Lost)
		case s.Duplicates > 1:
			return fmt.Errorf("duplicates %d, only one was written", s.Duplicates)
		}
		return nil
	})
	defer run.stop()

	// Checkpoint 1: everything, and one record again in a second
	// committed transaction.
	b1 := kafkatest.Bounds(gen, topics, 1, 3)
	e1 := kafkatest.ExpectedBelow(t, gen, b1, true)
	out1 := kafkatest.NewSince(e1, nil)
	kafkatest.WriteInputs(t, c, gen, nil, b1)
	kafkatest.Commit(t, o, kafkatest.WriteTxn(t, o, "sink-1", out1))
	kafkatest.Commit(t, o, kafkatest.WriteTxn(t, o, "redo-1", out1[:1]))
	committed.set(1, b1)
	s := waitFor(t, v, "checkpoint 1", func(s LiveStatus) bool { return s.AsOf == 1 })
	if s.Duplicates != 1 || s.Lost != 0 || s.Committed != len(e1)+1 {
		t.Fatalf("checkpoint 1: %+v, want %d committed, 1 duplicate", s, len(e1)+1)
	}

	// Checkpoint 2: one record's transaction aborts.
	b2 := kafkatest.Bounds(gen, topics, 2, 3)
	e2 := kafkatest.ExpectedBelow(t, gen, b2, true)
	out2 := kafkatest.NewSince(e2, e1)
	kafkatest.WriteInputs(t, c, gen, b1, b2)
	kafkatest.Commit(t, o, kafkatest.WriteTxn(t, o, "sink-2", out2[1:]))
	kafkatest.WriteTxn(t, o, "abort-0", out2[:1])
	if err := o.AbortLingering("abort-", 0); err != nil {
		t.Fatal(err)
	}
	committed.set(2, b2)
	s = waitFor(t, v, "checkpoint 2", func(s LiveStatus) bool { return s.AsOf == 2 })
	committedNow := len(e1) + 1 + len(out2) - 1
	if s.Lost != 1 || s.Duplicates != 1 || s.Committed != committedNow {
		t.Fatalf("checkpoint 2: %+v, want %d committed, 1 lost, 1 duplicate", s, committedNow)
	}

	// Checkpoint 3: one record is in a transaction still open.
	b3 := kafkatest.Bounds(gen, topics, 3, 3)
	e3 := kafkatest.ExpectedBelow(t, gen, b3, true)
	out3 := kafkatest.NewSince(e3, e2)
	kafkatest.WriteInputs(t, c, gen, b2, b3)
	kafkatest.Commit(t, o, kafkatest.WriteTxn(t, o, "sink-3", out3[1:]))
	open := kafkatest.WriteTxn(t, o, "open-0", out3[:1])
	committed.set(3, b3)
	waitSure(t, v, 2)                  // checkpoint 2 needed it too, for its lost record
	time.Sleep(300 * time.Millisecond) // a verifier that does not wait judges now
	committedNow += len(out3) - 1
	if s := v.Status(); s.AsOf != 2 || s.Lost != 1 || s.Committed != committedNow {
		t.Fatalf("while a record of checkpoint 3 is open: %+v, want as of 2, %d committed, 1 lost", s, committedNow)
	}
	kafkatest.Commit(t, o, open)
	s = waitFor(t, v, "checkpoint 3", func(s LiveStatus) bool { return s.AsOf == 3 })
	if s.Lost != 1 || s.Duplicates != 1 || s.Committed != committedNow+1 {
		t.Fatalf("checkpoint 3: %+v, want %d committed, 1 lost, 1 duplicate", s, committedNow+1)
	}
}
