package attach

import (
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// rateStale is how long a subtask's count may stand still before its rate
// is taken for 0. Flink refreshes the figures its REST API serves every
// metrics.fetcher.update-interval (10 s by default), so a rate between
// two polls a second apart is mostly 0 and now and then ten seconds' worth:
// the rate is taken between two changes of the count instead.
const rateStale = 25 * time.Second

// rates are the subtasks' input rates, each measured between the last two
// changes of its count of records in.
type rates map[string]rateSample

type rateSample struct {
	records int64
	at      time.Time
	rate    float64
	attempt int
}

// apply sets each task's RateIn in s from the counts of the samples
// before.
func (r rates) apply(s *view.Snapshot) {
	for name, t := range s.Tasks {
		last, ok := r[name]
		switch {
		case !ok || last.attempt != t.Restarts || t.RecordsIn < last.records:
			// A new subtask, or a new attempt counting afresh.
			last = rateSample{records: t.RecordsIn, at: s.Now, attempt: t.Restarts}
		case t.RecordsIn != last.records:
			if dt := s.Now.Sub(last.at).Seconds(); dt > 0 {
				last.rate = float64(t.RecordsIn-last.records) / dt
			}
			last.records, last.at = t.RecordsIn, s.Now
		case s.Now.Sub(last.at) > rateStale:
			last.rate = 0
		}
		r[name] = last
		t.RateIn = last.rate
		s.Tasks[name] = t
	}
	for name := range r {
		if _, ok := s.Tasks[name]; !ok {
			delete(r, name)
		}
	}
}
