package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/checkpoint"
)

func TestConfirm(t *testing.T) {
	const warning = "checkpoint 7 is the newest of job orders: …."
	tests := []struct {
		name     string
		terminal bool
		yes      bool
		input    string
		want     bool
		usage    bool
	}{
		{"yes flag", false, true, "", true, false},
		{"no terminal", false, false, "y\n", false, true},
		{"answers y", true, false, "y\n", true, false},
		{"answers YES", true, false, " YES \n", true, false},
		{"answers n", true, false, "n\n", false, false},
		{"just enter", true, false, "\n", false, false},
		{"end of input", true, false, "", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			got, err := confirm(&out, strings.NewReader(tc.input), tc.terminal, tc.yes, warning)
			var ue usageError
			if got != tc.want || errors.As(err, &ue) != tc.usage || (err != nil && !tc.usage) {
				t.Errorf("confirm = %v, %v; want %v, usage error %v", got, err, tc.want, tc.usage)
			}
			if tc.terminal && !strings.Contains(out.String(), warning+"\nDelete it? [y/N] ") {
				t.Errorf("asked %q", out.String())
			}
		})
	}
}

func TestDeleteCost(t *testing.T) {
	cp := func(id int64, kind checkpoint.Kind, job string, orders ...int64) *checkpoint.Completed {
		offs := checkpoint.Offsets{"orders": {}}
		for p, o := range orders {
			offs["orders"][int32(p)] = o
		}
		return &checkpoint.Completed{ID: id, Kind: kind, Job: job,
			Tasks: map[checkpoint.TaskID]checkpoint.SubtaskAck{{Operator: "orders-source", Index: 0}: {Offsets: offs}}}
	}
	all := []*checkpoint.Completed{
		cp(3, checkpoint.KindCheckpoint, "orders", 100, 200),
		cp(4, checkpoint.KindSavepoint, "orders", 150, 250),
		cp(5, checkpoint.KindCheckpoint, "pipeline", 9, 9),
		cp(6, checkpoint.KindCheckpoint, "orders", 30150, 30250),
		cp(8, checkpoint.KindSavepoint, "pipeline", 9, 9),
	}
	for id, want := range map[int64]string{
		6: "checkpoint 6 is the newest of job orders: a resumed run will go back to savepoint 4 and read again the 60,000 input records after it",
		3: "", // older
		4: "", // a savepoint
		5: "", // a savepoint of its job is newer
		9: "", // unknown
	} {
		if got := deleteCost(all, id, false); !strings.HasPrefix(got, want) || (want == "") != (got == "") {
			t.Errorf("deleteCost(%d) = %q, want %q…", id, got, want)
		}
	}
	if got := deleteCost(all[:1], 3, false); !strings.Contains(got, "from the beginning and read again all the 300 input records") {
		t.Errorf("deleteCost of the only checkpoint = %q", got)
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 60396: "60,396", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
