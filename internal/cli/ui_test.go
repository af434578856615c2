package cli

import (
	"testing"
	"time"

	"faultline/checkpoint"
	"faultline/runtime/view"
)

// The UI's view of the checkpoint statistics says what the coordinator's
// do: each status, savepoints, acknowledgements and waits by subtask name.
func TestCheckpointsViewCopiesTheStatistics(t *testing.T) {
	join1 := checkpoint.TaskID{Operator: "join", Index: 1}
	st := checkpoint.Stats{Completed: 2, Failed: 1, InProgress: 1, LastCompleted: 7, Restored: []int64{5},
		History: []checkpoint.CheckpointStats{
			{ID: 8, Kind: checkpoint.KindCheckpoint, Status: checkpoint.StatusPending, Acked: 1, Total: 2,
				AckedTasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{join1: {Alignment: time.Millisecond, Bytes: 9}},
				WaitingFor: []checkpoint.TaskID{{Operator: "sink", Index: 0}}},
			{ID: 7, Kind: checkpoint.KindSavepoint, Status: checkpoint.StatusCompleted, Restored: true},
			{ID: 6, Kind: checkpoint.KindCheckpoint, Status: checkpoint.StatusFailed, Failure: "expired"},
		}}
	v := checkpointsView(st)
	if v.Completed != 2 || v.Failed != 1 || v.InProgress != 1 || v.LastCompleted != 7 || len(v.Restored) != 1 || len(v.History) != 3 {
		t.Fatalf("counts %+v", v)
	}
	h := v.History
	if h[0].Status != view.StatusPending || h[1].Status != view.StatusCompleted || h[2].Status != view.StatusFailed {
		t.Errorf("statuses %v %v %v", h[0].Status, h[1].Status, h[2].Status)
	}
	if h[0].Savepoint || !h[1].Savepoint || !h[1].Restored || h[2].Failure != "expired" {
		t.Errorf("history %+v", h)
	}
	if a, ok := h[0].AckedTasks["join/1"]; !ok || a.Alignment != time.Millisecond || a.Bytes != 9 || len(h[0].WaitingFor) != 1 || h[0].WaitingFor[0] != "sink/0" {
		t.Errorf("acks %v, waiting for %v", h[0].AckedTasks, h[0].WaitingFor)
	}
}
