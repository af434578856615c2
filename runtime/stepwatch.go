package runtime

// What Step stops at: the moments of a checkpoint a person can see. The job
// is cut into stages by the longest path from a source (the default job:
// sources, parse, join, revenue, sink); a step ends when a checkpoint's
// barriers have left a stage (every subtask of it took its snapshot and
// forwarded the barrier), when a barrier first reaches a stage whose
// subtasks read several channels (a channel blocks: an alignment begins),
// or when the checkpoint completes. From a frozen world, three steps take
// a barrier from the sources to the join: the sources inject it, the parse
// subtasks pass it on, it reaches the join.

import (
	"sync"

	"github.com/faultline-dev/faultline/runtime/spec"
)

// stepWatchKeep is how many checkpoints the watch follows at once.
const stepWatchKeep = 16

type stepWatch struct {
	stage map[string]int // operator → stage
	size  []int          // subtasks per stage
	multi []bool         // the stage's subtasks read several channels

	mu      sync.Mutex
	left    map[int64][]int // checkpoint → per stage, the subtasks that took their snapshot
	reached map[int64][]bool
}

func newStepWatch(job *spec.Job) *stepWatch {
	w := &stepWatch{stage: map[string]int{}, left: map[int64][]int{}, reached: map[int64][]bool{}}
	var depth func(op *spec.Operator) int
	depth = func(op *spec.Operator) int {
		if d, ok := w.stage[op.Name]; ok {
			return d
		}
		d := 0
		for _, in := range op.Inputs {
			if up := job.Op(in.From); up != nil {
				d = max(d, depth(up)+1)
			}
		}
		w.stage[op.Name] = d
		return d
	}
	for i := range job.Operators {
		depth(job.Operators[i])
	}
	for i := range job.Operators {
		op := job.Operators[i]
		d := w.stage[op.Name]
		for len(w.size) <= d {
			w.size, w.multi = append(w.size, 0), append(w.multi, false)
		}
		w.size[d] += op.Parallelism
		channels := 0
		for _, in := range op.Inputs {
			if up := job.Op(in.From); up != nil {
				if in.Edge == spec.Forward && up.Parallelism == op.Parallelism {
					channels++
				} else {
					channels += up.Parallelism
				}
			}
		}
		w.multi[d] = w.multi[d] || channels > 1
	}
	return w
}

// entry returns checkpoint id's counts, forgetting old checkpoints.
func (w *stepWatch) entry(id int64) ([]int, []bool) {
	l, ok := w.left[id]
	if !ok {
		l = make([]int, len(w.size))
		w.left[id], w.reached[id] = l, make([]bool, len(w.size))
		for old := range w.left {
			if old <= id-stepWatchKeep {
				delete(w.left, old)
				delete(w.reached, old)
			}
		}
	}
	return l, w.reached[id]
}

// snapshotted counts a subtask of op that took its snapshot of checkpoint
// id; it reports whether the barriers have now left op's stage.
func (w *stepWatch) snapshotted(op string, id int64) bool {
	d, ok := w.stage[op]
	if !ok {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	l, _ := w.entry(id)
	l[d]++
	return l[d] == w.size[d]
}

// arrived notes that a barrier of checkpoint id reached a subtask of op; it
// reports whether it is the first to reach op's stage, when the stage's
// subtasks align several channels.
func (w *stepWatch) arrived(op string, id int64) bool {
	d, ok := w.stage[op]
	if !ok || !w.multi[d] {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, r := w.entry(id)
	if r[d] {
		return false
	}
	r[d] = true
	return true
}

// stepSaw ends a running Step when the task just did something visible.
func (t *task) stepSaw(visible bool) {
	if visible {
		t.a.job.endStep()
	}
}
