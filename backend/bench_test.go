package backend

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func benchKey(i int) string { return fmt.Sprintf("k-%08d", i) }

func benchValue(i, gen int) []byte { return fmt.Appendf(nil, "amount=%d;gen=%d", i, gen) }

// BenchmarkSnapshotSizes measures, side by side in one run, for the heap and
// the Badger backend at 100,000 and 1,000,000 keys: the size of a
// full snapshot and its duration (synchronous part + Encode), and for Badger
// an incremental snapshot after 1% of the keys changed (half overwritten, a
// quarter deleted, a quarter new). Metrics: <backend>-<keys>-<what>-{B,ms};
// incr-pct is the delta's size in percent of the full snapshot's.
func BenchmarkSnapshotSizes(b *testing.B) {
	b.StopTimer()
	for _, n := range []int{100_000, 1_000_000} {
		snapshotCosts(b, n, fmt.Sprintf("%dk", n/1000), benchValue)
	}
}

// BenchmarkSnapshotScaling is BenchmarkSnapshotSizes over states of about
// 10 MB, 100 MB and 1 GB (a full snapshot's size), with values of 100
// bytes: how a checkpoint's duration and size grow with the state, for the
// heap, Badger full and Badger incremental. Metrics as there, labelled
// with the state's size.
func BenchmarkSnapshotScaling(b *testing.B) {
	b.StopTimer()
	for _, s := range []struct {
		label string
		keys  int
	}{{"10MB", 85_000}, {"100MB", 850_000}, {"1GB", 8_500_000}} {
		snapshotCosts(b, s.keys, s.label, paddedValue)
	}
}

// paddedValue is benchValue padded to 100 bytes.
func paddedValue(i, gen int) []byte {
	v := benchValue(i, gen)
	return append(v, make([]byte, max(100-len(v), 0))...)
}

// snapshotCosts fills a heap and a Badger backend with n keys of value's
// values and reports, labelled label, the size and duration of a full
// snapshot of each and of Badger's incremental one after 1 % of the keys
// changed.
func snapshotCosts(b *testing.B, n int, label string, value func(i, gen int) []byte) {
	kgs := RangeFor(DefaultMaxParallelism, 1, 0)
	full := func(name string, kb KeyedBackend) int {
		var sync, total time.Duration
		size := 0
		for range b.N {
			b.StartTimer()
			start := time.Now()
			s := kb.Snapshot()
			sync += time.Since(start)
			enc, err := s.Encode()
			total += time.Since(start)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			size = len(enc)
		}
		b.ReportMetric(float64(size), fmt.Sprintf("%s-%s-full-B", name, label))
		b.ReportMetric(ms(total)/float64(b.N), fmt.Sprintf("%s-%s-full-ms", name, label))
		b.ReportMetric(ms(sync)/float64(b.N), fmt.Sprintf("%s-%s-full-sync-ms", name, label))
		return size
	}

	h := NewHeap(DefaultMaxParallelism, kgs)
	for i := range n {
		h.SetCurrentKey(benchKey(i))
		h.Put("v", "", value(i, 0))
	}
	full("heap", h)

	bd := openBadger(b, DefaultMaxParallelism, kgs)
	for i := range n {
		bd.SetCurrentKey(benchKey(i))
		bd.Put("v", "", value(i, 0))
	}
	fullSize := full("badger", bd)

	changes := n / 100
	r := rand.New(rand.NewPCG(1, uint64(n)))
	perm := r.Perm(n)
	next := n // the next new key
	var sync, total time.Duration
	size := 0
	for j := range b.N {
		_ = bd.Snapshot() // the base of the delta
		batch := perm[(j*changes)%(n-changes):][:changes]
		for _, i := range batch[:changes/2] {
			bd.SetCurrentKey(benchKey(i))
			bd.Put("v", "", value(i, j+1))
		}
		for _, i := range batch[changes/2 : changes/2+changes/4] {
			bd.SetCurrentKey(benchKey(i))
			bd.Delete("v", "")
		}
		for range changes - changes/2 - changes/4 {
			bd.SetCurrentKey(benchKey(next))
			bd.Put("v", "", value(next, j+1))
			next++
		}
		b.StartTimer()
		start := time.Now()
		s := bd.SnapshotIncremental()
		sync += time.Since(start)
		enc, err := s.Encode()
		total += time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		size = len(enc)
	}
	b.ReportMetric(float64(size), fmt.Sprintf("badger-%s-incr-B", label))
	b.ReportMetric(ms(total)/float64(b.N), fmt.Sprintf("badger-%s-incr-ms", label))
	b.ReportMetric(ms(sync)/float64(b.N), fmt.Sprintf("badger-%s-incr-sync-ms", label))
	b.ReportMetric(100*float64(size)/float64(fullSize), fmt.Sprintf("badger-%s-incr-pct", label))
	if err := bd.Close(); err != nil {
		b.Fatal(err)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkKeyedGetPut is what a keyed operator does per record: read the
// current key's value and write it back, here over 100,000 keys in random
// order (ns/op is per record; records/s is 1e9 divided by it).
func BenchmarkKeyedGetPut(b *testing.B) {
	const keys = 100_000
	names := make([]string, keys)
	for i := range names {
		names[i] = benchKey(i)
	}
	order := rand.New(rand.NewPCG(2, 2)).Perm(keys)
	for _, kind := range backendKinds[:2] {
		b.Run(kind.name, func(b *testing.B) {
			kb := kind.open(b, DefaultMaxParallelism, RangeFor(DefaultMaxParallelism, 1, 0))
			for i, k := range names {
				kb.SetCurrentKey(k)
				kb.Put("v", "", benchValue(i, 0))
			}
			total := NewValue[int64](kb, "total", Int64Codec{})
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				kb.SetCurrentKey(names[order[i%keys]])
				v, _, err := total.Get()
				if err != nil {
					b.Fatal(err)
				}
				total.Update(v + 1)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkKeyedPutNew writes entries of new keys only: the write path of a
// state that grows.
func BenchmarkKeyedPutNew(b *testing.B) {
	for _, kind := range backendKinds[:2] {
		b.Run(kind.name, func(b *testing.B) {
			kb := kind.open(b, DefaultMaxParallelism, RangeFor(DefaultMaxParallelism, 1, 0))
			names := make([]string, b.N)
			for i := range names {
				names[i] = benchKey(i)
			}
			value := benchValue(1, 0)
			b.ReportAllocs()
			b.ResetTimer()
			for _, k := range names {
				kb.SetCurrentKey(k)
				kb.Put("v", "", value)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
		})
	}
}
