package runtime

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/barrier"
	"github.com/faultline-dev/faultline/runtime/view"
)

// timeRun runs the default job once over a bounded input and returns how
// long it took and how many records its sources read.
func timeRun(b *testing.B, records int64, interval time.Duration, mode barrier.Mode) (time.Duration, int64) {
	b.Helper()
	return timeRunWith(b, records, interval, mode, false)
}

// timeRunWith is timeRun, with unaligned checkpoints when unaligned.
func timeRunWith(b *testing.B, records int64, interval time.Duration, mode barrier.Mode, unaligned bool) (time.Duration, int64) {
	b.Helper()
	_, _, env := genEnv(1, records, 0)
	j, err := New(Config{Types: testJob.Types, Job: testJob.Spec(), Env: env, Mode: mode, Unaligned: unaligned, Checkpoint: checkpoint.Config{Interval: interval}})
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
	// Long enough for several checkpoints at the 2M records/s the job now
	// reaches on two cores.
	const records = 8_000_000
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

// BenchmarkRecoveryTime measures, on the default job, the time from a
// task's failure to every restarted task running again (minus the restart
// delay, which is 0 here), over 20 failures of the join, once its heap state
// holds about 100,000 keys (the unpaid orders it keeps waiting for a
// payment). It reports the median and the slowest of the 20.
func BenchmarkRecoveryTime(b *testing.B) {
	const failures = 20
	var all []time.Duration
	keys := 0
	for i := 0; i < b.N; i++ {
		d, k := recoveryRun(b, failures)
		all = append(all, d...)
		keys = k
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(all[len(all)-1].Microseconds())/1000, "ms-max")
	b.ReportMetric(float64(keys), "join-keys")
	b.ReportMetric(0, "ns/op")
}

func recoveryRun(b *testing.B, failures int) ([]time.Duration, int) {
	b.Helper()
	const records = 6_000_000
	gen, _, env := genEnv(1, records, 150_000)
	j, err := New(Config{Types: testJob.Types, Job: testJob.Spec(), Env: env, Checkpoint: checkpoint.Config{Interval: 200 * time.Millisecond},
		Restart: restart.NewFixedDelay(1000, 0), Observer: NewObserver(nil, 1<<20)})
	if err != nil {
		b.Fatal(err)
	}
	failedCh := make(chan time.Duration, 64)
	runningCh := make(chan time.Duration, 64)
	go func() {
		running := map[int64]int{}
		for e := range j.obs.Events() {
			switch ev := e.Event.(type) {
			case view.TaskFailed:
				failedCh <- e.At
			case view.TaskStatus:
				if ev.Status == string(TaskRunning) {
					n := ev.Attempt
					if running[n]++; running[n] == 13 && n > 1 {
						runningCh <- e.At
					}
				}
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		j.Run(ctx, RunOptions{})
	}()
	// Wait for the state: about 1.1 million orders read, a tenth of them
	// unpaid and waiting in the join.
	for j.in.Load() < 2_100_000 {
		time.Sleep(10 * time.Millisecond)
	}
	orders := j.in.Load() / 2
	keys := 0
	for i := int64(0); i < orders; i++ {
		if !gen.Paid(i) {
			keys++
		}
	}
	var out []time.Duration
	for k := 0; k < failures; k++ {
		time.Sleep(300 * time.Millisecond)
		if err := j.Inject(Fault{Kind: FaultPanic, Task: "join/" + strconv.Itoa(k%2)}); err != nil {
			b.Fatal(err)
		}
		at := <-failedCh
		up := <-runningCh
		out = append(out, up-at)
	}
	cancel()
	<-done
	j.obs.Close()
	return out, keys
}
