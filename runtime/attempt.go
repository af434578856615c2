package runtime

// An attempt is one deployment of the job: its subtasks, their goroutines and
// the channel their events reach the master by.

import (
	"context"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/faultline-dev/faultline/checkpoint"
)

// attempt is one deployment of the whole job graph (Flink: an execution
// attempt of every vertex). cancel ends the context that deploy made for it
// and that the master passes to every goroutine it starts for the attempt
// (the subtasks' contexts derive from it); wg waits for them. A region or individual failover replaces some of its tasks
// without ending the attempt; epoch counts those changes (Flink: the
// global modification version) and is what the coordinator knows the
// attempt by, so that nothing of a replaced task counts for a checkpoint
// triggered after it.
type attempt struct {
	n      int64
	epoch  atomic.Int64
	job    *Job
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine of every task instance
	events chan taskEvent

	// mu guards the task lists, which a failover changes while the
	// coordinator's callbacks and the UI read them. Only the job master
	// writes them.
	mu      sync.RWMutex
	tasks   []*task
	sources []*task
	byName  map[string]*task
}

func (a *attempt) report(ctx context.Context, ev taskEvent) {
	select {
	case a.events <- ev:
	case <-ctx.Done():
	}
}

// taskList and sourceList are copies of the current task instances.
func (a *attempt) taskList() []*task {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return slices.Clone(a.tasks)
}

func (a *attempt) sourceList() []*task {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return slices.Clone(a.sources)
}

// lookup returns the current instance of subtask name, or nil.
func (a *attempt) lookup(name string) *task {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.byName[name]
}

// replace puts news in the place of olds (a partial restart).
func (a *attempt) replace(olds, news []*task) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, t := range news {
		for k, x := range a.tasks {
			if x == olds[i] {
				a.tasks[k] = t
			}
		}
		for k, x := range a.sources {
			if x == olds[i] {
				a.sources[k] = t
			}
		}
		a.byName[t.name] = t
	}
}

// closeBackend closes a subtask instance's state backend when it holds
// resources (the Badger databases); only after every goroutine of the
// instance, its snapshot writers included, has ended.
func (a *attempt) closeBackend(t *task) {
	if c, ok := t.keyed.(io.Closer); ok {
		if err := c.Close(); err != nil {
			a.job.logf("%s: close state backend: %v", t.name, err)
		}
	}
}

// closeBackends closes the state backends of the current instances.
func (a *attempt) closeBackends() {
	for _, t := range a.taskList() {
		a.closeBackend(t)
	}
}

// stop cancels every goroutine of the attempt and waits for all of them.
func (a *attempt) stop() {
	for _, t := range a.taskList() {
		t.abandon()
	}
	a.cancel()
	a.wg.Wait()
}

func (a *attempt) taskIDs() []checkpoint.TaskID {
	ts := a.taskList()
	ids := make([]checkpoint.TaskID, len(ts))
	for i, t := range ts {
		ids[i] = t.id
	}
	return ids
}
