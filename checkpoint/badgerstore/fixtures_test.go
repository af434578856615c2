package badgerstore

import (
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/clock"
)

// The tasks and the time the store's tests checkpoint.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

var (
	src0 = checkpoint.TaskID{Operator: "src", Index: 0}
	src1 = checkpoint.TaskID{Operator: "src", Index: 1}
	sink = checkpoint.TaskID{Operator: "sink", Index: 0}
	job  = []checkpoint.TaskID{src0, src1, sink}
)

// ids are the ids of cs, in order.
func ids(cs []*checkpoint.Completed) []int64 {
	out := make([]int64, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

// quietGateway is a job that takes every call of the coordinator and does
// nothing.
type quietGateway struct{}

func (quietGateway) TriggerSources(int64, int64, checkpoint.Kind, string, time.Time) {}
func (quietGateway) NotifyComplete(int64, int64)                                     {}
func (quietGateway) NotifyAborted(int64, int64)                                      {}
func (quietGateway) FailJob(int64, error)                                            {}

// coordinator is a coordinator of cfg on store, on a clock stopped at t0.
func coordinator(t *testing.T, cfg checkpoint.Config, store checkpoint.Store) *checkpoint.Coordinator {
	t.Helper()
	return checkpoint.NewCoordinator(cfg, store, clock.NewFake(t0), quietGateway{}, func(checkpoint.Event) {})
}

// trigger starts a checkpoint of kind on c.
func trigger(t *testing.T, c *checkpoint.Coordinator, kind checkpoint.Kind) int64 {
	t.Helper()
	id, err := c.Trigger(kind)
	if err != nil {
		t.Fatalf("Trigger: %v", err)
	}
	return id
}

// ack acknowledges checkpoint id of attempt for each of tasks.
func ack(c *checkpoint.Coordinator, attempt, id int64, tasks ...checkpoint.TaskID) {
	for _, task := range tasks {
		c.Acknowledge(attempt, id, task, ackOf(task, id))
	}
}

// ackOf is the acknowledgement task sends for checkpoint id.
func ackOf(task checkpoint.TaskID, id int64) checkpoint.SubtaskAck {
	a := checkpoint.SubtaskAck{Handle: checkpoint.Handle{Key: checkpoint.StateKey(id, task)}, Bytes: 100}
	if task.Operator == "src" {
		a.Offsets = checkpoint.Offsets{"orders": {int32(task.Index): 10 * id}}
	}
	return a
}
