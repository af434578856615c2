package runtime

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/barrier"
	"github.com/faultline-dev/faultline/runtime/fault"
	"github.com/faultline-dev/faultline/runtime/view"
)

// backPressuredCheckpoints runs the default job at 20,000 records/s with
// join/0 slowed tenfold for the whole run, so that its input channels and
// those behind them stay full, and returns the durations of the
// checkpoints that completed while it was slowed, and the in-flight data
// the unaligned ones stored.
func backPressuredCheckpoints(b *testing.B, unaligned bool) ([]time.Duration, int64) {
	b.Helper()
	const rate, seconds = 20_000, 8
	_, _, env := genEnv(1, rate*seconds, rate)
	slow, err := fault.Parse("after-records=20000,task=join/0,fault=slow,factor=10,for=60s")
	if err != nil {
		b.Fatal(err)
	}
	j, err := New(Config{Types: testJob.Types, Job: testJob.Spec(), Env: env, Unaligned: unaligned, Faults: []Fault{slow},
		Checkpoint: checkpoint.Config{Interval: 200 * time.Millisecond, Timeout: time.Minute},
		Observer:   NewObserver(nil, 1<<16)})
	if err != nil {
		b.Fatal(err)
	}
	var persisted int64
	var slowedAt time.Time // on the job's clock, the wall clock here
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range j.obs.Events() {
			switch ev := e.Event.(type) {
			case view.TaskSlowed:
				slowedAt = time.Now()
			case view.CheckpointCompleted:
				if !slowedAt.IsZero() {
					persisted = max(persisted, ev.PersistedInFlightBytes)
				}
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), (seconds+4)*time.Second)
	defer cancel()
	res, err := j.Run(ctx, RunOptions{})
	if err != nil {
		b.Fatal(err)
	}
	j.obs.Close()
	<-done
	var durations []time.Duration
	for _, c := range res.Checkpoints.History {
		if c.Status == checkpoint.StatusCompleted && c.Kind == checkpoint.KindCheckpoint && c.TriggerTime.After(slowedAt) {
			durations = append(durations, c.EndTime.Sub(c.TriggerTime))
		}
	}
	if len(durations) < 3 {
		b.Fatalf("unaligned %v: only %d checkpoints completed while join/0 was slowed", unaligned, len(durations))
	}
	return durations, persisted
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkUnalignedUnderBackPressure measures, side by side in one run,
// how long checkpoints take while one join subtask is slowed tenfold:
// aligned barriers wait behind every record queued in the channels on
// their way, unaligned ones overtake them (goal: unaligned at least 5×
// faster). It reports both medians, their ratio, and the most in-flight
// data one unaligned checkpoint stored.
func BenchmarkUnalignedUnderBackPressure(b *testing.B) {
	var aligned, unaligned []time.Duration
	var persisted int64
	for i := 0; i < b.N; i++ {
		d, _ := backPressuredCheckpoints(b, false)
		aligned = append(aligned, d...)
		d, p := backPressuredCheckpoints(b, true)
		unaligned = append(unaligned, d...)
		persisted = max(persisted, p)
	}
	a, u := median(aligned), median(unaligned)
	b.ReportMetric(float64(a.Microseconds())/1000, "ms-aligned")
	b.ReportMetric(float64(u.Microseconds())/1000, "ms-unaligned")
	b.ReportMetric(float64(a)/float64(max(u, time.Microsecond)), "aligned/unaligned")
	b.ReportMetric(float64(persisted), "in-flight-bytes")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkUnalignedThroughput runs the default job on the same bounded
// input with aligned and with unaligned checkpoints every second,
// alternating, with nothing slowed: the cost of unaligned checkpoints when
// there is no back-pressure to overtake (ratio unaligned/aligned).
func BenchmarkUnalignedThroughput(b *testing.B) {
	const records = 6_000_000
	var at, ut time.Duration
	var an, un int64
	for i := 0; i < b.N; i++ {
		d, n := timeRunWith(b, records, time.Second, barrier.ExactlyOnce, false)
		at, an = at+d, an+n
		d, n = timeRunWith(b, records, time.Second, barrier.ExactlyOnce, true)
		ut, un = ut+d, un+n
	}
	a := float64(an) / at.Seconds()
	u := float64(un) / ut.Seconds()
	b.ReportMetric(a, "rec/s-aligned")
	b.ReportMetric(u, "rec/s-unaligned")
	b.ReportMetric(u/a, "ratio")
	b.ReportMetric(0, "ns/op")
}
