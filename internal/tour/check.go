package tour

// A tour's checks: a claim about the job, held against what the UI shows
// (the verify line, the restarts, the job's status, its events).

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/runtime/view"
)

// check evaluates c until it holds or its time is up.
func (r *Runner) check(ctx context.Context, d Driver, c *Check, res *StepResult) error {
	res.Claim = c.Claim
	within := c.Within
	if within == 0 {
		within = defaultTimeout
	}
	r.setPanel(func(p *view.Tour) { p.Waiting = "checking: " + c.Claim })
	ok, why, err := r.until(ctx, d, within, func(s view.Snapshot) (bool, string) { return r.claim(c, s) }, false)
	if err != nil {
		return err
	}
	if !ok && c.Explain != "" {
		why = strings.TrimSpace(why + " — " + c.Explain)
	}
	res.OK, res.Detail = ok, why
	if ok && c.JobStatus == "FAILED" {
		r.mu.Lock()
		r.failedAsClaimed = true
		r.mu.Unlock()
	}
	r.setPanel(func(p *view.Tour) {
		p.Waiting, p.Hint = "", ""
		p.Check = &view.TourCheck{Claim: c.Claim, Held: ok, Why: why}
	})
	return nil
}

// claim reports whether c holds on s and, when not, what was seen.
func (r *Runner) claim(c *Check, s view.Snapshot) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.Duplicates != "" || c.Lost != "" {
		v := s.Verify
		if !v.Available {
			return false, "the live verification has no result yet"
		}
		// After a restore, the verification must be as of a checkpoint
		// completed after it: only then does it cover the replay.
		if n := len(r.restores); n > 0 {
			last := r.restores[n-1]
			if v.AsOf <= last.from || !r.completedAfter(last.seq, v.AsOf) {
				return false, fmt.Sprintf("the verification is as of checkpoint %d, from before the newest restore", v.AsOf)
			}
		}
		if c.Duplicates != "" && !compare(int64(v.Duplicates), c.Duplicates) {
			return false, fmt.Sprintf("duplicates %d", v.Duplicates)
		}
		// The claim is about the verify line the tour points at: it does
		// not hold while that line shows duplicates beyond at-least-once's.
		if beyond := v.Duplicates - v.DuplicatesAtLeastOnce; c.Duplicates != "" && beyond > 0 {
			return false, fmt.Sprintf("duplicates %d, %d of them beyond at-least-once's (✗ DUPLICATES on the verify line)", v.Duplicates, beyond)
		}
		if c.Lost != "" && !compare(int64(v.Lost), c.Lost) {
			return false, fmt.Sprintf("lost %d", v.Lost)
		}
	}
	if c.Restarts != "" && !compare(int64(s.Restart.Restarts), c.Restarts) {
		return false, fmt.Sprintf("%d restarts", s.Restart.Restarts)
	}
	if c.RestoredFrom != "" {
		if len(r.restores) == 0 {
			return false, "no restore yet"
		}
		last := r.restores[len(r.restores)-1]
		held := false
		switch c.RestoredFrom {
		case "newest":
			held = last.from == last.newest
		case "older":
			held = last.from < last.newest
		default:
			held = compare(last.from, c.RestoredFrom)
		}
		if !held {
			return false, fmt.Sprintf("restored from checkpoint %d, the newest completed was %d", last.from, last.newest)
		}
	}
	if c.JobStatus != "" && s.Job.Status != c.JobStatus {
		return false, "the job is " + s.Job.Status
	}
	if c.Event != "" {
		if _, ok := r.seenSince(c.Event, c.Where, r.runFrom); !ok {
			return false, "no " + strings.ReplaceAll(c.Event, "_", " ") + " event"
		}
	}
	return true, ""
}

// completedAfter reports whether a checkpoint up to id completed after
// event seq (r.mu held): a verification as of id then covers what
// happened before seq.
func (r *Runner) completedAfter(seq, id int64) bool {
	for i := len(r.recent) - 1; i >= 0 && r.recent[i].seq > seq; i-- {
		switch e := r.recent[i].ev.(type) {
		case view.CheckpointCompleted:
			if e.ID <= id {
				return true
			}
		case view.SavepointCompleted:
			if e.ID <= id {
				return true
			}
		}
	}
	return false
}

// compare reports whether n meets cmp ("0", ">0", ">=2", "<5").
func compare(n int64, cmp string) bool {
	op := strings.TrimRight(cmp, "0123456789")
	v, err := strconv.ParseInt(cmp[len(op):], 10, 64)
	if err != nil {
		return false
	}
	switch op {
	case ">":
		return n > v
	case ">=":
		return n >= v
	case "<":
		return n < v
	case "<=":
		return n <= v
	}
	return n == v
}
