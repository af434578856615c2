package live

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime/kafka"
)

// liveWait is one partition a check waits on: until the verifier has
// consumed every record below target that its consumer is handed.
type liveWait struct {
	lp     *livePart
	iso    sarama.IsolationLevel
	target int64
	cursor int64     // [.., cursor) has been sorted by probes
	need   int64     // a record the consumer is handed there (-1: none)
	idle   time.Time // no probe before then
}

// liveCheck is the check of one checkpoint.
type liveCheck struct {
	id     int64
	bounds map[*livePart]int64 // inputs: the checkpoint's offsets
	waits  []*liveWait         // inputs, then outputs
	sure   map[*livePart]int64 // outputs: the high watermark
	step   int                 // 0 targets unknown, 1 fast, 2 sure
	// inFlight are the order ids the checkpoint holds in flight.
	inFlight []string
}

// watch asks committed() for newer checkpoints and checks them one after
// the other, until ctx ends. A check is finished before the next starts:
// switching to every newer one could starve a slow check for ever.
func (v *LiveVerifier) watch(ctx context.Context, cl sarama.Client, committed Committed) {
	tick := time.NewTicker(livePoll)
	defer tick.Stop()
	var (
		cur      *liveCheck
		lastPing time.Time
		retryAt  time.Time // after a failed request, not before then
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-v.progress:
			if cur == nil {
				continue
			}
		}
		if cur == nil {
			if id, bounds, inFlight, ok := committed(); ok {
				cur = v.newCheck(id, bounds, inFlight)
			}
		}
		if cur != nil && !time.Now().Before(retryAt) {
			done, err := v.advance(ctx, cl, cur)
			if err != nil {
				retryAt = time.Now().Add(livePoll)
				v.mu.Lock()
				v.checkErr = fmt.Sprintf("check of checkpoint %d: %v (retrying)", cur.id, err)
				v.mu.Unlock()
			}
			if done {
				cur = nil
			}
		}
		if now := time.Now(); now.Sub(lastPing) >= livePingEvery && v.anyErr() {
			lastPing = now
			v.ping(cl)
		}
	}
}

// ping asks the broker for the output's offsets, to learn whether it is
// back.
func (v *LiveVerifier) ping(cl sarama.Client) {
	_, err := kafka.ListOffsets(cl, v.cfg.Output, partNumbers(v.st.out), sarama.ReadCommitted)
	if err != nil {
		v.mu.Lock()
		v.checkErr = fmt.Sprintf("live verification: %v (retrying)", err)
		v.mu.Unlock()
		return
	}
	v.answered()
}

// answered notes that the broker answered a request of the checks.
func (v *LiveVerifier) answered() {
	v.mu.Lock()
	v.checkErr = ""
	v.pingOK = time.Now()
	v.mu.Unlock()
}

func partNumbers(parts []*livePart) []int32 {
	out := make([]int32, len(parts))
	for i, lp := range parts {
		out[i] = lp.p
	}
	return out
}

// newCheck starts the check of checkpoint id, if it is newer than the last
// one checked.
func (v *LiveVerifier) newCheck(id int64, bounds checkpoint.Offsets, inFlight []string) *liveCheck {
	v.mu.Lock()
	newer := !v.checked || id > v.st.asOf
	v.mu.Unlock()
	if !newer {
		return nil
	}
	c := &liveCheck{id: id, bounds: map[*livePart]int64{}, sure: map[*livePart]int64{}, inFlight: inFlight}
	for _, lp := range v.st.in {
		// A partition the checkpoint does not name was not read at all.
		b := max(bounds[lp.gen][lp.p], lp.start)
		c.bounds[lp] = b
		c.waits = append(c.waits, &liveWait{lp: lp, iso: sarama.ReadUncommitted, target: b, need: -1})
	}
	return c
}

// advance takes check c as far as it can without blocking on consumers:
// done once c is confirmed.
func (v *LiveVerifier) advance(ctx context.Context, cl sarama.Client, c *liveCheck) (bool, error) {
	if c.step == 0 {
		// Both asked after committed() reported c: everything c's
		// transactions wrote is below the high watermark; below the LSO,
		// every transaction is decided.
		parts := partNumbers(v.st.out)
		lso, err := kafka.ListOffsets(cl, v.cfg.Output, parts, sarama.ReadCommitted)
		if err != nil {
			return false, err
		}
		hwm, err := kafka.ListOffsets(cl, v.cfg.Output, parts, sarama.ReadUncommitted)
		if err != nil {
			return false, err
		}
		v.answered()
		for _, lp := range v.st.out {
			c.waits = append(c.waits, &liveWait{lp: lp, iso: sarama.ReadCommitted, target: lso[lp.p], need: -1})
			c.sure[lp] = max(hwm[lp.p], lso[lp.p])
		}
		c.step = 1
	}
	for _, w := range c.waits {
		if ctx.Err() != nil {
			return false, nil
		}
		ok, err := v.reached(cl, w)
		if err != nil || !ok {
			return false, err
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if c.step == 1 {
		for _, lp := range v.st.in {
			v.st.tentative(lp, c.bounds[lp])
		}
		if v.st.unseenTent-v.st.missingAmong(c.inFlight) != v.st.unseenConf-v.st.missingInFlight() {
			// Something c covers is missing: make sure.
			c.step = 2
			v.sureWait.Add(1)
			for _, w := range c.waits {
				if t, ok := c.sure[w.lp]; ok && t > w.target {
					w.target = t
				}
			}
			return false, nil
		}
	}
	for _, lp := range v.st.in {
		v.st.confirm(lp)
	}
	v.st.setInFlight(c.inFlight)
	v.st.asOf, v.st.available, v.checked = c.id, true, true
	return true, nil
}

// reached reports whether the verifier has consumed every record below
// w.target that w's consumer is handed, probing the broker for what lies
// between the consumer's position and the target.
func (v *LiveVerifier) reached(cl sarama.Client, w *liveWait) (bool, error) {
	for range liveProbes {
		v.mu.Lock()
		next := w.lp.next
		v.mu.Unlock()
		if next >= w.target {
			return true, nil
		}
		if w.need >= 0 {
			if next <= w.need {
				return false, nil // the consumer has yet to hand it over
			}
			w.need = -1
		}
		from := max(w.cursor, next)
		if from >= w.target {
			return true, nil // nothing more is handed out below the target
		}
		if time.Now().Before(w.idle) {
			return false, nil
		}
		last, end, err := kafka.VisibleIn(cl, w.lp.topic, w.lp.p, from, w.target, w.iso)
		if err != nil {
			return false, err
		}
		v.answered()
		if end <= from {
			// Not decided yet (an open transaction): ask again later, not
			// on every record consumed meanwhile.
			w.idle = time.Now().Add(livePoll)
			return false, nil
		}
		w.cursor = end
		if last >= 0 {
			w.need = last
		}
	}
	return false, nil
}
