package cli

import (
	"fmt"
	"slices"
	"testing"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
)

// What a state dir holds becomes what its broker log must hold: every
// retained checkpoint's source offsets and output floor and the ledger's
// positions within the log, the end of an input written whole reached.
func TestLogNeedsOfAStateDir(t *testing.T) {
	cp := func(id int64, kind checkpoint.Kind, src, out int64) *checkpoint.Completed {
		return &checkpoint.Completed{ID: id, Kind: kind, Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{
			{Operator: "src"}:  {Offsets: checkpoint.Offsets{"orders": {1: src}}},
			{Operator: "sink"}: {OutputFrom: checkpoint.Offsets{"revenue": {0: out}}},
		}}
	}
	gen := orders.NewGenerator(3, 1000, orders.GeneratorPartitions)
	for _, tc := range []struct {
		name   string
		s      stateNeeds
		within []string
		reach  []int64
		cps    string
		ledger string
	}{
		{name: "a new state dir"},
		{name: "checkpoints and a savepoint",
			s:      stateNeeds{checkpoints: []*checkpoint.Completed{cp(7, checkpoint.KindCheckpoint, 50, 9), cp(4, checkpoint.KindSavepoint, 20, 3)}, ledger: "L"},
			within: []string{"orders/1@20 savepoint 4's source offset", "orders/1@50 checkpoint 7's source offset", "revenue/0@3 where savepoint 4's pre-committed transactions began", "revenue/0@9 where checkpoint 7's pre-committed transactions began"},
			cps:    "checkpoints (newest 7)", ledger: "L"},
		{name: "the ledger's positions",
			s:      stateNeeds{positions: map[string]map[int32]int64{"orders": {0: 5}}},
			within: []string{"orders/0@5 the verification ledger's position"}},
		{name: "an input written whole",
			s:     stateNeeds{input: &inputRecord{Seed: 3, Records: 2000, Written: 1000}, inputs: map[string]string{"orders": "in"}},
			reach: []int64{gen.EndOffset("orders", 0), gen.EndOffset("orders", 1), gen.EndOffset("orders", 2), gen.EndOffset("orders", 3)}},
		{name: "an input not yet written whole",
			s: stateNeeds{input: &inputRecord{Seed: 3, Records: 2000}, inputs: map[string]string{"orders": "in"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := logNeeds(tc.s)
			var within []string
			for _, w := range n.Within {
				within = append(within, fmt.Sprintf("%s/%d@%d %s", w.Topic, w.Partition, w.Offset, w.Why))
			}
			var reach []int64
			for i, r := range n.Reach {
				if r.Topic != "in" || r.Partition != int32(i) {
					t.Fatalf("reach %d: %+v", i, r)
				}
				reach = append(reach, r.Offset)
			}
			if !slices.Equal(within, tc.within) || !slices.Equal(reach, tc.reach) || n.Checkpoints != tc.cps || n.Ledger != tc.ledger {
				t.Fatalf("needs %+v\nwithin %q, want %q\nreach %v, want %v", n, within, tc.within, reach, tc.reach)
			}
		})
	}
}
