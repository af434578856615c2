package sink

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka"
)

// What a sink's recovery asks of the output besides commits and aborts:
// what the committed output holds.

// CommittedFrom reads the committed output from the given offsets (missing
// partitions: the start) to its end.
func (o *Output) CommittedFrom(ctx context.Context, from map[int32]int64) ([]runtime.OutputRecord, error) {
	return kafka.ReadCommitted(ctx, o.c, o.topic, from)
}

// Prepared reads back the records of the transaction of committable from
// the topic's log, whether it was committed or aborted since: those its
// producer id wrote at its epoch from where the transaction began, in
// every partition (kafka.TxnRecords). A broker keeps an aborted
// transaction's records until its retention deletes them; the embedded
// broker's retention keeps what the retained checkpoints' pre-committed
// transactions wrote. It gives up when ctx ends.
func (o *Output) Prepared(ctx context.Context, committable string) ([]runtime.OutputRecord, error) {
	c, err := parseCommittable(committable)
	if err != nil {
		return nil, err
	}
	var recs []runtime.OutputRecord
	for _, p := range slices.Sorted(maps.Keys(c.from)) {
		end, wrote := c.ends[p]
		switch {
		case c.ends == nil:
			end = -1 // not known: up to its marker
		case !wrote:
			continue // the transaction wrote nothing there
		}
		err := kafka.TxnRecords(ctx, o.cl, o.topic, p, c.from[p], end, c.pid, c.epoch, func(r runtime.OutputRecord) error {
			recs = append(recs, r)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("records of transaction %s: %w", c.txn, err)
		}
	}
	return recs, nil
}

// Missing returns the records of recs that the committed output lacks at
// or after where the transaction of committable began, in every partition:
// what a transaction the broker no longer knows left unwritten. None when it
// committed after all (just before a crash, or as a redo); all when it was
// aborted; some when a commit reached only some of its partitions. Records
// are matched by key and value, each as often as it occurs. It gives up
// when ctx ends.
func (o *Output) Missing(ctx context.Context, committable string, recs []runtime.OutputRecord) ([]runtime.OutputRecord, error) {
	c, err := parseCommittable(committable)
	if err != nil {
		return nil, err
	}
	there, err := kafka.ReadCommitted(ctx, o.c, o.topic, c.from)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]int, len(there))
	for _, x := range there {
		seen[recordKey(x)]++
	}
	var missing []runtime.OutputRecord
	for _, r := range recs {
		k := recordKey(r)
		if seen[k] > 0 {
			seen[k]--
			continue
		}
		missing = append(missing, r)
	}
	if len(missing) == 0 {
		o.noteWhole(committable)
	}
	return missing, nil
}

// recordKey is a record's key and value as one map key.
func recordKey(r runtime.OutputRecord) string {
	return strconv.Itoa(len(r.Key)) + ":" + string(r.Key) + string(r.Value)
}

// maxWhole bounds how many committables an output remembers as whole: a
// recovery adds those of the checkpoint it restores, one per sink subtask
// and transaction, and forgetting one costs only a read of the output.
const maxWhole = 4096

// noteWhole remembers that the committed output holds every record of c,
// so that committing c again (a stopped run settling its outputs after it
// restored them) is nothing to do: the broker would answer that it no
// longer knows the transaction, and the sink would read the output again.
func (o *Output) noteWhole(c string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.whole) >= maxWhole {
		clear(o.whole)
	}
	o.whole[c] = true
}
