package runtime

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/view"
)

// Three readers show a checkpoint's figures: the checkpoint pane and its
// detail draw the coordinator's statistics, `checkpoints inspect` reads the
// completed checkpoint from the store, and the checkpoint_completed event
// is made from it. For every retained checkpoint they agree, whole and for
// each subtask (one that finished before the checkpoint, whose state the
// store carries over, has no figures of it in either).
func TestCheckpointFiguresAgreeAcrossTheirReaders(t *testing.T) {
	var store checkpoint.Store
	r := (&run{records: 20000, rate: 8000, interval: 150 * time.Millisecond, during: func(j *Job) { store = j.cfg.Store }}).do(t)
	all, err := store.All(context.Background())
	if err != nil || len(all) == 0 {
		t.Fatalf("the store holds %d checkpoints: %v", len(all), err)
	}
	stats := map[int64]checkpoint.CheckpointStats{}
	for _, s := range r.res.Checkpoints.History {
		stats[s.ID] = s
	}
	events := map[int64]view.CheckpointCompleted{}
	for _, e := range r.events {
		if c, ok := e.Event.(view.CheckpointCompleted); ok {
			events[c.ID] = c
		}
	}
	for _, c := range all {
		s, inStats := stats[c.ID]
		e, inEvents := events[c.ID]
		if !inStats || !inEvents {
			t.Errorf("checkpoint %d: in the statistics %v, in the events %v", c.ID, inStats, inEvents)
			continue
		}
		full, inc := c.Size()
		if s.Duration != c.Duration() || s.Frozen != c.Frozen || s.FullBytes != full || s.IncrementalBytes != inc {
			t.Errorf("checkpoint %d: the pane has %v (+%v frozen) %d/%d bytes, the store %v (+%v) %d/%d",
				c.ID, s.Duration, s.Frozen, s.FullBytes, s.IncrementalBytes, c.Duration(), c.Frozen, full, inc)
		}
		if e.DurationMs != c.Duration().Milliseconds() || e.SizeBytes != full || e.IncrementalBytes != inc || e.Unaligned != s.Unaligned ||
			e.PersistedInFlightBytes != s.PersistedInFlight || e.ProcessedInFlightBytes != s.ProcessedInFlight {
			t.Errorf("checkpoint %d: the event %+v, the pane %+v", c.ID, e, s)
		}
		own := 0
		for id := range c.Tasks {
			if !c.CarriedOver(id) {
				own++
			}
		}
		if len(s.AckedTasks) != own {
			t.Errorf("checkpoint %d: %d subtasks acked in the detail, %d in the store", c.ID, len(s.AckedTasks), own)
		}
		for id, a := range c.Tasks {
			got, acked := s.AckedTasks[id]
			if c.CarriedOver(id) {
				// Finished before the checkpoint: the detail shows "—",
				// inspect no figures.
				if acked {
					t.Errorf("checkpoint %d: %s finished before it, and the detail shows its ack", c.ID, id)
				}
				continue
			}
			if !reflect.DeepEqual(got, a) {
				t.Errorf("checkpoint %d, %s: the detail has %+v, the store %+v", c.ID, id, got, a)
			}
		}
	}
}
