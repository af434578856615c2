package broker

import "testing"

// How a segment may end: the last one of a partition as a kill leaves it
// (a batch cut off with no entry for it, or a whole batch whose entry is
// missing or cut off, or nothing written yet), any other one whole.
func TestScanEndAllowsOnlyWhatAKillLeaves(t *testing.T) {
	for _, tc := range []struct {
		name                            string
		idx                             bool
		batches, cut, entries, cutEntry int
		last, ok                        bool
	}{
		{name: "whole", idx: true, batches: 3, entries: 3, ok: true},
		{name: "whole, last", idx: true, batches: 3, entries: 3, last: true, ok: true},
		{name: "a batch cut off", idx: true, batches: 3, cut: 40, entries: 3, last: true, ok: true},
		{name: "an entry missing", idx: true, batches: 3, entries: 2, last: true, ok: true},
		{name: "an entry cut off", idx: true, batches: 3, entries: 2, cutEntry: 7, last: true, ok: true},
		{name: "new and empty", last: true, ok: true},
		{name: "new and empty, with its index", idx: true, last: true, ok: true},
		{name: "a batch cut off, not last", idx: true, batches: 3, cut: 40, entries: 3},
		{name: "an entry missing, not last", idx: true, batches: 3, entries: 2},
		{name: "empty, not last", idx: true},
		{name: "two entries missing", idx: true, batches: 3, entries: 1, last: true},
		{name: "a batch cut off that the index lists", idx: true, batches: 3, cut: 40, entries: 4, last: true},
		{name: "a batch cut off and an entry missing", idx: true, batches: 3, cut: 40, entries: 2, last: true},
		{name: "whole batches cut off", idx: true, batches: 3, entries: 5, last: true},
		{name: "no index", batches: 3, last: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := segmentFile{name: "0.dat", hasIdx: tc.idx, dat: make([]byte, 100*tc.batches+tc.cut)}
			err := scanEnd(s, segmentScan{batches: tc.batches, cut: tc.cut, entries: tc.entries, cutEntry: tc.cutEntry}, tc.last)
			if (err == nil) != tc.ok {
				t.Fatalf("scanEnd: %v, want ok %t", err, tc.ok)
			}
		})
	}
}
