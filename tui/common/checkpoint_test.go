package common

import (
	"testing"

	"github.com/faultline-dev/faultline/runtime/view"
)

func TestModeLog(t *testing.T) {
	var l ModeLog
	for _, e := range []view.Event{
		view.RunStarted{Mode: ExactlyOnce},
		view.CheckpointTriggered{ID: 1}, view.CheckpointTriggered{ID: 2},
		view.ModeChanged{Mode: AtLeastOnce},
		view.CheckpointTriggered{ID: 3},
		view.ModeChanged{Mode: ExactlyOnce},
		view.CheckpointTriggered{ID: 4},
	} {
		l.Observe(e)
	}
	afterBarrier := &view.Checkpoint{ID: 4, AckedTasks: map[string]view.SubtaskAck{"join/0": {AfterBarrier: 2}}}
	for _, tc := range []struct {
		c    *view.Checkpoint
		now  string
		want string
	}{
		{&view.Checkpoint{ID: 1}, AtLeastOnce, ExactlyOnce},
		{&view.Checkpoint{ID: 3}, ExactlyOnce, AtLeastOnce},
		{&view.Checkpoint{ID: 4}, AtLeastOnce, ExactlyOnce},
		// Records past the barrier: at-least-once, whatever was told.
		{afterBarrier, ExactlyOnce, AtLeastOnce},
		// Not told yet, newer than the last switch: the job's mode now.
		{&view.Checkpoint{ID: 5}, AtLeastOnce, AtLeastOnce},
	} {
		if got := l.Mode(tc.c, tc.now); got != tc.want {
			t.Errorf("checkpoint %d: %q, want %q", tc.c.ID, got, tc.want)
		}
	}

	// A log that saw no trigger of an older checkpoint does not guess.
	var late ModeLog
	late.Observe(view.CheckpointTriggered{ID: 7})
	late.Observe(view.ModeChanged{Mode: AtLeastOnce})
	if got := late.Mode(&view.Checkpoint{ID: 6}, AtLeastOnce); got != "" {
		t.Errorf("an older checkpoint not told: %q", got)
	}
	if got := late.Mode(&view.Checkpoint{ID: 8}, AtLeastOnce); got != AtLeastOnce {
		t.Errorf("a newer checkpoint not told yet: %q", got)
	}
}
