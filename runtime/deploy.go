package runtime

// Deploy: building an attempt's subtasks from the job spec and a restored
// checkpoint, wiring their channels and starting them; settling the outputs
// and the final commit at the end.

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/barrier"
	"github.com/faultline-dev/faultline/runtime/spec"
)

// deploy builds and starts every subtask of attempt n at epoch. It returns the
// attempt's context, which the master passes to the subtasks it starts
// for the attempt later (partial failovers).
func (j *Job) deploy(ctx context.Context, n, epoch int64, restore *checkpoint.Completed, states map[string][]*backend.SubtaskState) (*attempt, context.Context, error) {
	// The attempt ends when the master cancels it (teardown), not with the
	// run's context: stopping with a savepoint needs it running a moment longer.
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a := &attempt{n: n, job: j, cancel: cancel, byName: map[string]*task{}}
	a.epoch.Store(epoch)
	j.epoch.Store(epoch)
	var built []*task
	fail := func(err error) (*attempt, context.Context, error) {
		for _, t := range built {
			a.closeBackend(t)
		}
		cancel()
		return nil, nil, err
	}
	if err := j.rs.checkInFlight(restore, states); err != nil {
		return fail(err)
	}
	for _, op := range j.spec.Operators {
		for i := 0; i < op.Parallelism; i++ {
			t, err := j.newTask(a, op, i, restore, states)
			if err != nil {
				return fail(err)
			}
			built = append(built, t)
		}
	}
	j.wire(built)
	a.events = make(chan taskEvent, 4*len(built))
	a.mu.Lock()
	for _, t := range built {
		a.tasks = append(a.tasks, t)
		a.byName[t.name] = t
		if t.source != nil {
			a.sources = append(a.sources, t)
		}
	}
	a.mu.Unlock()
	j.cur.Lock()
	j.cur.a = a
	j.cur.Unlock()
	for _, t := range built {
		j.start(actx, t)
	}
	return a, actx, nil
}

// newTask builds instance of subtask op/i for attempt a, with its state
// from restore (nil: none), its keyed backend and its faults. It is not
// wired nor started.
func (j *Job) newTask(a *attempt, op *spec.Operator, i int, restore *checkpoint.Completed, states map[string][]*backend.SubtaskState) (*task, error) {
	maxP := j.spec.MaxParallelism
	epoch := a.epoch.Load()
	id := checkpoint.TaskID{Operator: op.Name, Index: i}
	t := &task{id: id, name: id.String(), a: a, op: op, deploys: epoch, m: j.metrics[id.String()]}
	t.gate = newGate()
	t.lastTrig = map[int64]barrierInfo{}
	t.faultAt = 1<<63 - 1
	t.mb = newMailbox(t.gate)
	if op.Type == spec.TypeSource {
		src, err := j.cfg.Env.source(op.Topic)
		if err != nil {
			return nil, err
		}
		t.source = &sourceTask{task: t, src: src, align: j.align.slots[t.name]}
	} else {
		oper, err := newOperator(j.spec, op, j.cfg.Env, j.cfg.Types, j.bad)
		if err != nil {
			return nil, err
		}
		t.oper = oper
		t.opr = &operatorTask{task: t, ids: idField(j.spec)}
		t.opr.one, _ = oper.(OneInput)
		t.opr.two, _ = oper.(TwoInput)
	}
	if slices.ContainsFunc(op.Inputs, func(in spec.Input) bool { return in.Edge == spec.Hash }) {
		kgs := backend.RangeFor(maxP, op.Parallelism, i)
		keyed, err := newKeyed(j.cfg, kgs, maxP, fmt.Sprintf("attempt-%d", epoch), fmt.Sprintf("%s-%d", op.Name, i))
		if err != nil {
			return nil, fmt.Errorf("%s: state backend: %w", t.name, err)
		}
		t.keyed = keyed
		t.opr.prefetch, _ = t.keyed.(backend.Prefetcher)
		t.opr.grouped, _ = t.keyed.(backend.GroupedKeys)
	}
	if ss := states[op.Name]; ss != nil {
		r := &restoredState{from: restore.ID, operator: operatorStates(ss), replay: j.rs.replayUntil}
		for _, s := range ss {
			if len(s.Keyed) > 0 {
				r.keyed = append(r.keyed, s.Keyed)
			}
		}
		// checkInFlight made sure the operator has the checkpoint's
		// parallelism when there is channel state: subtask i's is its own.
		if len(ss) == op.Parallelism && len(ss[i].Channels) > 0 {
			r.channels = map[string][]Record{}
			dec := jobDecoder(j.cfg.Types)
			for key, b := range ss[i].Channels {
				recs, err := decodeInFlight(b, dec)
				if err != nil {
					return nil, fmt.Errorf("restore %s from checkpoint %d: in-flight records of channel %q: %w", t.name, restore.ID, key, err)
				}
				r.channels[key] = recs
			}
		}
		t.restored = r
	}
	if restore == nil && j.rs.skipCommitted {
		// Nothing to restore, over output the runs before committed: the
		// job emits all of it again (see OperatorContext.Replay).
		t.replayAll = true
	}
	t.resumeSlow()
	for _, f := range j.faults {
		if f.Task == t.name && !f.fired.Load() {
			t.faults = append(t.faults, f)
			if f.AfterRecords > 0 {
				t.faultAt = min(t.faultAt, f.AfterRecords)
			}
		}
	}
	return t, nil
}

// newKeyed makes the keyed state backend of one subtask instance over key
// groups kgs: on the heap, or a Badger database in the work dir under
// attempt/task.
func newKeyed(cfg Config, kgs backend.KeyGroupRange, maxP int, attempt, task string) (backend.KeyedBackend, error) {
	if cfg.StateBackend == "badger" {
		b, err := backend.NewBadger(filepath.Join(cfg.WorkDir, attempt, task), maxP, kgs)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	return backend.NewHeap(maxP, kgs), nil
}

// wire connects the subtasks in set with new channels, one per pair of
// connected subtasks, and gives each its barrier handler. set must be
// closed under the job's edges (the whole job, or pipelined regions): every
// subtask connected to one in set is in set.
func (j *Job) wire(set []*task) {
	byOp := map[string][]*task{}
	for _, t := range set {
		byOp[t.op.Name] = append(byOp[t.op.Name], t)
	}
	index := func(ts []*task, i int) *task {
		for _, t := range ts {
			if t.id.Index == i {
				return t
			}
		}
		return nil
	}
	for _, op := range j.spec.Operators {
		for k, in := range op.Inputs {
			ups, downs := byOp[in.From], byOp[op.Name]
			for _, up := range ups {
				var chans []*Channel
				if in.Edge == spec.Forward {
					down := index(downs, up.id.Index)
					ch := newChannel(j.cfg.ChannelCapacity, down.gate, up.gate)
					down.inputs = append(down.inputs, &inputChannel{from: up.name, ch: ch, logical: k})
					j.replayInFlight(down, ch, k, up.name)
					chans = []*Channel{ch}
				} else {
					// Every downstream subtask is in set, in index order.
					for i := 0; i < op.Parallelism; i++ {
						down := index(downs, i)
						ch := newChannel(j.cfg.ChannelCapacity, down.gate, up.gate)
						down.inputs = append(down.inputs, &inputChannel{from: up.name, ch: ch, logical: k})
						j.replayInFlight(down, ch, k, up.name)
						chans = append(chans, ch)
					}
				}
				up.outputs = append(up.outputs, newOutput(in, j.spec.MaxParallelism, chans, j.cfg.BatchSize, up.id.Index))
			}
		}
	}
	for _, t := range set {
		if t.source == nil {
			t.handler = j.newHandler(len(t.inputs))
		}
	}
}

// newHandler is a barrier handler in the job's current mode that ignores
// every checkpoint issued so far: a subtask deployed now takes part only in
// the checkpoints triggered after it, and barriers of older ones still in
// its input channels must not make it align.
func (j *Job) newHandler(inputs int) barrier.Handler {
	h := barrier.New(j.Mode(), inputs, j.clk.Now)
	if last := j.coord.NextID() - 1; last > 0 {
		h.Abort(last)
	}
	return h
}

// start runs subtask instance t in its own goroutine, under a context of
// its own derived from ctx, the attempt's; t.cancel ends it. The goroutine,
// and every one it starts (its snapshots, its Kafka client's), carries the
// profiler labels operator and task, so that a CPU profile (--pprof) says
// what each operator costs.
func (j *Job) start(ctx context.Context, t *task) {
	a := t.a
	ctx, t.cancel = context.WithCancel(ctx)
	t.m.Deploys.Add(1)
	a.wg.Add(1)
	t.done.Add(1)
	j.live.Add(1)
	go func() {
		defer func() {
			j.live.Add(-1)
			t.done.Done()
			a.wg.Done()
		}()
		pprof.Do(ctx, pprof.Labels("operator", t.op.Name, "task", t.name), t.run)
	}()
}

// settleOutputs leaves the outputs as a restart from a checkpoint with
// these states would: the transactions it pre-committed are committed and
// every later one is aborted. A run that stops without finishing calls it,
// so that what is committed is exactly what its last completed checkpoint
// covers. Each sink subtask's transactions are settled as the subtask's
// own recovery would (recoverSink), all of them at once: a lost
// transaction's recovery reads the output, which one subtask after another
// made a stop of 32 sink subtasks take 10 s. It gives up, between the
// steps of each, when ctx ends: the next run settles the outputs as it
// restores.
func (j *Job) settleOutputs(ctx context.Context, states map[string][]*backend.SubtaskState) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, op := range j.spec.Operators {
		if op.Type != spec.TypeSink {
			continue
		}
		out, err := j.cfg.Env.output(op.Topic)
		if err != nil {
			return err
		}
		ops := operatorStates(states[op.Name])
		for i := range op.Parallelism {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := op.Parallelism
				_, _, _, err := recoverSink(ctx.Done(), out, j.cfg.Env.TxnPrefix, op.Name, ops[sinkStateName],
					func(owner int) bool { return owner%p == i }, []int{i})
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	if first != nil && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return first
}

// finalCommit commits what the sinks prepared at the end of their input,
// once every task of the job has finished (Flink: the final commit of a
// bounded job).
func (j *Job) finalCommit(a *attempt) error {
	for _, t := range a.taskList() {
		s, ok := t.oper.(*sinkOp)
		if !ok {
			continue
		}
		for _, c := range s.FinalCommittables() {
			if err := s.out.Commit(c); err != nil {
				return fmt.Errorf("%s: final commit: %w", t.name, err)
			}
		}
	}
	return nil
}
