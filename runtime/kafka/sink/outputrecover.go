package sink

import (
	"context"
	"fmt"
	"strconv"
	"strings"

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

// Missing returns the records of recs that the committed output lacks at
// or after where the transaction of committable began, in every partition:
// what a transaction the broker no longer knows left unwritten. None when it
// committed after all (just before a crash, or as a redo); all when it was
// aborted; some when a commit reached only some of its partitions. Records
// are matched by key and value, each as often as it occurs. It gives up
// when ctx ends.
func (o *Output) Missing(ctx context.Context, committable string, recs []runtime.OutputRecord) ([]runtime.OutputRecord, error) {
	parts := strings.Split(committable, "|")
	if len(parts) != 4 {
		return nil, fmt.Errorf("committable %q is not transactional-id|producer-id|epoch|offsets", committable)
	}
	from, err := decodeFrom(parts[3])
	if err != nil {
		return nil, err
	}
	there, err := kafka.ReadCommitted(ctx, o.c, o.topic, from)
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
