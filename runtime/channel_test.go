package runtime

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/faultline-dev/faultline/checkpoint"
)

func TestChannelViewPlacesBarriers(t *testing.T) {
	ch := newChannel(4, newGate(), nil)
	rec := Element{Kind: KindRecord}
	ch.send([]Element{rec, rec, barrierElement(12, 0, false, false), rec})
	ch.send([]Element{rec, barrierElement(13, 0, false, false), rec})
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

// A channel is full at its capacity in batches; the receiver taking a
// batch out of a full channel wakes the sender, and a send never waits,
// so that what one batch of input produces always goes out.
func TestChannelFullWakesTheSender(t *testing.T) {
	receiver, sender := newGate(), newGate()
	ch := newChannel(2, receiver, sender)
	rec := Element{Kind: KindRecord}
	ch.send([]Element{rec})
	if ch.full() {
		t.Fatal("full with one batch of two")
	}
	ch.send([]Element{rec})
	ch.send([]Element{rec, rec}) // over capacity: never waits
	if !ch.full() {
		t.Fatal("not full with three batches of two")
	}
	for range 2 {
		if _, ok := ch.poll(); !ok {
			t.Fatal("nothing to take")
		}
	}
	select {
	case <-sender.c:
	default:
		t.Fatal("the sender was not woken when the channel had room again")
	}
	if ch.full() || ch.Len() != 4 {
		t.Fatalf("full %v, len %d after taking two of three batches (nothing handled yet)", ch.full(), ch.Len())
	}
}

// An unaligned barrier is taken before everything queued; the records it
// overtook stay queued, in order, and the receiver can read them as the
// checkpoint's in-flight data without taking them out.
func TestUnalignedBarrierOvertakesTheQueue(t *testing.T) {
	ch := newChannel(4, newGate(), nil)
	r := func(k string) Element { return Element{Kind: KindRecord, Record: Record{Key: k}} }
	ch.send([]Element{r("a"), r("b")})
	ch.send([]Element{r("c"), barrierElement(6, 0, false, false), r("d")})
	ch.sendPriority(barrierElement(7, 0, false, false))
	ch.send([]Element{r("e")}) // after the barrier
	e, seq, ok := ch.pollPriority()
	if !ok || e.ID() != 7 || seq != 5 {
		t.Fatalf("priority barrier %d at %d (ok %v), want 7 at 5", e.ID(), seq, ok)
	}
	v := ch.View()
	if v.Overtaken != 0 || v.Queued != 6 {
		t.Fatalf("view %+v before the receiver stored anything", v)
	}
	got := ch.inFlight(seq, nil)
	var keys []string
	for _, rec := range got {
		keys = append(keys, rec.Key)
	}
	if strings.Join(keys, "") != "abcd" {
		t.Fatalf("in flight %v, want the records a b c d before the barrier", keys)
	}
	if v := ch.View(); v.Overtaken != 5 {
		t.Fatalf("overtaken %d, want 5 (four records and barrier 6)", v.Overtaken)
	}
	b, ok := ch.poll()
	if !ok || b[0].Record.Key != "a" {
		t.Fatalf("the queue lost its order: %+v", b)
	}
	ch.markConsumed(2)
	if v := ch.View(); v.Overtaken != 3 {
		t.Fatalf("overtaken %d after handling two, want 3", v.Overtaken)
	}
	if _, _, ok := ch.pollPriority(); ok {
		t.Fatal("the priority barrier came out twice")
	}
}

// While the join aligns, the UI can see which of its input channels are
// blocked, what they hold back, and which checkpoint it aligns.
func TestInputsShowAlignment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, _, env := genEnv(1, 0, 4000)
		j, err := New(Config{Types: testJob.Types, Job: testJob.Spec(), Env: env, Checkpoint: checkpoint.Config{Interval: 20 * time.Millisecond}})
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
			elapse(50 * time.Microsecond)
		}
		t.Fatal("never saw a join input blocked by alignment")
	})
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
