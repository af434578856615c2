package runtime

// Restore: which checkpoint or savepoint a (re)start goes back to, what it
// passes over, and reading its state.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/view"
)

// ErrNoSavepoint means --from-savepoint named no savepoint in the store.
var ErrNoSavepoint = errors.New("no such savepoint")

// ErrNonRestoredState means a savepoint holds state of operators the job
// does not have; RunOptions.AllowNonRestoredState drops it (Flink:
// execution.savepoint.ignore-unclaimed-state).
var ErrNonRestoredState = errors.New("state not restored")

// restorer picks and reads what a run restores: a savepoint, or the
// newest valid checkpoint, passing over damaged ones. It keeps what its
// latest pick passed over, for the restore's event and the sinks' replay
// (master goroutine).
type restorer struct {
	store           faultyStore
	job             *spec.Job
	obs             *Observer
	coord           *checkpoint.Coordinator
	env             *Env
	logf            func(format string, args ...any)
	allowFreshStart bool
	// passedOver are the damaged checkpoints the latest pickRestore passed
	// over, newest first, for the next Restored event.
	passedOver []int64
	// replayUntil is set by pickRestore when it fell back past a newer
	// completed checkpoint whose state cannot be read: that one's source
	// offsets (see OperatorContext.Replay); nil otherwise.
	replayUntil checkpoint.Offsets
	// skipCommitted is RunOptions.SkipCommitted of the run.
	skipCommitted bool
}

// savepointRestore loads savepoint id for a restore, checking that every
// operator it holds state for is in the job.
func (r *restorer) savepointRestore(ctx context.Context, opts RunOptions) (*checkpoint.Completed, map[string][]*backend.SubtaskState, error) {
	all, err := r.store.All(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list savepoints: %w", err)
	}
	var sp *checkpoint.Completed
	var ids []string
	for _, c := range all {
		if c.Kind == checkpoint.KindSavepoint {
			ids = append(ids, strconv.FormatInt(c.ID, 10))
			if c.ID == opts.FromSavepoint {
				sp = c
			}
		}
	}
	if sp == nil {
		have := "none"
		if len(ids) > 0 {
			have = strings.Join(ids, ", ")
		}
		return nil, nil, fmt.Errorf("%w %d in the state dir (savepoints: %s)", ErrNoSavepoint, opts.FromSavepoint, have)
	}
	states, err := r.readRestore(ctx, sp)
	if err != nil {
		return nil, nil, fmt.Errorf("savepoint %d cannot be read: %w", sp.ID, err)
	}
	var unknown []string
	for op := range states {
		if r.job.Op(op) == nil {
			unknown = append(unknown, op)
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 && !opts.AllowNonRestoredState {
		return nil, nil, fmt.Errorf("%w: savepoint %d has state of operators the job does not have (%s)", ErrNonRestoredState, sp.ID, strings.Join(unknown, ", "))
	}
	for _, op := range unknown {
		delete(states, op)
	}
	return sp, states, nil
}

// ErrNoValidCheckpoint means the store holds checkpoints of the job but
// none can be restored, and a fresh start was not allowed.
var ErrNoValidCheckpoint = errors.New("no valid checkpoint to restore")

// pickRestore finds the newest checkpoint (or savepoint) of this job whose state can be
// read and decoded, newest first, reporting every damaged one it passes
// over (Flink falls back the same way when a checkpoint cannot be read).
// It returns nil when the store has no checkpoint of the job, and
// ErrNoValidCheckpoint when it has some but none is valid, unless
// AllowFreshStart. A read that fails because ctx ended calls no checkpoint
// damaged: pickRestore returns ctx's error.
func (r *restorer) pickRestore(ctx context.Context, report bool) (*checkpoint.Completed, map[string][]*backend.SubtaskState, error) {
	all, err := r.store.All(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list checkpoints: %w", err)
	}
	var damaged []string
	var firstErr error
	r.passedOver = nil
	invalid := func(id int64, err error) {
		damaged = append(damaged, strconv.FormatInt(id, 10))
		r.passedOver = append(r.passedOver, id)
		if firstErr == nil {
			firstErr = err
		}
		r.logf("cannot restore checkpoint %d: %v", id, err)
		r.coord.MarkDamaged(id, err.Error())
		if report {
			r.obs.Emit(view.CheckpointInvalid{ID: id, Error: err.Error()})
		}
	}
	// Records the store cannot read at all (damaged metadata, or a
	// checkpoint it completed whose record is gone) are passed over first:
	// they are newer than anything listed, or between listed ones.
	var unreadable []int64
	health, _ := r.store.Store.(storeHealth)
	if health != nil {
		ids, err := health.Damaged(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("list damaged checkpoints: %w", err)
		}
		unreadable = ids
	}
	for i := len(all) - 1; i >= 0; i-- {
		c := all[i]
		// Savepoints count too: their completion committed the sink's
		// output as a checkpoint's does.
		if c.Job != r.job.Name {
			continue
		}
		for k := len(unreadable) - 1; k >= 0 && unreadable[k] > c.ID; k-- {
			invalid(unreadable[k], health.Verify(ctx, unreadable[k]))
			unreadable = unreadable[:k]
		}
		states, err := r.readRestore(ctx, c)
		if err == nil {
			r.replayUntil = r.replayPast(all[i+1:], c)
			return c, states, nil
		}
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("read checkpoint %d: %w", c.ID, ctx.Err())
		}
		invalid(c.ID, err)
	}
	for k := len(unreadable) - 1; k >= 0; k-- {
		invalid(unreadable[k], health.Verify(ctx, unreadable[k]))
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if len(damaged) > 0 && !r.allowFreshStart {
		what := "checkpoint " + damaged[0] + " is"
		if len(damaged) > 1 {
			what = "checkpoints " + strings.Join(damaged, ", ") + " are"
		}
		return nil, nil, fmt.Errorf("%w of job %s: %s damaged (the newest: %v)",
			ErrNoValidCheckpoint, r.job.Name, what, firstErr)
	}
	return nil, nil, nil
}

// storeHealth is what a checkpoint store can say of the records it cannot
// read (the Badger store): their ids, and why.
type storeHealth interface {
	Damaged(ctx context.Context) ([]int64, error)
	Verify(ctx context.Context, id int64) error
}

// replayPast says how far a restore from c goes back past output that
// newer checkpoints committed (see OperatorContext.Replay): nil when c is
// the newest checkpoint the store completed; the newest newer one's source
// offsets when newer ones are listed (damaged); and empty offsets, "not
// known", when the newest ones are gone (lost, or deleted with
// `faultline checkpoints delete`). newer are the checkpoints listed after c.
func (r *restorer) replayPast(newer []*checkpoint.Completed, c *checkpoint.Completed) checkpoint.Offsets {
	if c.ID >= r.store.MaxID() {
		return nil
	}
	var last *checkpoint.Completed
	for _, n := range newer {
		if n.Job == r.job.Name {
			last = n
		}
	}
	if last == nil || last.ID < r.store.MaxID() {
		return checkpoint.Offsets{}
	}
	return last.SourceOffsets()
}

// markRestored records and announces a restore from c (nil: none, a fresh
// start) of the subtasks in scope (nil: the whole job).
func (j *Job) markRestored(res *Result, c *checkpoint.Completed, why string, scope ...string) {
	f := view.Restored{Reason: why, Tasks: scope}
	switch {
	case scope != nil:
	case c != nil:
		j.ledger.takeBackLosses(c.ID)
	default:
		j.ledger.takeBackLosses(0)
	}
	if c == nil {
		f.Reason = why + ": no checkpoint of job " + j.spec.Name + " to restore, starting from the beginning"
		if why == "resumed" {
			f.Reason = "nothing to resume: no checkpoint of job " + j.spec.Name + " in the state dir yet, starting from the beginning"
		}
		j.obs.Emit(f)
		return
	}
	j.coord.MarkRestored(c.ID, c.Kind)
	res.RestoredFrom = append(res.RestoredFrom, c.ID)
	if scope == nil {
		f.PassedOver, j.rs.passedOver = j.rs.passedOver, nil
	}
	offsets := c.SourceOffsets()
	if scope != nil {
		offsets = checkpoint.Offsets{}
		for _, name := range scope {
			for id, ack := range c.Tasks {
				if id.String() != name {
					continue
				}
				for topic, parts := range ack.Offsets {
					if offsets[topic] == nil {
						offsets[topic] = map[int32]int64{}
					}
					maps.Copy(offsets[topic], parts)
				}
			}
		}
	}
	f.Checkpoint = c.ID
	shown := offsetsJSON(offsets)
	f.Offsets = &shown
	j.obs.Emit(f)
}

// offsetsJSON is o as events show it: partitions as strings.
func offsetsJSON(o checkpoint.Offsets) view.Offsets {
	out := view.Offsets{}
	for topic, parts := range o {
		m := map[string]int64{}
		for p, off := range parts {
			m[strconv.Itoa(int(p))] = off
		}
		out[topic] = m
	}
	return out
}

// operatorStates gathers the operator state of an operator's subtasks in
// a checkpoint: name → the value each subtask had (Flink: union list
// state), as every new subtask is handed it.
func operatorStates(ss []*backend.SubtaskState) map[string][][]byte {
	m := map[string][][]byte{}
	for _, s := range ss {
		for name, v := range s.Operator {
			m[name] = append(m[name], v)
		}
	}
	return m
}

// readRestore loads the state of every subtask in checkpoint c, by operator.
func (r *restorer) readRestore(ctx context.Context, c *checkpoint.Completed) (map[string][]*backend.SubtaskState, error) {
	out := map[string][]*backend.SubtaskState{}
	for _, id := range c.SortedTasks() {
		ack := c.Tasks[id]
		var s *backend.SubtaskState
		var keyed [][]byte
		for _, h := range ack.Blobs() {
			data, err := r.store.GetState(ctx, h)
			if err != nil {
				return nil, fmt.Errorf("checkpoint %d: state of %s: %w", c.ID, id, err)
			}
			if s, err = backend.DecodeSubtaskState(data); err != nil {
				return nil, fmt.Errorf("checkpoint %d: state of %s: %w", c.ID, id, err)
			}
			keyed = append(keyed, s.Keyed)
		}
		if ack.Finished {
			// The subtask took in all its input before it finished: the
			// in-flight records of the snapshot carried over are long
			// processed, and replaying them would duplicate them.
			s.Channels = nil
		}
		if len(keyed) > 1 {
			// An incremental snapshot: its full base and deltas, composed.
			composed, err := backend.ComposeKeyed(keyed)
			if err != nil {
				return nil, fmt.Errorf("checkpoint %d: state of %s: compose %d incremental snapshots: %w", c.ID, id, len(keyed), err)
			}
			s.Keyed = composed
		}
		out[id.Operator] = append(out[id.Operator], s)
	}
	return out, nil
}

// checkInFlight refuses to restore, at another parallelism, a checkpoint
// holding in-flight records: they belong to channels between subtasks
// that the job at its new parallelism does not have. (Flink redistributes
// them by key group; here a savepoint, always aligned, is the way to
// rescale.)
func (r *restorer) checkInFlight(c *checkpoint.Completed, states map[string][]*backend.SubtaskState) error {
	if c == nil {
		return nil
	}
	var changed []string
	held := false
	for name, ss := range states {
		for _, s := range ss {
			held = held || len(s.Channels) > 0
		}
		if op := r.job.Op(name); op != nil && op.Parallelism != len(ss) {
			changed = append(changed, fmt.Sprintf("%s from %d to %d", name, len(ss), op.Parallelism))
		}
	}
	if !held || len(changed) == 0 {
		return nil
	}
	sort.Strings(changed)
	return fmt.Errorf("checkpoint %d is unaligned: it holds in-flight records of channels between subtasks at the parallelism it was taken with, and the job changes the parallelism of %s; restore it at its own parallelism, or stop with a savepoint (always aligned) and rescale from that",
		c.ID, strings.Join(changed, ", "))
}

// replayInFlight puts into ch, channel logical input k from subtask from
// into t, the in-flight records t's restored checkpoint holds for it,
// before anything is sent (Flink: the recovered input channel state).
func (j *Job) replayInFlight(t *task, ch *Channel, k int, from string) {
	if t.restored == nil || t.restored.channels == nil {
		return
	}
	recs := t.restored.channels[channelKey(k, from)]
	for len(recs) > 0 {
		n := min(len(recs), j.cfg.BatchSize)
		b := getBatch(n)
		for _, r := range recs[:n] {
			b = append(b, Element{Kind: KindRecord, Record: r})
		}
		ch.send(b)
		recs = recs[n:]
	}
}
