package rest

// Asynchronous operations (Flink: a trigger id, then the operation's
// status under it): a checkpoint, a savepoint, a stop with a savepoint.
// How one stands is decided from the job's snapshot, once; a stop's from
// the run's end when its savepoint is not in the snapshot.

import (
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

type opKind int

const (
	opCheckpoint opKind = iota
	opSavepoint
	opStop // a savepoint, then the run ends
)

// maxOperations bounds the operations kept: the oldest are forgotten.
const maxOperations = 64

// operation is one triggered operation.
type operation struct {
	kind  opKind
	id    int64     // the checkpoint or savepoint (a stop's: 0)
	asked time.Time // wall clock
	err   error     // the trigger's
	res   *opResult // once decided
	read  bool      // a decided stop's result was answered
}

// opResult is how an operation ended: the checkpoint or savepoint it
// took, or why it failed.
type opResult struct {
	id      int64
	failure string
}

// operations are the run's operations, by trigger id.
type operations struct {
	mu        sync.Mutex
	byID      map[string]*operation
	order     []string
	over      bool  // the run ended
	savepoint int64 // ... with this savepoint of its stop
	stopRead  chan struct{}
}

func newOperations() operations {
	return operations{byID: map[string]*operation{}, stopRead: make(chan struct{})}
}

var triggerIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// start starts an operation with trigger (under the trigger id asked for,
// when valid; the same id again is the same operation) and returns its id.
func (o *operations) start(kind opKind, asked string, trigger func() (int64, error)) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	tid := asked
	if !triggerIDPattern.MatchString(tid) {
		tid = newTriggerID()
	} else if _, ok := o.byID[tid]; ok {
		return tid
	}
	op := &operation{kind: kind, asked: time.Now()}
	op.id, op.err = trigger()
	o.byID[tid] = op
	o.order = append(o.order, tid)
	if len(o.order) > maxOperations {
		delete(o.byID, o.order[0])
		o.order = o.order[1:]
	}
	return tid
}

// ended says the run ended, with the savepoint its stop took (0: none);
// the first word counts.
func (o *operations) ended(savepoint int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.over {
		o.over, o.savepoint = true, savepoint
	}
}

// linger waits, up to limit, for a stop asked for to be answered decided.
func (o *operations) linger(limit time.Duration) {
	o.mu.Lock()
	waiting := false
	for _, op := range o.byID {
		waiting = waiting || (op.kind == opStop && !op.read)
	}
	o.mu.Unlock()
	if !waiting {
		return
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-o.stopRead:
	case <-t.C:
	}
}

// decide answers how the operation under tid stands, in Flink's
// AsynchronousOperationResult; known is false when there is none of that
// kind (a stop's stands under the savepoints' path).
func (o *operations) decide(tid string, kind opKind, snap view.Snapshot) (answer any, known bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	op, ok := o.byID[tid]
	if !ok || (op.kind != kind && !(kind == opSavepoint && op.kind == opStop)) {
		return nil, false
	}
	if op.res == nil {
		op.res = o.result(op, snap)
	}
	if op.res == nil {
		return map[string]any{"status": map[string]string{"id": "IN_PROGRESS"}}, true
	}
	if op.kind == opStop && !op.read {
		op.read = true
		o.answered()
	}
	return map[string]any{"status": map[string]string{"id": "COMPLETED"}, "operation": operationOf(op)}, true
}

// answered tells linger that every stop asked for has been answered.
func (o *operations) answered() {
	for _, op := range o.byID {
		if op.kind == opStop && !op.read {
			return
		}
	}
	select {
	case <-o.stopRead:
	default:
		close(o.stopRead)
	}
}

// operationOf is a decided operation's result as Flink writes it:
// CheckpointInfo for a checkpoint, SavepointInfo for a savepoint.
func operationOf(op *operation) map[string]any {
	cause := func() map[string]string {
		return map[string]string{"class": "faultline.Failure", "stack-trace": op.res.failure}
	}
	if op.kind == opCheckpoint {
		if op.res.failure != "" {
			return map[string]any{"failureCause": cause()}
		}
		return map[string]any{"checkpointId": op.res.id}
	}
	if op.res.failure != "" {
		return map[string]any{"failure-cause": cause()}
	}
	return map[string]any{"location": Location(op.res.id)}
}

// result decides op from snap (nil: in progress). A stop's result, once
// the run has ended, is decided even so: its savepoint was read before
// the job was cancelled.
func (o *operations) result(op *operation, snap view.Snapshot) *opResult {
	if op.err != nil {
		return &opResult{failure: op.err.Error()}
	}
	c, found := o.find(op, snap)
	switch {
	case found && c.Status == view.StatusCompleted:
		return &opResult{id: c.ID}
	case found && c.Status == view.StatusFailed:
		return &opResult{failure: c.Failure}
	case found:
		return nil
	case op.kind == opStop && o.over && o.savepoint > 0:
		return &opResult{id: o.savepoint}
	case o.over:
		return &opResult{failure: "the run ended without it"}
	case op.kind != opStop && oldest(snap) > op.id:
		return &opResult{failure: fmt.Sprintf("checkpoint %d is no longer in the history", op.id)}
	}
	return nil
}

// find is op's checkpoint or savepoint in the history: a stop's is the
// first savepoint triggered after the stop was asked for.
func (o *operations) find(op *operation, snap view.Snapshot) (view.Checkpoint, bool) {
	h := snap.Checkpoints.History // newest first
	for i := range h {
		c := h[len(h)-1-i]
		if op.kind != opStop && c.ID == op.id ||
			op.kind == opStop && c.Savepoint && !c.TriggerTime.Before(op.asked) {
			return c, true
		}
	}
	return view.Checkpoint{}, false
}

// oldest is the oldest checkpoint id in the history (0: none).
func oldest(snap view.Snapshot) int64 {
	if h := snap.Checkpoints.History; len(h) > 0 {
		return h[len(h)-1].ID
	}
	return 0
}
