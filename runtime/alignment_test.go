package runtime

import (
	"context"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/spec"
)

func TestAligningWatermark(t *testing.T) {
	for _, c := range []struct {
		name  string
		wm     int64
		quiet  time.Duration
		behind bool
		atEnd  bool
		want   int64
	}{
		{"reading", 5000, 0, false, false, 5000},
		{"a poll that found nothing", 5000, alignIdle - time.Millisecond, false, false, 5000},
		{"quiet", 5000, alignIdle, false, false, 0},
		{"long without records, records waiting: a slow fetch", 5000, 10 * alignIdle, true, false, 5000},
		{"at its end", 5000, 0, false, true, 0},
		{"every partition ended", math.MaxInt64, 0, false, false, 0},
		{"no watermark yet", 0, 0, false, false, 0},
	} {
		if got := aligningWatermark(c.wm, c.quiet, c.behind, c.atEnd); got != c.want {
			t.Errorf("%s: aligningWatermark(%d, %v, %v, %v) = %d, want %d", c.name, c.wm, c.quiet, c.behind, c.atEnd, got, c.want)
		}
	}
	for _, c := range []struct {
		wm, least, drift int64
		want             bool
	}{
		{1000, 1000, 0, false}, // the slowest itself
		{1500, 1000, 500, false},
		{1501, 1000, 500, true},
		{1501, 0, 500, false}, // nobody to wait for
		{0, 1000, 500, false}, // not taking part
	} {
		if got := aheadBy(c.wm, c.least, c.drift); got != c.want {
			t.Errorf("aheadBy(%d, %d, %d) = %v, want %v", c.wm, c.least, c.drift, got, c.want)
		}
	}
}

// A source that reads far faster than another is held within the drift of
// it: each time a subtask of the fast source polls, it is at most the
// drift ahead of the slow source's slowest subtask. Without alignment the
// fast source reads to its end while the slow one has barely begun.
func TestWatermarkAlignmentHoldsTheFastSourceBack(t *testing.T) {
	const drift = 20 // ms of event time
	for _, aligned := range []bool{true, false} {
		worst := runTimedSources(t, aligned, drift)
		t.Logf("aligned %v: the fast source polled at most %d ms ahead of the slow one", aligned, worst)
		if aligned && worst > drift {
			t.Errorf("aligned: the fast source polled %d ms of event time ahead of the slow one, more than the %d ms drift", worst, drift)
		}
		if !aligned && worst < 20*drift {
			t.Errorf("not aligned: the fast source was only %d ms ahead: the test does not tell alignment from none", worst)
		}
	}
}

// runTimedSources runs the test job with the orders read at full speed
// and the payments eight records a millisecond, both stamped a millisecond of
// event time a record, and returns how far ahead of the slowest payments
// subtask an orders subtask was at most when it polled.
func runTimedSources(t *testing.T, aligned bool, drift time.Duration) int64 {
	var worst int64
	synctest.Test(t, func(t *testing.T) {
		_, _, env := genEnv(1, 40000, 0)
		g := &timedGroup{}
		env.Sources[topicOrders] = &timedSource{Source: env.Sources[topicOrders], g: g}
		env.Sources[topicPayments] = &timedSource{Source: env.Sources[topicPayments], g: g, slow: true}
		job := testJob.Spec()
		for _, op := range job.Operators {
			if op.Type == spec.TypeSource && aligned {
				op.WatermarkAlignment = drift * time.Millisecond
			}
		}
		j, err := New(Config{Types: testJob.Types, Job: job, Env: env, Checkpoint: checkpoint.Config{Interval: 50 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for range j.obs.Events() {
			}
		}()
		defer j.obs.Close()
		if _, err := j.Run(context.Background(), RunOptions{}); err != nil {
			t.Fatal(err)
		}
		worst = g.worst
	})
	return worst
}

// timedGroup is what the timed readers share: the slow ones' watermarks,
// and the most a fast one was ahead of the least of them when it polled.
type timedGroup struct {
	mu    sync.Mutex
	slow  []*timedReader
	worst int64
}

// timedSource stamps its records with event times, a millisecond a
// record, as a Kafka source stamps its records with their timestamps.
type timedSource struct {
	Source
	g    *timedGroup
	slow bool
}

func (s *timedSource) Reader(parts []int32, offs map[int32]int64) (SourceReader, error) {
	r, err := s.Source.Reader(parts, offs)
	if err != nil {
		return nil, err
	}
	tr := &timedReader{SourceReader: r, src: s}
	if s.slow {
		s.g.mu.Lock()
		s.g.slow = append(s.g.slow, tr)
		s.g.mu.Unlock()
	}
	return tr, nil
}

type timedReader struct {
	SourceReader
	src   *timedSource
	n     int64
	wm    int64 // read by the fast readers: under g.mu
	times EventTimes
}

const timedSlowBatch = 8

const timedBase = 1_700_000_000_000 // event time of the first record, Unix ms

func (r *timedReader) Poll(ctx context.Context, dst []Record, n int) ([]Record, bool, error) {
	g := r.src.g
	if r.src.slow {
		n = min(n, timedSlowBatch)
		if r.n > 0 {
			time.Sleep(time.Millisecond)
		}
	} else {
		g.mu.Lock()
		least := int64(math.MaxInt64)
		for _, s := range g.slow {
			least = min(least, s.wm)
		}
		if r.wm > 0 && least > 0 && len(g.slow) == 2 && least != math.MaxInt64 {
			g.worst = max(g.worst, r.wm-least)
		}
		g.mu.Unlock()
	}
	from := len(dst)
	dst, done, err := r.SourceReader.Poll(ctx, dst, n)
	for i := from; i < len(dst); i++ {
		r.n++
		dst[i].Value = r.times.New(timedBase+r.n, timedBase+r.n, Origin{})
	}
	g.mu.Lock()
	if len(dst) > from {
		r.wm = timedBase + r.n
	}
	if done && r.src.slow {
		r.wm = math.MaxInt64 // at its end: holds nobody back
	}
	g.mu.Unlock()
	return dst, done, err
}

func (r *timedReader) Watermark() int64 {
	r.src.g.mu.Lock()
	defer r.src.g.mu.Unlock()
	if r.wm == 0 {
		return 0
	}
	return r.wm
}
