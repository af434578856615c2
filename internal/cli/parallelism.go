package cli

import (
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/runtime/spec"
)

// setParallelisms applies --parallelism and --default-parallelism
// (parallelism.default: the operators the spec gives no parallelism and
// --parallelism does not name) to job.
func (o *runOptions) setParallelisms(job *spec.Job) error {
	ps := map[string]int{}
	for _, kv := range o.parallelism {
		name, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return usagef("--parallelism %q: want operator=N, e.g. join=3", kv)
		}
		ps[name] = n
	}
	if o.defaultParallelism < 0 {
		return usagef("--default-parallelism %d: want 1 or more (0: the job spec's)", o.defaultParallelism)
	}
	if o.defaultParallelism > 0 {
		for _, op := range job.Operators {
			if _, named := ps[op.Name]; !named && !op.ParallelismSet {
				ps[op.Name] = o.defaultParallelism
			}
		}
	}
	if len(ps) == 0 {
		return nil
	}
	if err := job.SetParallelisms(ps); err != nil {
		return usagef("--parallelism: %v", err)
	}
	return nil
}
