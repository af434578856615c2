package checkpoint

import (
	"testing"
	"time"
)

// A subtask that finished before a checkpoint was triggered is carried
// over into it; one that acknowledged it, finished or not, is its own.
func TestCarriedOver(t *testing.T) {
	trigger := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	early, own, last := TaskID{"src", 0}, TaskID{"join", 0}, TaskID{"sink", 0}
	c := &Completed{TriggerTime: trigger, Tasks: map[TaskID]SubtaskAck{
		early: {Finished: true, AckTime: trigger.Add(-time.Second)},
		own:   {AckTime: trigger.Add(time.Millisecond)},
		last:  {Finished: true, AckTime: trigger.Add(time.Millisecond)},
	}}
	if !c.CarriedOver(early) || c.CarriedOver(own) || c.CarriedOver(last) || c.CarriedOver(TaskID{"x", 9}) {
		t.Fatalf("carried over: %v %v %v", c.CarriedOver(early), c.CarriedOver(own), c.CarriedOver(last))
	}
}
