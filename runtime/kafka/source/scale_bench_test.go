//go:build linux

package source

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint/badgerstore"
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
	input := dirBytes(blog) // the input's log; each run adds its output to it
	for i := 0; i < b.N; i++ {
		before := dirBytes(blog)
		cdir := filepath.Join(dir, "checkpoints-"+strconv.Itoa(i))
		store, err := badgerstore.Open(cdir, 3)
		if err != nil {
			b.Fatal(err)
		}
		debug.FreeOSMemory()
		resetPeakRSS()
		s.time("job", total, func() time.Duration {
			d, _ := runJobSpec(b, c, sp, total, benchInterval, store)
			return d
		})
		rss = append(rss, float64(peakRSS()))
		if err := store.Close(); err != nil {
			b.Fatal(err)
		}
		ckptDisk = append(ckptDisk, float64(dirBytes(cdir)))
		disk = append(disk, float64(input+dirBytes(blog)-before+dirBytes(cdir)))
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

// resetPeakRSS sets the process's peak RSS (VmHWM) to its RSS now.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the process's peak RSS in bytes since resetPeakRSS, 0 when it
// cannot be read.
func peakRSS() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// dirBytes is the disk the files under dir take (their blocks: Badger's
// preallocated files are sparse).
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				}
			}
		}
		return nil
	})
	return n
}
