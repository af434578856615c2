package source

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
)

// BenchmarkCheckpointingOnDisk runs the default job on disk as faultline run
// keeps it: the embedded broker's log in a directory (the input written once
// into it, the output appended to it) and the checkpoints in a Badger store
// of their own each run, alternating checkpointing off (the sink commits
// once, at the end) and exactly-once checkpoints every 2 s in each of b.N
// rounds (make bench runs three), and reports the median rates and the
// median of the rounds' ratio, on over off (goal: ≥ 0.95).
func BenchmarkCheckpointingOnDisk(b *testing.B) {
	dir := b.TempDir()
	e, c, total := filledBroker(b, filepath.Join(dir, "broker"), benchRecords)
	defer e.Close()
	b.ResetTimer()
	var off, on sideResult
	var ckpts []float64
	run := 0
	timeJob := func(s *sideResult, interval time.Duration) {
		run++
		store, err := badgerstore.Open(filepath.Join(dir, "checkpoints-"+strconv.Itoa(run)), 3)
		if err != nil {
			b.Fatal(err)
		}
		s.time("job-"+interval.String(), total, func() time.Duration {
			d, n := runJob(b, c, total, interval, store)
			if interval > 0 {
				ckpts = append(ckpts, float64(n))
			}
			return d
		})
		if err := store.Close(); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < b.N; i++ {
		timeJob(&off, 0)
		timeJob(&on, benchInterval)
	}
	off.report(b, "no-checkpoints")
	on.report(b, "exactly-once-2s")
	b.ReportMetric(medianRatio(on, off), "ratio")
	b.ReportMetric(median(ckpts), "checkpoints")
	b.ReportMetric(0, "ns/op")
}
