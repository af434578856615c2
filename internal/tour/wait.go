package tour

// A tour's waits: for an event, a checkpoint, a subtask aligning or slowed,
// a job status, until a timeout.

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/runtime/view"
)

// wait waits until c holds, its timeout passes (the step did not hold),
// or, interactively, the learner presses n.
func (r *Runner) wait(ctx context.Context, d Driver, c *Cond, res *StepResult) error {
	r.mu.Lock()
	since, ids := r.mark, len(r.done)
	r.mu.Unlock()
	r.setPanel(func(p *view.Tour) { p.Waiting = c.says() })
	defer r.setPanel(func(p *view.Tour) { p.Waiting, p.Hint = "", "" })
	holds := func(s view.Snapshot) (bool, string) { return r.holds(c, s, since, ids) }
	ok, detail, err := r.until(ctx, d, c.timeout(), holds, false)
	if ok && err == nil && c.Freeze {
		ok, detail, err = r.freezeOn(ctx, d, holds)
	}
	res.OK, res.Detail = ok, detail
	if !ok && detail == "" {
		res.Detail = "timed out waiting for " + c.says()
	}
	return err
}

// until evaluates f on every event and every 100 ms until it holds or
// timeout passes. Interactively, n ends the wait (as held) where nEnds: a
// press, which the tour then does for the learner. A moment or a claim the
// tour needs is waited for however often n is pressed: skipping it would
// leave what the tour shows next without it.
func (r *Runner) until(ctx context.Context, d Driver, timeout time.Duration, f func(view.Snapshot) (bool, string), nEnds bool) (bool, string, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if ok, detail := f(d.Snapshot()); ok {
			return true, detail, nil
		}
		select {
		case <-ctx.Done():
			return false, "", ctx.Err()
		case <-deadline.C:
			_, detail := f(d.Snapshot())
			return false, detail, nil
		case k := <-r.keys:
			switch {
			case k == "r":
				return false, "", ErrRestart
			case k == "n" && r.mode == Interactive && nEnds:
				return true, "skipped (n)", nil
			case k == "n" && r.mode == Interactive:
				r.setPanel(func(p *view.Tour) { p.Hint = nWaits })
			}
		case <-r.changed:
		case <-tick.C:
		}
	}
}

// nWaits is what the panel says when n is pressed during a wait or a
// check.
const nWaits = "n: the tour goes on by itself once this comes, as what it shows next needs it"

func (c *Cond) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return defaultTimeout
}

// says is what the panel says the tour waits for.
func (c *Cond) says() string {
	switch {
	case c.Says != "":
		return c.Says
	case c.Event != "":
		return strings.ReplaceAll(c.Event, "_", " ")
	case c.Aligning != "":
		return c.Aligning + " to align"
	case c.Slowed != "":
		return c.Slowed + " to slow down"
	case c.Overtaken != "":
		return "an unaligned barrier at the front of " + c.Overtaken + "'s queues"
	case c.JobStatus != "":
		return "the job to be " + c.JobStatus
	case c.Checkpoints == 1:
		return "the next checkpoint"
	}
	return fmt.Sprintf("%d checkpoints", c.Checkpoints)
}

// holds reports whether c holds on s, for a wait that began at event since
// with ids checkpoints completed.
func (r *Runner) holds(c *Cond, s view.Snapshot, since int64, ids int) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	detail := ""
	if c.Event != "" {
		e, ok := r.seenSince(c.Event, c.Where, since)
		if !ok {
			return false, ""
		}
		detail = describeEvent(e)
	}
	if c.Checkpoints > 0 {
		if len(r.done)-ids < c.Checkpoints {
			return false, ""
		}
		detail = fmt.Sprintf("checkpoint %d completed", r.done[len(r.done)-1])
	}
	if c.Aligning != "" {
		t, ok := s.Tasks[c.Aligning]
		if !ok || t.Alignment.Checkpoint == 0 {
			return false, ""
		}
		detail = fmt.Sprintf("%s aligning checkpoint %d", c.Aligning, t.Alignment.Checkpoint)
	}
	if c.Slowed != "" {
		if t, ok := s.Tasks[c.Slowed]; !ok || t.SlowFactor == 0 {
			return false, ""
		}
	}
	if c.Overtaken != "" {
		id, ok := overtakingBarrier(s.Tasks[c.Overtaken])
		if !ok {
			return false, ""
		}
		detail = fmt.Sprintf("barrier %d at the front of a queue of %s", id, c.Overtaken)
	}
	if c.JobStatus != "" && s.Job.Status != c.JobStatus {
		return false, "the job is " + s.Job.Status
	}
	return true, detail
}

// seenSince finds an event named name with fields where that came after
// event since (r.mu held).
func (r *Runner) seenSince(name string, where map[string]string, since int64) (seenEvent, bool) {
	for i := len(r.recent) - 1; i >= 0 && r.recent[i].seq > since; i-- {
		e := r.recent[i]
		if e.name != name {
			continue
		}
		match := true
		for k, v := range where {
			got, _ := view.FieldOf(e.ev, k)
			if !fieldMatches(got, v) {
				match = false
				break
			}
		}
		if match {
			return e, true
		}
	}
	return seenEvent{}, false
}

// fieldMatches reports whether an event's field (as view.FieldOf has it)
// has the value want, as a tour writes it, or, when want is a comparison
// (">20", "<=3"), is a whole number that meets it.
func fieldMatches(got any, want string) bool {
	comparison := want != "" && strings.ContainsAny(want[:1], "<>")
	if got == nil {
		return want == ""
	}
	switch v := reflect.ValueOf(got); v.Kind() {
	case reflect.String: // named string types too (a status, a mode)
		return !comparison && v.String() == want
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if comparison {
			return compare(v.Int(), want)
		}
		return strconv.FormatInt(v.Int(), 10) == want
	case reflect.Bool:
		return !comparison && strconv.FormatBool(v.Bool()) == want
	}
	b, err := json.Marshal(got) // lists and the like, as the JSON shows them
	return err == nil && !comparison && string(b) == want
}

func describeEvent(e seenEvent) string {
	var parts []string
	for _, k := range []string{"id", "checkpoint", "task", "status", "fault", "mode"} {
		if v, ok := view.FieldOf(e.ev, k); ok && v != "" && v != nil {
			parts = append(parts, fmt.Sprint(k, " ", v))
		}
	}
	return strings.TrimSpace(e.name + " " + strings.Join(parts, " "))
}

// freezeSteps is how many steps a frozen wait takes at most to find its
// moment again.
const freezeSteps = 12

// freezeOn freezes the world on a moment that holds, so that it stays on
// screen until the learner moves on. A moment that passed before the
// freeze took (the world ran on for a batch or two) comes again a step or
// a few later: the tour steps the frozen world until it does.
func (r *Runner) freezeOn(ctx context.Context, d Driver, holds func(view.Snapshot) (bool, string)) (bool, string, error) {
	d.SetTempo(view.TempoFrozen)
	if err := r.pause(ctx, 300*time.Millisecond); err != nil { // batches under way end
		return false, "", err
	}
	for range freezeSteps {
		if ok, detail := holds(d.Snapshot()); ok {
			return true, detail + " (frozen)", nil
		}
		if err := r.step(ctx, d); err != nil {
			return false, "", err
		}
	}
	ok, detail := holds(d.Snapshot())
	if !ok {
		detail = "frozen, but the moment did not come again in " + strconv.Itoa(freezeSteps) + " steps"
	}
	return ok, detail, nil
}

// overtakingBarrier is the id of an unaligned barrier at the front of one
// of t's input channels, over the records it overtook.
func overtakingBarrier(t view.Task) (int64, bool) {
	for _, in := range t.Inputs {
		for _, b := range in.Queue.Barriers {
			if b.Pos <= 0 && b.Overtook > 0 {
				return b.ID, true
			}
		}
	}
	return 0, false
}
