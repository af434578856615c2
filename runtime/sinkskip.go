package runtime

import (
	"encoding/json"
	"fmt"
	"strconv"

	"faultline/checkpoint"
	"faultline/runtime/flatjson"
	"faultline/runtime/view"
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

// committedReader is a TxnOutput that can read its committed output from
// the positions a committable names on (the Kafka output).
type committedReader interface {
	PositionOf(committable string) (topic string, from map[int32]int64, ok bool)
	CommittedFrom(from map[int32]int64) ([]OutputRecord, error)
}

// restoreSkip takes the sink's anchor and skip set from the restored
// checkpoint; on a restore past a damaged checkpoint (ctx.Replay) it makes
// the skip set: every order id the committed output holds after the
// anchors of the restored checkpoint, except those of its own pre-committed
// transactions, which the job does not emit again. On a start with no
// checkpoint over committed output (ctx.Replay without ctx.Restored) the
// set is every order id the committed output holds. Every subtask gets the
// whole set (a record may reach any of them); what one drops, the others
// keep until the sources pass the damaged checkpoint's offsets.
func (s *sinkOp) restoreSkip(ctx *OperatorContext) error {
	var anchors []string
	for _, name := range ctx.RestoredNames(sinkAnchorName) {
		for _, v := range ctx.RestoredState(name) {
			anchors = append(anchors, string(v))
			if name == sinkAnchorName+strconv.Itoa(ctx.Task.Index) {
				s.anchor = string(v)
			}
		}
	}
	for _, name := range ctx.RestoredNames(sinkSkipName) {
		for _, v := range ctx.RestoredState(name) {
			var st skipState
			if err := json.Unmarshal(v, &st); err != nil {
				return fmt.Errorf("skip set in the restored state: %w", err)
			}
			if s.skip == nil {
				s.skip = map[string]struct{}{}
			}
			for _, id := range st.IDs {
				s.skip[id] = struct{}{}
			}
			if st.Until != nil {
				s.skipUntil = st.Until
			}
		}
	}
	if ctx.Replay == nil {
		return nil
	}
	// The restore went back past damaged checkpoints: what they committed
	// is held too, beside what the restored checkpoint still skipped (a
	// second fallback while the job was skipping after a first).
	reader, ok := s.out.(committedReader)
	if !ok {
		return nil
	}
	// Where the restored checkpoint's committed and pre-committed output
	// begins, and the ids of its pre-committed transactions.
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
	for _, a := range anchors {
		consider(a)
	}
	own := map[string]bool{}
	for _, b := range ctx.RestoredState(sinkStateName) {
		st, err := decodeSinkState(b, ctx.RestoredState)
		if err != nil {
			return err
		}
		for _, t := range st.pending {
			consider(t.committable)
			if t.redo == nil {
				continue
			}
			recs, err := t.redo.records()
			if err != nil {
				return err
			}
			for _, r := range recs {
				if id, ok := flatjson.OrderIDOf(r.Value); ok {
					own[string(id)] = true
				}
			}
		}
	}
	// With no position to read from (no checkpoint restored, or one taken
	// before this sink first committed) the whole committed output is
	// read: everything in it came after.
	recs, err := reader.CommittedFrom(from)
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
	for _, r := range recs {
		if id, ok := flatjson.OrderIDOf(r.Value); ok && len(id) > 0 && !own[string(id)] {
			s.skip[string(id)] = struct{}{}
		}
	}
	if s.obs != nil && ctx.Task.Index == 0 && len(s.skip) > 0 {
		// Every subtask holds the whole set: one says it.
		s.obs.Emit(view.ReplayHeld{Task: ctx.Task.String(), Records: len(s.skip), Checkpoint: ctx.RestoredFrom})
	}
	return nil
}

// skipping reports whether the record with value v is one the output holds
// already (see skip), and drops it from the set.
func (s *sinkOp) skipping(v any) bool {
	f, ok := v.(Fielder)
	if !ok {
		return false
	}
	id, ok := f.Field("order_id")
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
