package runtime

import (
	"testing"
	"time"
)

// From a frozen world, each Step runs to the next thing a person can see,
// and a few of them bring a checkpoint's barrier from the sources to the
// join; between steps the world stays frozen.
func TestStepGoesToTheNextVisibleMoment(t *testing.T) {
	r := (&run{records: 15000, rate: 3000, interval: 300 * time.Millisecond, during: func(j *Job) {
		waitFor(t, "a checkpoint", func() bool { return j.coord.Stats().Completed >= 1 })
		j.SetTempo(TempoFrozen)
		elapse(200 * time.Millisecond) // batches already under way end
		frozen := recordsIn(j)
		at := j.steps.newestAt("join")
		elapse(200 * time.Millisecond)
		if got := recordsIn(j); got != frozen {
			t.Errorf("frozen, yet the sources read %d more records", got-frozen)
		}
		presses := 0
		for presses < 5 && j.steps.newestAt("join") <= at {
			presses++
			j.Step()
			began := time.Now()
			waitFor(t, "the step to end", func() bool { return !j.Stepping() })
			if time.Since(began) >= stepLimit {
				t.Errorf("step %d saw nothing visible: it ran into its limit", presses)
			}
		}
		if j.steps.newestAt("join") <= at {
			t.Errorf("5 steps did not bring a barrier from the sources to the join")
		}
		elapse(200 * time.Millisecond) // a batch under way when the step ended ends
		still := recordsIn(j)
		elapse(200 * time.Millisecond)
		if got := recordsIn(j); got != still {
			t.Errorf("after the steps the world moved on: %d more records", got-still)
		}
		t.Logf("%d steps took a barrier to the join", presses)
		j.SetTempo(TempoNormal)
	}}).do(t)
	if r.res.Status != JobFinished || !r.verify.OK {
		t.Fatalf("status %s verify %+v", r.res.Status, r.verify)
	}
}

// In slow motion the queues stay as short as at full speed: an operator
// that fell behind is not held, and the sources set the pace.
func TestSlowMotionKeepsQueuesShort(t *testing.T) {
	r := (&run{records: 12000, rate: 2000, interval: 500 * time.Millisecond, during: func(j *Job) {
		waitFor(t, "records flowing", func() bool { return recordsIn(j) > 1000 })
		mean := func() (float64, int64) {
			var sum, most int64
			n := 0
			for k := 0; k < 75; k++ {
				for _, name := range []string{"join/0", "join/1", "revenue/0", "revenue/1", "sink/0"} {
					if in, _, ok := j.Inputs(name); ok {
						for _, c := range in {
							sum += c.Queue.Queued
							most = max(most, c.Queue.Queued)
							n++
						}
					}
				}
				elapse(20 * time.Millisecond)
			}
			return float64(sum) / float64(n), most
		}
		normal, normalMost := mean()
		j.SetTempo(TempoSlow)
		slow, slowMost := mean()
		j.SetTempo(TempoNormal)
		t.Logf("elements per input channel: normal %.2f (most %d), slow %.2f (most %d)", normal, normalMost, slow, slowMost)
		// At full speed a channel is nearly always empty. In slow motion
		// each subtask holds the element it is about to handle for a
		// moment, so that it can be seen: about one per channel, never a
		// backlog (it was hundreds of elements, growing, when only the
		// subtasks slowed down and the sources read on).
		if slow > 2 || slowMost > 8 {
			t.Errorf("slow motion holds %.2f elements per channel (most %d), normal speed %.2f (most %d)", slow, slowMost, normal, normalMost)
		}
	}}).do(t)
	if r.res.Status != JobFinished || !r.verify.OK {
		t.Fatalf("status %s verify %+v", r.res.Status, r.verify)
	}
}

// newestAt is the newest checkpoint whose barrier reached op's stage.
func (w *stepWatch) newestAt(op string) int64 {
	d, ok := w.stage[op]
	if !ok {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var newest int64
	for id, l := range w.left {
		if (l[d] > 0 || w.reached[id][d]) && id > newest {
			newest = id
		}
	}
	return newest
}
