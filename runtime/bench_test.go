package runtime

import (
	"context"
	"testing"
	"time"

	"faultline/checkpoint"
	"faultline/runtime/barrier"
	"faultline/runtime/spec"
)

// timeRun runs the default job once over a bounded input and returns how
// long it took and how many records its sources read.
func timeRun(b *testing.B, records int64, interval time.Duration, mode barrier.Mode) (time.Duration, int64) {
	b.Helper()
	_, _, env := genEnv(1, records, 0)
	j, err := New(Config{Job: spec.Default(), Env: env, Mode: mode, Checkpoint: checkpoint.Config{Interval: interval}})
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for range j.obs.Events() {
		}
	}()
	res, err := j.Run(context.Background(), RunOptions{})
	j.obs.Close()
	if err != nil || res.Status != JobFinished {
		b.Fatalf("run: %v %v", res, err)
	}
	if interval > 0 && res.Checkpoints.Completed < 3 {
		b.Fatalf("only %d checkpoints completed; the run is too short to show their cost", res.Checkpoints.Completed)
	}
	return res.Elapsed, res.RecordsIn
}

// BenchmarkCheckpointOverhead runs the default job on the same bounded input
// with checkpointing off and with exactly-once checkpoints every second,
// alternating, and reports both rates and their ratio (goal: ≥ 0.95).
func BenchmarkCheckpointOverhead(b *testing.B) {
	const records = 3_000_000
	var offT, onT time.Duration
	var offN, onN int64
	for i := 0; i < b.N; i++ {
		d, n := timeRun(b, records, 0, barrier.ExactlyOnce)
		offT, offN = offT+d, offN+n
		d, n = timeRun(b, records, time.Second, barrier.ExactlyOnce)
		onT, onN = onT+d, onN+n
	}
	off := float64(offN) / offT.Seconds()
	on := float64(onN) / onT.Seconds()
	b.ReportMetric(off, "rec/s-no-checkpoints")
	b.ReportMetric(on, "rec/s-exactly-once-1s")
	b.ReportMetric(on/off, "ratio")
	b.ReportMetric(0, "ns/op")
}
