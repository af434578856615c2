package runtime

import (
	"testing"
	"time"
)

// Frozen in the middle of an alignment, the world's clock stands still: the
// checkpoint that completes afterwards reports the job time it took and
// its alignment without the frozen time, says how long the world stood
// frozen, and a slow fault lasts its length of job time, not of wall time.
func TestFrozenTimeIsLeftOutOfAlignmentAndFaults(t *testing.T) {
	const frozenFor = 3 * time.Second
	// Long enough that the slow fault outlasts the wait for an alignment
	// on a busy machine: the freeze must come while it holds.
	const slowFor = time.Minute
	var aligning int64
	r := (&run{records: 60000, rate: 4000, interval: 300 * time.Millisecond, cancelAfterDuring: true, during: func(j *Job) {
		waitFor(t, "a checkpoint", func() bool { return j.coord.Stats().Completed >= 1 })
		if err := j.Inject(Fault{Kind: FaultSlow, Task: "join/0", Factor: 10, For: slowFor}); err != nil {
			t.Error(err)
			return
		}
		// The fault reaches join/0 through its mailbox: an alignment may
		// begin before it has taken, and a freeze then would hold it back.
		waitFor(t, "the slow fault to take", func() bool {
			_, _, ok := j.metrics["join/0"].Slowed()
			return ok
		})
		waitFor(t, "join/0 to align", func() bool {
			_, al, _ := j.Inputs("join/0")
			aligning = al.Checkpoint
			return aligning != 0
		})
		j.SetTempo(TempoFrozen)
		frozenAt := j.Now()
		_, until, ok := j.metrics["join/0"].Slowed()
		if !ok {
			t.Errorf("the slow fault of %s ended before the freeze", slowFor)
			return
		}
		elapse(frozenFor)
		if _, after, ok := j.metrics["join/0"].Slowed(); !ok || !after.Equal(until) || !after.After(j.Now()) {
			t.Errorf("after %s frozen the slow fault is over or moved (ok %v, until %v, was %v): %v of job time passed",
				frozenFor, ok, after, until, j.Now().Sub(frozenAt))
		}
		j.SetTempo(TempoNormal)
		waitFor(t, "the checkpoint join/0 aligned to end", func() bool {
			for _, c := range j.coord.Stats().History {
				if c.ID == aligning {
					return c.Status != 0
				}
			}
			return false
		})
	}}).do(t)
	if t.Failed() {
		for _, e := range r.events {
			if n := e.Event.Name(); n != "task_load" && n != "checkpoint_triggered" {
				t.Logf("event %s %+v", n, e.Event)
			}
		}
	}
	var found bool
	for _, c := range r.res.Checkpoints.History {
		if c.ID != aligning {
			continue
		}
		found = true
		wall := c.EndTime.Sub(c.TriggerTime)
		t.Logf("checkpoint %d %s: wall %v, job time %v, frozen %v, longest alignment %v", c.ID, c.Status, wall, c.Duration, c.Frozen, c.MaxAlignment)
		if c.Frozen < frozenFor*9/10 || c.Frozen > frozenFor*11/10 {
			t.Errorf("frozen %v during the checkpoint, want %v within 10%%", c.Frozen, frozenFor)
		}
		if c.Duration > wall-c.Frozen+50*time.Millisecond {
			t.Errorf("job time %v, want at most the wall clock's %v less the %v frozen", c.Duration, wall, c.Frozen)
		}
		if c.MaxAlignment > c.Duration {
			t.Errorf("longest alignment %v outlasts the checkpoint's job time %v: it counts frozen time", c.MaxAlignment, c.Duration)
		}
	}
	if !found {
		t.Fatalf("checkpoint %d is not in the history", aligning)
	}
}
