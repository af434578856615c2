//go:build linux

package source

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
	"github.com/faultline-dev/faultline/internal/e2e"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/spec"
)

// BenchmarkScaling runs the default job on disk as faultline run keeps it
// (the embedded broker's log and a Badger checkpoint store in a directory,
// exactly-once checkpoints every 2 s) and reports, per sub-benchmark, its
// rate, CPU time per input record, the process's peak RSS during the job
// (the broker's included, as in faultline run) and the disk a run's
// directory holds after it (the input, this run's output and its retained
// checkpoints):
//
//   - records=1M, 4M, 16M: how cost grows with the input;
//   - join=1, 2, 4, 8: the join's parallelism, on 4M records.
//
// Each value is the median of b.N runs (make bench runs three).
func BenchmarkScaling(b *testing.B) {
	for _, n := range []int64{1_000_000, 4_000_000, 16_000_000} {
		b.Run("records="+strconv.FormatInt(n/1_000_000, 10)+"M", func(b *testing.B) {
			scaleRun(b, n, orders.Default())
		})
	}
	for _, p := range []int{1, 2, 4, 8} {
		b.Run("join="+strconv.Itoa(p), func(b *testing.B) {
			sp := orders.Default()
			if err := sp.SetParallelism("join", p); err != nil {
				b.Fatal(err)
			}
			scaleRun(b, 4_000_000, sp)
		})
	}
}

// scaleRun fills a broker in a directory of its own with records input
// records, then runs sp over them b.N times, each with a checkpoint store
// of its own, and reports the medians.
func scaleRun(b *testing.B, records int64, sp *spec.Job) {
	dir := b.TempDir()
	e, c, total := filledBroker(b, filepath.Join(dir, "broker"), records)
	defer e.Close()
	b.ResetTimer()
	var s sideResult
	var rss, disk, ckptDisk []float64
	blog := filepath.Join(dir, "broker")
	input := e2e.DiskUsage(blog) // the input's log; each run adds its output to it
	for i := 0; i < b.N; i++ {
		before := e2e.DiskUsage(blog)
		cdir := filepath.Join(dir, "checkpoints-"+strconv.Itoa(i))
		store, err := badgerstore.Open(cdir, 3)
		if err != nil {
			b.Fatal(err)
		}
		debug.FreeOSMemory()
		e2e.ResetPeakRSS()
		s.time("job", total, func() time.Duration {
			d, _ := runJobSpec(b, c, sp, total, benchInterval, store)
			return d
		})
		rss = append(rss, float64(e2e.PeakRSS()))
		if err := store.Close(); err != nil {
			b.Fatal(err)
		}
		ckptDisk = append(ckptDisk, float64(e2e.DiskUsage(cdir)))
		disk = append(disk, float64(input+e2e.DiskUsage(blog)-before+e2e.DiskUsage(cdir)))
		os.RemoveAll(cdir)
	}
	b.ReportMetric(median(s.rate), "rec/s")
	if s.cpuNs[0] > 0 {
		b.ReportMetric(median(s.cpuNs), "cpu-ns/rec")
	}
	b.ReportMetric(median(s.allocs), "allocs/rec")
	b.ReportMetric(median(s.gcShare), "gc-share")
	if rss[0] > 0 {
		b.ReportMetric(median(rss)/(1<<20), "peak-rss-MB")
	}
	b.ReportMetric(median(disk)/(1<<20), "disk-MB")
	b.ReportMetric(median(ckptDisk)/(1<<20), "checkpoints-disk-MB")
	b.ReportMetric(0, "ns/op")
}
