package runtime

import (
	"context"
	"slices"
	"time"

	"github.com/faultline-dev/faultline/internal/clock"
	"github.com/faultline-dev/faultline/runtime/view"
)

// loadEvery is how often a run reports its subtasks' load (task_load)
// unless Config.LoadEvery says otherwise.
const loadEvery = 5 * time.Second

// startLoadReports reports the subtasks' load every loadEvery on the wall
// clock until ctx ends or the func it returns is called, which waits for
// the reporting goroutine to end.
func (j *Job) startLoadReports(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		j.reportLoad(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// loadSample is what a subtask's load over a period is computed from.
type loadSample struct {
	at        time.Time
	idle, bp  int64
	seenStart bool
}

// reportLoad emits a task_load event every LoadEvery until ctx ends: each
// running subtask's busy, idle and back-pressured ms per second since the
// last report (Flink's busyTimeMsPerSecond and its siblings), its records
// in and out and its input watermark.
func (j *Job) reportLoad(ctx context.Context) {
	names := make([]string, 0, len(j.metrics))
	for name := range j.metrics {
		names = append(names, name)
	}
	slices.Sort(names)
	prev := map[string]loadSample{}
	every := j.cfg.LoadEvery
	if every <= 0 {
		every = loadEvery
	}
	for {
		after, tm := clock.After(j.wall, every)
		select {
		case <-ctx.Done():
			tm.Stop()
			return
		case <-after:
		}
		now := j.wall.Now()
		var ev view.TaskLoad
		for _, name := range names {
			m := j.metrics[name]
			cur := loadSample{at: now, idle: m.Idle(now), bp: m.BackPressured(now), seenStart: true}
			p := prev[name]
			prev[name] = cur
			if !p.seenStart || m.Status() != TaskRunning {
				continue
			}
			ev.Tasks = append(ev.Tasks, subtaskLoad(name, m, p, cur))
		}
		if len(ev.Tasks) > 0 {
			j.obs.Emit(ev)
		}
	}
}

// subtaskLoad is the load of subtask name from sample p to cur, in ms per
// second: what was neither idle nor back-pressured was busy.
func subtaskLoad(name string, m *TaskMetrics, p, cur loadSample) view.SubtaskLoad {
	dt := float64(cur.at.Sub(p.at))
	share := func(ns int64) float64 { return min(max(float64(ns)/dt, 0), 1) }
	// A wait counts when it ends: one begun in the last period adds to
	// this one's idle time, which can then overrun the period.
	bp := share(cur.bp - p.bp)
	idle := min(share(cur.idle-p.idle), 1-bp)
	busy := max(1-idle-bp, 0)
	ms := func(f float64) int64 { return int64(f*1000 + 0.5) }
	return view.SubtaskLoad{Task: name, BusyMsPerSecond: ms(busy), IdleMsPerSecond: ms(idle), BackPressuredMsPerSecond: ms(bp),
		RecordsIn: m.RecordsIn.Load(), RecordsOut: m.RecordsOut.Load(), WatermarkMs: m.Watermark.Load()}
}
