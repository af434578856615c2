package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/fault"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/view"
)

// The fault catalogue and the spelled form of a fault are the leaf
// package fault's; the engine knows them by these names.
type (
	// FaultKind is an entry of the fault catalogue.
	FaultKind = fault.Kind
	// CatalogueEntry is one fault of the catalogue.
	CatalogueEntry = fault.Entry
	// Fault is one injection: what, where and when.
	Fault = fault.Fault
)

// The faults of the catalogue.
const (
	FaultPanic             = fault.Panic
	FaultError             = fault.Error
	FaultSavepoint         = fault.Savepoint
	FaultSlow              = fault.Slow
	FaultCrash             = fault.Crash
	FaultStorageFail       = fault.StorageFail
	FaultCorruptCheckpoint = fault.CorruptCheckpoint
	FaultPoison            = fault.Poison
	FaultBrokerDown        = fault.BrokerDown
)

// Catalogue is the fault catalogue in the order the UI's menu lists it.
var Catalogue = fault.Catalogue

// MenuFault is the fault of kind with the defaults the UI's menu promises
// (fault.Menu).
func MenuFault(kind FaultKind, task, topic string, partition int32) Fault {
	return fault.Menu(kind, task, topic, partition)
}

// Corrupter is a checkpoint store that can damage a state blob on
// purpose, for the corrupt-checkpoint fault (the Badger store can).
type Corrupter interface {
	Corrupt(key string) error
}

var _ Corrupter = (*checkpoint.MemoryStore)(nil)

// ErrInjected is the error an injected fault makes a task fail with.
var ErrInjected = errors.New("injected fault")

// CheckFault checks the fault against job: its subtask is one of the
// job's, and a poison fault's topic one its sources read (the first when
// none is named), at a partition the topic has (partitions says how many;
// nil or 0: not known, not checked). An error is a *fault.SpecError.
func CheckFault(f *Fault, job *spec.Job, partitions func(topic string) int) error {
	if f.Kind == FaultPoison {
		return checkPoison(f, job, partitions)
	}
	if f.Kind.JobLevel() {
		return nil
	}
	name, idx, ok := strings.Cut(f.Task, "/")
	op := job.Op(name)
	if op == nil {
		var names []string
		for _, o := range job.Operators {
			names = append(names, o.Name)
		}
		return &fault.SpecError{Spec: f.Spec, Want: fmt.Sprintf("the job has no operator %q (operators: %s)", name, strings.Join(names, ", "))}
	}
	i, err := strconv.Atoi(idx)
	if !ok || err != nil || i < 0 || i >= op.Parallelism {
		return &fault.SpecError{Spec: f.Spec, Want: fmt.Sprintf("task must be %s/0 to %s/%d", name, name, op.Parallelism-1)}
	}
	return nil
}

// partitionsOf is partitions(topic), 0 when partitions is nil.
func partitionsOf(partitions func(topic string) int, topic string) int {
	if partitions == nil {
		return 0
	}
	return partitions(topic)
}

// checkPoison fills in and checks where a poison fault writes.
func checkPoison(f *Fault, job *spec.Job, partitions func(topic string) int) error {
	var topics []string
	for _, op := range job.Operators {
		if op.Type == spec.TypeSource && !slices.Contains(topics, op.Topic) {
			topics = append(topics, op.Topic)
		}
	}
	if f.Topic == "" && len(topics) > 0 {
		f.Topic = topics[0]
	}
	if !slices.Contains(topics, f.Topic) {
		return &fault.SpecError{Spec: f.Spec, Want: fmt.Sprintf("topic=%s: want one the job reads: %s", f.Topic, strings.Join(topics, ", "))}
	}
	if n := partitionsOf(partitions, f.Topic); n > 0 && int(f.Partition) >= n {
		return &fault.SpecError{Spec: f.Spec, Want: fmt.Sprintf("partition=%d: want 0 to %d", f.Partition, n-1)}
	}
	return nil
}

// injector holds the run's faults: the configured ones (--inject), those
// injected while the job runs (Inject), the after-checkpoints ones' count,
// and the channel that brings due faults to the job master. Firing a
// fault is the subtask's (task.fire) or the job's (Job.deliver).
type injector struct {
	jobSpec *spec.Job
	// partitions says how many partitions a source's topic has (Env).
	partitions func(topic string) int
	events     *Observer
	logf       func(format string, args ...any) // Config.Logf, the job's j.logf
	// configured is how many faults --inject configured: faultCh keeps
	// room for each.
	configured int
	faults     []*faultEntry
	// ckptFaults are the after-checkpoints faults of the run (never
	// changed once the job is made).
	ckptFaults []*faultEntry
	faultCh    chan *faultEntry
	nextFault  atomic.Int64 // numbers the faults (faultEntry.id)
	// injected are the faults that failed no task (job-level ones, slow),
	// under their lock.
	injected struct {
		sync.Mutex
		list []FailureInfo
	}
	crashed      atomic.Bool  // the crash fault fired (see Config.Crash)
	storageFails atomic.Int64 // checkpoint writes still to fail (storage-fail)
}

// Crashed reports whether the crash fault ended the run and the process
// lived on (see Config.Crash).
func (inj *injector) Crashed() bool { return inj.crashed.Load() }

// ErrNoSuchTask means a fault names a subtask the job does not have.
var ErrNoSuchTask = errors.New("no such subtask")

// Inject makes fault f happen now, in the running job (the keyboard's
// entry point to the fault catalogue; --inject's timed faults take the same
// path). It returns an error when f names no subtask of the job, or when
// too many faults are waiting.
func (inj *injector) Inject(f Fault) error {
	f.After, f.AfterRecords = 0, 0
	if f.Spec == "" {
		f.Spec = "fault=" + string(f.Kind)
		if f.Task != "" {
			f.Spec = "task=" + f.Task + "," + f.Spec
		}
	}
	if err := CheckFault(&f, inj.jobSpec, inj.partitions); err != nil {
		return fmt.Errorf("%w: %v", ErrNoSuchTask, err)
	}
	e := &faultEntry{Fault: f, adhoc: true, id: int(inj.nextFault.Add(1))}
	tooMany := errors.New("too many faults waiting to be injected; try again")
	if len(inj.faultCh) >= cap(inj.faultCh)-inj.configured {
		return tooMany // the rest is kept for the configured faults, each sent once
	}
	select {
	case inj.faultCh <- e:
		return nil
	default:
		return tooMany
	}
}

// noteFault records an injected fault that fails no task, for the
// report's failures.
func (inj *injector) noteFault(task string, kind FaultKind) {
	inj.injected.Lock()
	inj.injected.list = append(inj.injected.list, FailureInfo{At: inj.events.Since(), Task: task, Fault: string(kind)})
	inj.injected.Unlock()
}

// jobFault makes a fault that acts on the whole job happen.
func (d *driver) jobFault(ctx context.Context, f *faultEntry) {
	j := d.j
	switch f.Kind {
	case FaultSavepoint:
		if _, err := j.coord.Trigger(checkpoint.KindSavepoint); err != nil {
			j.obs.Emit(view.SavepointFailed{Error: err.Error()})
		}
	case FaultStorageFail:
		j.storageFails.Add(int64(f.Count))
	case FaultCorruptCheckpoint:
		c, err := d.corruptNewest(ctx)
		f := view.CheckpointCorrupted{Fault: string(FaultCorruptCheckpoint)}
		if err != nil {
			f.Error = err.Error()
		} else {
			f.ID = &c
		}
		j.obs.Emit(f)
	case FaultCrash:
		j.logf("injected crash: the process dies now")
		j.cfg.Crash()
	case FaultPoison:
		e := view.PoisonWritten{Topic: f.Topic, Partition: f.Partition}
		if j.cfg.Env.Poison == nil {
			e.Error = "this input cannot take a poison record"
		} else if off, err := j.cfg.Env.Poison(f.Topic, f.Partition); err != nil {
			e.Error = err.Error()
		} else {
			e.Offset = &off
		}
		j.obs.Emit(e)
	case FaultBrokerDown:
		e := view.BrokerDown{ForMs: f.For.Milliseconds()}
		if j.cfg.BrokerDown == nil {
			e.Error = "no embedded broker to take down (the job reads a Kafka cluster of its own: stop one of its brokers)"
		} else if err := j.cfg.BrokerDown(f.For); err != nil {
			e.Error = err.Error()
		}
		j.obs.Emit(e)
	}
}

// corruptNewest damages one state blob of the newest retained checkpoint
// of the job and returns its id.
func (d *driver) corruptNewest(ctx context.Context) (int64, error) {
	j := d.j
	c, err := j.store.Latest(ctx)
	if err != nil {
		return 0, err
	}
	if c == nil {
		return 0, errors.New("no checkpoint to damage yet")
	}
	corrupter, ok := j.cfg.Store.(Corrupter)
	if !ok {
		return 0, fmt.Errorf("this checkpoint store cannot be damaged on purpose")
	}
	for _, id := range c.SortedTasks() {
		if a := c.Tasks[id]; !a.Finished && a.Handle.Size > 0 {
			return c.ID, corrupter.Corrupt(a.Handle.Key)
		}
	}
	return 0, fmt.Errorf("checkpoint %d has no state to damage", c.ID)
}

// faultyStore fails checkpoint writes while the job's storage-fail
// counter is above zero (the storage-fail fault).
type faultyStore struct {
	checkpoint.Store
	fails *atomic.Int64
}

func (s faultyStore) PutState(ctx context.Context, id int64, task checkpoint.TaskID, data []byte) (checkpoint.Handle, error) {
	return s.PutStateParts(ctx, id, task, [][]byte{data})
}

// PutStateParts writes a blob in parts where the store takes them, and
// joined otherwise.
func (s faultyStore) PutStateParts(ctx context.Context, id int64, task checkpoint.TaskID, parts [][]byte) (checkpoint.Handle, error) {
	if s.fails.Add(-1) >= 0 {
		return checkpoint.Handle{}, fmt.Errorf("injected storage failure writing checkpoint %d", id)
	}
	s.fails.Add(1)
	if ps, ok := s.Store.(checkpoint.PartsStorage); ok {
		return ps.PutStateParts(ctx, id, task, parts)
	}
	if len(parts) == 1 {
		return s.Store.PutState(ctx, id, task, parts[0])
	}
	return s.Store.PutState(ctx, id, task, bytes.Join(parts, nil))
}

// deliver hands a timed fault to its task; a task that already finished is
// past harm. ctx is the run's.
func (d *driver) deliver(ctx context.Context, a *attempt, f *faultEntry) {
	j := d.j
	if f.adhoc && !slices.Contains(j.faults, f) {
		// Known from now on, so that a failover re-arms it like the others.
		j.faults = append(j.faults, f)
	}
	if f.Kind.JobLevel() {
		f.fired.Store(true)
		if f.Kind == FaultCrash {
			// Before anyone hears of it: whatever ends the run from
			// here on ends it as a crash.
			j.crashed.Store(true)
		}
		j.obs.Emit(view.FaultInjected{Fault: string(f.Kind), Spec: f.Spec})
		j.noteFault("", f.Kind)
		d.jobFault(ctx, f)
		return
	}
	j.obs.Emit(view.FaultInjected{Task: f.Task, Fault: string(f.Kind), Spec: f.Spec})
	if t := a.lookup(f.Task); t != nil {
		f.delivered.Store(true)
		t.mb.post(mail{kind: mailFault, entry: f})
	}
}

// checkFaults fires a due after-records fault. processed is the task's
// count over all attempts.
func (t *task) checkFaults() error {
	done := t.m.RecordsIn.Load() + t.in
	if done < t.faultAt {
		return nil
	}
	t.faultAt = 1<<63 - 1
	for _, f := range t.faults {
		if f.fired.Load() || f.AfterRecords == 0 {
			continue // fired, or not an after-records fault
		}
		if f.AfterRecords <= done {
			if err := t.fire(f); err != nil {
				return err
			}
			continue
		}
		t.faultAt = min(t.faultAt, f.AfterRecords)
	}
	return nil
}

// fire makes an injected fault happen in this task, now.
func (t *task) fire(f *faultEntry) error {
	if !f.fired.CompareAndSwap(false, true) {
		return nil
	}
	if f.Kind == FaultSlow {
		t.slow.begin(t.clk().Now(), f.Factor, f.For)
		t.m.slowFactor.Store(math.Float64bits(f.Factor))
		t.m.slowPer.Store(uint64(t.slow.perRecord))
		t.m.slowUntil.Store(uint64(t.slow.until.UnixNano()))
		t.a.job.obs.Emit(view.TaskSlowed{Task: t.name, Factor: f.Factor, ForMs: f.For.Milliseconds()})
		t.a.job.noteFault(t.name, FaultSlow)
		return nil
	}
	t.fired = f
	t.flushCounters()
	switch f.Kind {
	case FaultPanic:
		panic(fmt.Sprintf("injected panic in %s", t.name))
	default:
		return fmt.Errorf("%s: %w: %s", t.name, ErrInjected, f.Kind)
	}
}
