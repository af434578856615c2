package source

import (
	"context"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"testing"
	"time"
)

// sideResult is one side of a comparison over the rounds: what it cost in
// each round, per input record where it says so.
type sideResult struct {
	rate     []float64 // records/s
	cpuNs    []float64 // the process's CPU time per record
	gcShare  []float64 // the GC's share of that CPU time
	allocs   []float64 // heap allocations per record
	bytes    []float64 // heap bytes allocated per record
	lockNs   []float64 // time goroutines waited on sync.Mutex/RWMutex per record
	schedLat []float64 // mean time a goroutine waited to run, ns
}

// costSamples are the runtime's counters time reads before and after a
// side: CPU time, GC CPU time, allocations, bytes, mutex wait and the
// scheduling latency histogram.
var costSamples = []string{
	"/cpu/classes/total:cpu-seconds",
	"/cpu/classes/gc/total:cpu-seconds",
	"/gc/heap/allocs:objects",
	"/gc/heap/allocs:bytes",
	"/sync/mutex/wait/total:seconds",
	"/sched/latencies:seconds",
}

func readCost() []metrics.Sample {
	s := make([]metrics.Sample, len(costSamples))
	for i, n := range costSamples {
		s[i].Name = n
	}
	metrics.Read(s)
	return s
}

// time runs f, which reads total records, and adds what it cost to s. f
// runs with the profiler label side (the job's tasks carry their
// operator's instead, the broker "broker"): a CPU profile of a benchmark
// (-cpuprofile, then go tool pprof -tags) splits by them. With
// FAULTLINE_BENCH_PROFILES set to a directory, each side's last round
// also writes its own CPU profile there (side.cpu.pprof).
func (s *sideResult) time(side string, total int64, f func() time.Duration) {
	if dir := os.Getenv("FAULTLINE_BENCH_PROFILES"); dir != "" {
		if out, err := os.Create(filepath.Join(dir, side+".cpu.pprof")); err == nil {
			if pprof.StartCPUProfile(out) == nil {
				defer func() { pprof.StopCPUProfile(); out.Close() }()
			} else {
				out.Close()
			}
		}
	}
	c0, m0 := processCPU(), readCost()
	var d time.Duration
	pprof.Do(context.Background(), pprof.Labels("side", side), func(context.Context) { d = f() })
	c1, m1 := processCPU(), readCost()
	n := float64(total)
	s.rate = append(s.rate, n/d.Seconds())
	s.cpuNs = append(s.cpuNs, float64((c1-c0).Nanoseconds())/n)
	f64 := func(i int) float64 { return m1[i].Value.Float64() - m0[i].Value.Float64() }
	u64 := func(i int) float64 { return float64(m1[i].Value.Uint64() - m0[i].Value.Uint64()) }
	s.gcShare = append(s.gcShare, f64(1)/max(f64(0), 1e-9))
	s.allocs = append(s.allocs, u64(2)/n)
	s.bytes = append(s.bytes, u64(3)/n)
	s.lockNs = append(s.lockNs, f64(4)*1e9/n)
	s.schedLat = append(s.schedLat, meanLatency(m0[5].Value.Float64Histogram(), m1[5].Value.Float64Histogram()))
}

// meanLatency is the mean of the observations added to a histogram between
// a and b, in nanoseconds, each bucket's at its lower bound.
func meanLatency(a, b *metrics.Float64Histogram) float64 {
	var sum, count float64
	for i, c := range b.Counts {
		d := float64(c - a.Counts[i])
		sum += d * max(b.Buckets[i], 0)
		count += d
	}
	if count == 0 {
		return 0
	}
	return sum / count * 1e9
}

// report reports s's medians with the side's name after each unit.
func (s *sideResult) report(b *testing.B, side string) {
	b.ReportMetric(median(s.rate), "rec/s-"+side)
	if s.cpuNs[0] > 0 {
		b.ReportMetric(median(s.cpuNs), "cpu-ns/rec-"+side)
	}
	b.ReportMetric(median(s.gcShare), "gc-share-"+side)
	b.ReportMetric(median(s.allocs), "allocs/rec-"+side)
	b.ReportMetric(median(s.bytes), "B/rec-"+side)
	b.ReportMetric(median(s.lockNs), "lock-ns/rec-"+side)
	b.ReportMetric(median(s.schedLat), "sched-ns-"+side)
}

// median is the median of xs (the mean of the middle two when even).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// medianRatio is the median over the rounds of a's rate over b's.
func medianRatio(a, b sideResult) float64 {
	r := make([]float64, len(a.rate))
	for i := range r {
		r[i] = a.rate[i] / b.rate[i]
	}
	return median(r)
}
