package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"faultline/checkpoint"
	"faultline/runtime/spec"
	"faultline/runtime/view"
)

// FaultKind is an entry of the fault catalogue.
type FaultKind string

const (
	// FaultPanic makes the task panic inside its operator.
	FaultPanic FaultKind = "panic"
	// FaultError makes the task's operator return an error.
	FaultError FaultKind = "error"
	// FaultSavepoint triggers a savepoint (it needs no task).
	FaultSavepoint FaultKind = "savepoint"
	// FaultSlow makes the task handle 1/Factor of the records per second it
	// handled when the fault began, for For (see slowing).
	FaultSlow FaultKind = "slow"
	// FaultCrash kills the whole process, as SIGKILL does.
	FaultCrash FaultKind = "crash"
	// FaultStorageFail makes the next Count checkpoint writes fail.
	FaultStorageFail FaultKind = "storage-fail"
	// FaultCorruptCheckpoint damages the newest retained checkpoint's state
	// so that the next recovery falls back to an older one.
	FaultCorruptCheckpoint FaultKind = "corrupt-checkpoint"
	// FaultPoison writes a record that can never be parsed into an input
	// topic (Topic, Partition).
	FaultPoison FaultKind = "poison"
	// FaultBrokerDown makes the embedded broker refuse connections for For.
	FaultBrokerDown FaultKind = "broker-down"
)

// CatalogueEntry is one fault of the catalogue that --inject, the UI's
// fault menu and the chaos soak all draw from.
type CatalogueEntry struct {
	Kind FaultKind
	// Inject says what the fault does with its --inject parameters.
	Inject string
	// Menu says what it does with the UI's defaults (MenuFault).
	Menu string
}

// Catalogue is the fault catalogue in the order the UI's menu lists it.
var Catalogue = []CatalogueEntry{
	{FaultPanic, "the task panics", "the task panics"},
	{FaultError, "the task's operator returns an error", "the task's operator returns an error"},
	{FaultSlow, "the task holds each record, handling 1/factor= of its rate, for for=", "the task falls to a tenth of its rate for 30 s"},
	{FaultPoison, "a record that can never be parsed is written into topic= (orders) partition= (0)", "a record no parser accepts enters the input it reads"},
	{FaultBrokerDown, "the embedded broker refuses connections for for= (5s)", "the embedded broker refuses connections for 5 s"},
	{FaultStorageFail, "the next count= checkpoint writes fail", "the next 3 checkpoint writes fail"},
	{FaultCorruptCheckpoint, "the newest checkpoint's state is damaged", "the newest checkpoint's state is damaged on disk"},
	{FaultSavepoint, "a savepoint is taken", "a savepoint is taken"},
	{FaultCrash, "the process dies as with SIGKILL", "the process dies as with SIGKILL (start faultline again to resume)"},
}

// inCatalogue reports whether k is a fault of the catalogue.
func inCatalogue(k FaultKind) bool {
	for _, e := range Catalogue {
		if e.Kind == k {
			return true
		}
	}
	return false
}

// MenuFault is the fault of kind with the defaults the UI's menu promises
// (CatalogueEntry.Menu; a test holds the two together), aimed at task
// (ignored for faults of the whole job): slow 10× for 30 s, storage-fail
// the next 3 writes, broker-down 5 s; poison goes to topic and partition.
func MenuFault(kind FaultKind, task, topic string, partition int32) Fault {
	f := Fault{Kind: kind, Task: task}
	switch kind {
	case FaultSlow:
		f.Factor, f.For = 10, 30*time.Second
	case FaultStorageFail:
		f.Count = 3
	case FaultBrokerDown:
		f.For = 5 * time.Second
	case FaultPoison:
		f.Topic, f.Partition = topic, partition
	}
	if kind.JobLevel() {
		f.Task = ""
	}
	return f
}

// JobLevel reports whether the fault acts on the job rather than a task.
func (k FaultKind) JobLevel() bool {
	switch k {
	case FaultSavepoint, FaultCrash, FaultStorageFail, FaultCorruptCheckpoint, FaultPoison, FaultBrokerDown:
		return true
	}
	return false
}

// Fault is one injection: what, where and when. It is the one entry point
// for faults: --inject in headless runs, and later the keyboard.
type Fault struct {
	Kind FaultKind
	Task string // "operator/index"
	// After is the time since the run started; AfterRecords instead fires
	// once the task has processed that many records (over all attempts),
	// which keeps short bounded runs deterministic. Neither set: now.
	After        time.Duration
	AfterRecords int64
	// AfterCheckpoints instead fires once that many checkpoints have
	// completed in this run, counted from After on when both are given
	// ("after=3s,after-checkpoints=1": right after the first checkpoint
	// that completes 3 s into the run).
	AfterCheckpoints int64
	// Count is how many checkpoint writes a storage-fail fault fails.
	Count int
	// Factor and For shape a slow fault; For is also how long a
	// broker-down fault lasts.
	Factor float64
	For    time.Duration
	// Topic and Partition are where a poison fault writes its record.
	Topic     string
	Partition int32
	Spec      string // as the user wrote it
}

func (f Fault) String() string { return f.Spec }

// ErrInjected is the error an injected fault makes a task fail with.
var ErrInjected = errors.New("injected fault")

// ParseFault reads an --inject value such as
// "after=3s,task=join/1,fault=panic" or "after-records=20000,task=join/1,fault=panic".
func ParseFault(s string) (Fault, error) {
	f := Fault{Spec: s}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return f, fmt.Errorf("--inject %q: %q is not key=value (keys: after, after-records, after-checkpoints, task, fault)", s, part)
		}
		if seen[k] {
			return f, fmt.Errorf("--inject %q: %s given twice", s, k)
		}
		seen[k] = true
		switch k {
		case "after":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return f, fmt.Errorf("--inject %q: after=%s is not a duration like 3s or 500ms", s, v)
			}
			f.After = d
		case "after-records":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return f, fmt.Errorf("--inject %q: after-records=%s is not a whole number", s, v)
			}
			f.AfterRecords = n
		case "after-checkpoints":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return f, fmt.Errorf("--inject %q: after-checkpoints=%s is not a whole number of 1 or more", s, v)
			}
			f.AfterCheckpoints = n
		case "task":
			f.Task = v
		case "factor":
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || x < 1 || x > 1000 {
				return f, fmt.Errorf("--inject %q: factor=%s is not a number from 1 to 1000", s, v)
			}
			f.Factor = x
		case "for":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return f, fmt.Errorf("--inject %q: for=%s is not a duration like 3s", s, v)
			}
			f.For = d
		case "topic":
			if v != TopicOrders && v != TopicPayments {
				return f, fmt.Errorf("--inject %q: topic=%s: want orders or payments", s, v)
			}
			f.Topic = v
		case "partition":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n >= GeneratorPartitions {
				return f, fmt.Errorf("--inject %q: partition=%s: want 0 to %d", s, v, GeneratorPartitions-1)
			}
			f.Partition = int32(n)
		case "count":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return f, fmt.Errorf("--inject %q: count=%s is not a whole number of 1 or more", s, v)
			}
			f.Count = n
		case "fault":
			f.Kind = FaultKind(v)
			if !inCatalogue(f.Kind) {
				return f, fmt.Errorf("--inject %q: unknown fault %q (known: %s)", s, v, knownFaults())
			}
		default:
			return f, fmt.Errorf("--inject %q: unknown key %q (keys: after, after-records, after-checkpoints, task, fault, count, factor, for, topic, partition)", s, k)
		}
	}
	if seen["after-records"] && (seen["after"] || seen["after-checkpoints"]) {
		return f, fmt.Errorf("--inject %q: after-records= goes with neither after= nor after-checkpoints=", s)
	}
	if f.Kind == "" {
		return f, fmt.Errorf("--inject %q: fault= is missing (known: %s)", s, knownFaults())
	}
	if seen["count"] && f.Kind != FaultStorageFail {
		return f, fmt.Errorf("--inject %q: count= goes with fault=storage-fail", s)
	}
	if f.Kind == FaultStorageFail && f.Count == 0 {
		f.Count = 1
	}
	if seen["factor"] && f.Kind != FaultSlow {
		return f, fmt.Errorf("--inject %q: factor= goes with fault=slow", s)
	}
	if seen["for"] && f.Kind != FaultSlow && f.Kind != FaultBrokerDown {
		return f, fmt.Errorf("--inject %q: for= goes with fault=slow or fault=broker-down", s)
	}
	if (seen["topic"] || seen["partition"]) && f.Kind != FaultPoison {
		return f, fmt.Errorf("--inject %q: topic= and partition= go with fault=poison", s)
	}
	if f.Kind == FaultPoison && f.Topic == "" {
		f.Topic = TopicOrders
	}
	if f.Kind == FaultBrokerDown && f.For == 0 {
		f.For = 5 * time.Second
	}
	if f.Kind == FaultSlow {
		if f.Factor == 0 {
			f.Factor = 10
		}
		if f.For == 0 {
			f.For = 5 * time.Second
		}
	}
	if f.Kind.JobLevel() {
		if f.Task != "" {
			return f, fmt.Errorf("--inject %q: fault=%s acts on the whole job; leave out task=", s, f.Kind)
		}
		if f.AfterRecords > 0 {
			return f, fmt.Errorf("--inject %q: fault=%s takes after=, not after-records=", s, f.Kind)
		}
		return f, nil
	}
	if f.Task == "" {
		return f, fmt.Errorf("--inject %q: task= is missing (e.g. task=join/1)", s)
	}
	return f, nil
}

func knownFaults() string {
	var ks []string
	for _, e := range Catalogue {
		ks = append(ks, string(e.Kind))
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// CheckFaultTask verifies that the fault's task exists in job.
func CheckFaultTask(f Fault, job *spec.Job) error {
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
		return fmt.Errorf("--inject %q: the job has no operator %q (operators: %s)", f.Spec, name, strings.Join(names, ", "))
	}
	i, err := strconv.Atoi(idx)
	if !ok || err != nil || i < 0 || i >= op.Parallelism {
		return fmt.Errorf("--inject %q: task must be %s/0 to %s/%d", f.Spec, name, name, op.Parallelism-1)
	}
	return nil
}

// injector holds the run's faults: the configured ones (--inject), those
// injected while the job runs (Inject), the after-checkpoints ones' count,
// and the channel that brings due faults to the job master. Firing a
// fault is the subtask's (task.fire) or the job's (Job.deliver).
type injector struct {
	jobSpec *spec.Job
	events  *Observer
	logf    func(format string, args ...any) // Config.Logf, the job's j.logf
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
	if err := CheckFaultTask(f, inj.jobSpec); err != nil {
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
			e.Error = "no embedded broker to take down (with --brokers, stop your own)"
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
	corrupter, ok := j.cfg.Store.(interface {
		Corrupt(key string) error
	})
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
