package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/flatjson"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/view"
)

// A restore past damaged checkpoints (Flink falls back the same way) goes
// back past output those checkpoints' transactions already committed: a
// transaction committed cannot be taken back. The sink then skips the
// order ids that output holds, once each, until the job is past it.

// skipState is a subtask's skip set as a checkpoint keeps it.
type skipState struct {
	Until checkpoint.Offsets `json:"until,omitempty"`
	IDs   []string           `json:"ids"`
}

// restoreSkip takes the sink's anchor and skip set from the restored
// checkpoint; on a restore past a damaged checkpoint (ctx.Replay) it adds
// to the skip set what the output holds past the restored checkpoint (see
// committedPast). On a start with no checkpoint over committed output
// (ctx.Replay without ctx.Restored) that is every order id the committed
// output holds. Every subtask gets the whole set (a record may reach any
// of them); what one drops, the others keep until the sources pass the
// damaged checkpoint's offsets.
func (s *sinkOp) restoreSkip(ctx *OperatorContext) error {
	for _, name := range ctx.RestoredNames(sinkAnchorName) {
		if name == sinkAnchorName+strconv.Itoa(ctx.Task.Index) {
			for _, v := range ctx.RestoredState(name) {
				s.anchor = string(v)
			}
		}
	}
	var err error
	if s.skip, s.skipUntil, err = restoredSkipSets(ctx.restored); err != nil {
		return err
	}
	if ctx.Replay == nil {
		return nil
	}
	// The restore went back past damaged checkpoints: what they committed
	// is held too, beside what the restored checkpoint still skipped (a
	// second fallback while the job was skipping after a first).
	reader, ok := s.out.(CommittedReader)
	if !ok {
		return nil
	}
	past, err := committedPast(context.Background(), reader, ctx.restored, s.ids)
	if err != nil {
		return fmt.Errorf("read the output the damaged checkpoint committed: %w", err)
	}
	restored := s.skip != nil
	if !restored {
		s.skip = map[string]struct{}{}
	}
	switch {
	case len(ctx.Replay) == 0 || restored && s.skipUntil == nil:
		// Where the newer checkpoints ended is not known: every id is
		// dropped once, and the set goes when it is empty.
		s.skipUntil = nil
	case restored:
		s.skipUntil = furthest(s.skipUntil, ctx.Replay)
	default:
		s.skipUntil = ctx.Replay
	}
	for id := range past {
		s.skip[id] = struct{}{}
	}
	if s.obs != nil && ctx.Task.Index == 0 && len(s.skip) > 0 {
		// Every subtask holds the whole set: one says it.
		s.obs.Emit(view.ReplayHeld{Task: ctx.Task.String(), Records: len(s.skip), Checkpoint: ctx.RestoredFrom})
	}
	return nil
}

// restoredSkipSets is the union of the skip sets in a sink operator's
// restored states (name → every subtask's value) and the furthest of
// their offsets (nil: none, or not known); skip is nil when none was kept.
func restoredSkipSets(restored map[string][][]byte) (skip map[string]struct{}, until checkpoint.Offsets, err error) {
	for name, vs := range restored {
		if !strings.HasPrefix(name, sinkSkipName) {
			continue
		}
		for _, v := range vs {
			var st skipState
			if err := json.Unmarshal(v, &st); err != nil {
				return nil, nil, fmt.Errorf("skip set in the restored state: %w", err)
			}
			if skip == nil {
				skip = map[string]struct{}{}
			}
			for _, id := range st.IDs {
				skip[id] = struct{}{}
			}
			if st.Until != nil {
				until = furthest(until, st.Until)
			}
		}
	}
	return skip, until, nil
}

// committedPast is every order id the committed output holds after the
// anchors and the pre-committed transactions of a checkpoint with these
// sink states (name → every subtask's value), except those of its own
// pre-committed transactions, which a job restored from it does not emit
// again: what newer checkpoints committed. With no position to read from
// (no checkpoint, or one taken before the sink first committed) it is
// every id the committed output holds.
func committedPast(ctx context.Context, reader CommittedReader, restored map[string][][]byte, ids flatjson.Field) (map[string]struct{}, error) {
	from := map[int32]int64{}
	consider := func(c string) {
		if _, f, ok := reader.PositionOf(c); ok {
			for p, o := range f {
				if cur, seen := from[p]; !seen || o < cur {
					from[p] = o
				}
			}
		}
	}
	for name, vs := range restored {
		if strings.HasPrefix(name, sinkAnchorName) {
			for _, v := range vs {
				consider(string(v))
			}
		}
	}
	own := map[string]bool{}
	for _, b := range restored[sinkStateName] {
		st, err := decodeSinkState(b)
		if err != nil {
			return nil, err
		}
		for _, t := range st.pending {
			consider(t.committable)
			checker, ok := reader.(CommittedChecker)
			if !ok {
				continue
			}
			recs, err := checker.Prepared(ctx, t.committable)
			if err != nil {
				return nil, fmt.Errorf("records of the transaction pre-committed for checkpoint %d: %w", t.checkpoint, err)
			}
			for _, r := range recs {
				if id, ok := ids.Of(r.Value); ok {
					own[string(id)] = true
				}
			}
		}
	}
	recs, err := reader.CommittedFrom(ctx, from)
	if err != nil {
		return nil, err
	}
	past := map[string]struct{}{}
	for _, r := range recs {
		if id, ok := ids.Of(r.Value); ok && len(id) > 0 && !own[string(id)] {
			past[string(id)] = struct{}{}
		}
	}
	return past, nil
}

// skipping reports whether the record with value v is one the output holds
// already (see skip), and drops it from the set.
func (s *sinkOp) skipping(v any) bool {
	f, ok := v.(Fielder)
	if !ok {
		return false
	}
	id, ok := f.Field(s.ids.Name())
	if !ok {
		return false
	}
	if _, held := s.skip[id]; !held {
		return false
	}
	delete(s.skip, id)
	if s.skipped != nil {
		s.skipped.Add(1)
	}
	return true
}

// dropSkipPast lets the skip set go once completed checkpoint id is past
// what the job emits again.
func (s *sinkOp) dropSkipPast(id int64) {
	if s.skip != nil && s.skipUntil != nil {
		if c, ok := s.ctx.Completed(id); ok && covers(c.SourceOffsets(), s.skipUntil) && !s.skipsAny(c.InFlightIDs()) {
			// The job is past what it emits again, and no record that
			// would emit one of those is still in flight (an unaligned
			// checkpoint's barrier overtakes records it has not processed).
			s.skip, s.skipUntil = nil, nil
		}
	}
	if s.skip != nil && len(s.skip) == 0 {
		s.skip, s.skipUntil = nil, nil
	}
}

// skipsAny reports whether the skip set holds any of ids.
func (s *sinkOp) skipsAny(ids []string) bool {
	for _, id := range ids {
		if _, held := s.skip[id]; held {
			return true
		}
	}
	return false
}

// furthest is, per topic and partition, the further of a's and b's offsets.
func furthest(a, b checkpoint.Offsets) checkpoint.Offsets {
	out := checkpoint.Offsets{}
	for _, o := range []checkpoint.Offsets{a, b} {
		for topic, parts := range o {
			if out[topic] == nil {
				out[topic] = map[int32]int64{}
			}
			for p, off := range parts {
				if cur, ok := out[topic][p]; !ok || off > cur {
					out[topic][p] = off
				}
			}
		}
	}
	return out
}

// covers reports whether offsets are at or past until in every partition
// until names.
func covers(offsets, until checkpoint.Offsets) bool {
	for topic, parts := range until {
		for p, o := range parts {
			if offsets[topic][p] < o {
				return false
			}
		}
	}
	return true
}

// heldAhead is, for a run that ended with these states of its newest
// valid checkpoint (nil: none), every order id the committed outputs hold
// past it: what its sinks still skipped, and, when pickRestore passed
// newer checkpoints over as damaged, what they committed (see
// Result.Ahead). The outputs have been settled as that checkpoint had
// them (settleOutputs).
func (r *restorer) heldAhead(ctx context.Context, states map[string][]*backend.SubtaskState) ([]string, error) {
	held := map[string]struct{}{}
	for _, op := range r.job.Operators {
		if op.Type != spec.TypeSink {
			continue
		}
		out, err := r.env.output(op.Topic)
		if err != nil {
			return nil, err
		}
		reader, ok := out.(CommittedReader)
		if !ok {
			continue
		}
		restored := operatorStates(states[op.Name])
		skip, _, err := restoredSkipSets(restored)
		if err != nil {
			return nil, err
		}
		maps.Copy(held, skip)
		if len(r.passedOver) == 0 {
			continue
		}
		past, err := committedPast(ctx, reader, restored, idField(r.job))
		if err != nil {
			return nil, err
		}
		maps.Copy(held, past)
	}
	return slices.Sorted(maps.Keys(held)), nil
}
