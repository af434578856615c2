package runtime

import (
	"context"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"faultline/checkpoint"
	"faultline/internal/clock"
	"faultline/runtime/spec"
)

func TestChannelViewPlacesBarriers(t *testing.T) {
	ch := newChannel(4, newGate(), nil, clock.Real{})
	ctx := context.Background()
	rec := Element{Kind: KindRecord}
	ch.send(ctx, []Element{rec, rec, barrierElement(12, 0, false, false), rec})
	ch.send(ctx, []Element{rec, barrierElement(13, 0, false, false), rec})
	v := ch.View()
	if v.Queued != 7 || len(v.Barriers) != 2 || v.Barriers[0] != (BarrierPos{ID: 12, Pos: 2}) || v.Barriers[1] != (BarrierPos{ID: 13, Pos: 5}) {
		t.Fatalf("view %+v", v)
	}
	ch.markConsumed(3) // two records and barrier 12 handled
	v = ch.View()
	if v.Queued != 4 || len(v.Barriers) != 1 || v.Barriers[0] != (BarrierPos{ID: 13, Pos: 2}) {
		t.Fatalf("view after consuming 3: %+v", v)
	}
}

// nowSignal is a fake clock that tells when it is read.
type nowSignal struct {
	*clock.Fake
	read chan struct{}
}

func (c nowSignal) Now() time.Time {
	c.read <- struct{}{}
	return c.Fake.Now()
}

// A sender's back-pressure is the time it waited on a full channel, on the
// job's clock.
func TestChannelCountsBlockedTimeOnItsClock(t *testing.T) {
	clk := nowSignal{Fake: clock.NewFake(time.Unix(1000, 0)), read: make(chan struct{})}
	var m TaskMetrics
	blocked := &m.BackPressuredNanos
	ch := newChannel(1, newGate(), nil, clk).senderMetrics(&m)
	ctx := context.Background()
	rec := Element{Kind: KindRecord}
	ch.send(ctx, []Element{rec}) // fills it, without waiting
	sent := make(chan bool)
	go func() { sent <- ch.send(ctx, []Element{rec}) }()
	<-clk.read // the sender found the channel full and started waiting
	clk.Advance(7 * time.Millisecond)
	// A wait that lasts shows before it ends.
	for m.blockedSince.Load() == 0 {
		runtime.Gosched()
	}
	if got := time.Duration(m.BackPressured(clk.Fake.Now())); got != 7*time.Millisecond {
		t.Fatalf("while waiting: back-pressured %v, want 7ms", got)
	}
	if _, ok := ch.poll(); !ok {
		t.Fatal("nothing to take from a full channel")
	}
	<-clk.read // the sender's batch went in
	if !<-sent {
		t.Fatal("send reported its context ended")
	}
	if got := time.Duration(blocked.Load()); got != 7*time.Millisecond {
		t.Fatalf("blocked %v, want the 7ms the clock moved", got)
	}
}

// While the join aligns, the UI can see which of its input channels are
// blocked, what they hold back, and which checkpoint it aligns.
func TestInputsShowAlignment(t *testing.T) {
	_, _, env := genEnv(1, 0, 4000)
	j, err := New(Config{Job: spec.Default(), Env: env, Checkpoint: checkpoint.Config{Interval: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range j.obs.Events() {
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		j.Run(ctx, RunOptions{})
	}()
	defer func() {
		cancel()
		<-done
		j.obs.Close()
	}()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, name := range []string{"join/0", "join/1"} {
			ins, al, ok := j.Inputs(name)
			if !ok {
				continue
			}
			if len(ins) != 4 {
				t.Fatalf("%s has %d inputs, want 4 (two parse-orders, two parse-payments)", name, len(ins))
			}
			for _, in := range ins {
				if in.Blocked && al.Checkpoint > 0 && !al.Since.IsZero() {
					if in.HeldBack != in.Queue.Queued {
						t.Fatalf("blocked channel holds back %d but queues %d", in.HeldBack, in.Queue.Queued)
					}
					return
				}
			}
		}
		time.Sleep(50 * time.Microsecond)
	}
	t.Fatal("never saw a join input blocked by alignment")
}

// An element is one cache line: the records that make up nearly all of
// them move between the cores in batches, and barriers keep what they
// carry behind a pointer.
func TestElementIsOneCacheLine(t *testing.T) {
	if n := unsafe.Sizeof(Element{}); n != 64 {
		t.Fatalf("an Element is %d bytes, want 64", n)
	}
	b := barrierElement(7, 1234, true, false)
	if b.ID() != 7 || b.TriggerNanos() != 1234 || !b.Savepoint || b.Kind != KindBarrier {
		t.Fatalf("barrier element %+v: id %d, trigger %d", b, b.ID(), b.TriggerNanos())
	}
	if c := cancelElement(9); c.ID() != 9 || c.Kind != KindCancel {
		t.Fatalf("cancel element %+v: id %d", c, c.ID())
	}
	if r := (Element{Kind: KindRecord, Record: Record{Value: &marker{id: 3}}}); r.ID() != 0 {
		t.Fatalf("a record reads as checkpoint %d", r.ID())
	}
}
