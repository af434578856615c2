package runtime

import (
	"context"
	"fmt"
	"testing"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/flatjson"
	"github.com/faultline-dev/faultline/runtime/verify"
)

// An at-least-once run stopped before its end may have let out records made
// from input after its last completed checkpoint: they are counted as
// after_checkpoint, never as unexpected, and in exactly-once they stay
// unexpected.
func TestStoppedAtLeastOnceRunCountsOutputAfterTheCheckpoint(t *testing.T) {
	gen := newTestInput(7, 20000, 0)
	bounds := checkpoint.Offsets{}
	for _, topic := range []string{topicOrders, topicPayments} {
		bounds[topic] = map[int32]int64{}
		for p := 0; p < testJob.Partitions; p++ {
			bounds[topic][int32(p)] = gen.EndOffset(topic, p) / 2
		}
	}
	// Every paid order of the whole input, and which of them the input
	// below bounds already pays.
	sides := func(b checkpoint.Offsets) map[string]int {
		seen := map[string]int{}
		for i, topic := range []string{topicOrders, topicPayments} {
			var lim map[int32]int64
			if b != nil {
				lim = b[topic]
			}
			gen.ReadInput(context.Background(), topic, lim, func(v []byte, _, _ int64) error {
				id, _ := flatjson.MustField("order_id").Of(v)
				seen[string(id)] |= 1 << i
				return nil
			})
		}
		return seen
	}
	var out []OutputRecord
	inBounds := 0
	below := sides(bounds)
	for id, s := range sides(nil) {
		if s == 3 {
			out = append(out, OutputRecord{Value: fmt.Appendf(nil, `{"order_id":%q}`, id)})
			if below[id] == 3 {
				inBounds++
			}
		}
	}
	after := len(out) - inBounds
	if after == 0 || inBounds == 0 {
		t.Fatalf("paid orders: %d within the checkpoint, %d after it; want some of each", inBounds, after)
	}
	v, err := verify.Verify(context.Background(), gen, verify.ExpectOf(testJob.Spec()), "at-least-once", bounds, out)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK || v.Unexpected != 0 || v.AfterCheckpoint != after || v.Expected != inBounds || v.Lost != 0 {
		t.Fatalf("at-least-once: %+v; want ok, %d expected, %d after the checkpoint, none unexpected", v, inBounds, after)
	}
	v, err = verify.Verify(context.Background(), gen, verify.ExpectOf(testJob.Spec()), "exactly-once", bounds, out)
	if err != nil {
		t.Fatal(err)
	}
	if v.OK || v.Unexpected != after || v.AfterCheckpoint != 0 {
		t.Fatalf("exactly-once: %+v; want %d unexpected", v, after)
	}
}
