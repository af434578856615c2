package live

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// liveConn is the verifier's connections: a client per consumer, so that a
// fetch waiting on the broker never delays the other consumer or a check,
// and one for the checks' own requests.
type liveConn struct {
	in, out, ctl    sarama.Client
	inCons, outCons sarama.Consumer
}

func (c *liveConn) close() {
	for _, cons := range []sarama.Consumer{c.inCons, c.outCons} {
		if cons != nil {
			_ = cons.Close()
		}
	}
	for _, cl := range []sarama.Client{c.in, c.out, c.ctl} {
		if cl != nil {
			_ = cl.Close()
		}
	}
}

type liveParts struct{ in, out []*livePart }

// connect dials until it succeeds or ctx ends (nil).
func (v *LiveVerifier) connect(ctx context.Context) (*liveConn, liveParts) {
	for attempt := 0; ; attempt++ {
		conn, parts, err := v.dial()
		v.mu.Lock()
		if err != nil {
			v.connErr = fmt.Sprintf("live verification: %v (retrying)", err)
		} else {
			v.connErr = ""
		}
		v.mu.Unlock()
		if err == nil {
			return conn, parts
		}
		if !sleepCtx(ctx, liveBackoff(attempt)) {
			return nil, liveParts{}
		}
	}
}

func (v *LiveVerifier) dial() (conn *liveConn, parts liveParts, err error) {
	opened := &liveConn{}
	conn = opened
	defer func() {
		// What was opened is closed on any error, whatever the return
		// statement left in conn (nil: a failed partitions listing once
		// left it so, and the close panicked on it).
		if err != nil {
			opened.close()
			conn = nil
		}
	}()
	mk := func(committed bool) (sarama.Client, error) {
		cfg, err := v.cfg.Client.Config()
		if err != nil {
			return nil, err
		}
		cfg.Consumer.MaxWaitTime = liveMaxWait
		cfg.Consumer.Retry.Backoff = 500 * time.Millisecond
		if committed {
			cfg.Consumer.IsolationLevel = sarama.ReadCommitted
		}
		return v.cfg.Client.NewClientWith(cfg)
	}
	if conn.ctl, err = mk(false); err != nil {
		return
	}
	if conn.in, err = mk(false); err != nil {
		return
	}
	if conn.out, err = mk(true); err != nil {
		return
	}
	if conn.inCons, err = sarama.NewConsumerFromClient(conn.in); err != nil {
		return
	}
	if conn.outCons, err = sarama.NewConsumerFromClient(conn.out); err != nil {
		return
	}
	bits := map[string][2]uint32{} // the first input's records, then the partners'
	for i, gen := range v.cfg.inputs() {
		bits[gen] = [2]uint32{orderConf, orderTent}
		if i == 1 {
			bits[gen] = [2]uint32{paymentConf, paymentTent}
		}
	}
	for _, gen := range v.cfg.inputs() {
		topic := v.cfg.Inputs[gen]
		ps, err := v.partitions(conn.ctl, topic, v.cfg.InputFrom[gen])
		if err != nil {
			return nil, liveParts{}, err
		}
		for _, lp := range ps {
			lp.gen, lp.input = gen, true
			lp.conf, lp.tent = bits[gen][0], bits[gen][1]
			lp.confBound, lp.tentBound = lp.start, lp.start
		}
		parts.in = append(parts.in, ps...)
	}
	if parts.out, err = v.partitions(conn.ctl, v.cfg.Output, v.cfg.OutputFrom); err != nil {
		return nil, liveParts{}, err
	}
	return conn, parts, nil
}

// partitions lists topic's partitions with the offsets they are read from.
func (v *LiveVerifier) partitions(cl sarama.Client, topic string, from map[int32]int64) ([]*livePart, error) {
	ps, err := cl.Partitions(topic)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	out := make([]*livePart, 0, len(ps))
	for _, p := range ps {
		start, ok := from[p]
		if !ok {
			if start, err = cl.GetOffset(topic, p, sarama.OffsetOldest); err != nil {
				return nil, fmt.Errorf("start offset of %s/%d: %w", topic, p, err)
			}
		}
		out = append(out, &livePart{topic: topic, p: p, start: start, next: start})
	}
	return out, nil
}

// follow consumes lp with a Sarama partition consumer until ctx ends. A
// consumer that fails to start, or that Sarama gives up on, is started
// again from where the last one stopped; Sarama itself retries a broker
// that went away.
func (v *LiveVerifier) follow(ctx context.Context, cons sarama.Consumer, lp *livePart) {
	var (
		batch  []*sarama.ConsumerMessage
		parsed []parsedID
	)
	for attempt := 0; ctx.Err() == nil; {
		v.mu.Lock()
		pos := lp.next
		v.mu.Unlock()
		pc, err := cons.ConsumePartition(lp.topic, lp.p, pos)
		if err != nil {
			v.partErr(lp, fmt.Errorf("read %s/%d from offset %d: %w (retrying)", lp.topic, lp.p, pos, err))
			attempt++
			if !sleepCtx(ctx, liveBackoff(attempt)) {
				return
			}
			continue
		}
		attempt = 0
		msgs, errs := pc.Messages(), pc.Errors()
		for msgs != nil {
			select {
			case <-ctx.Done():
				msgs = nil
			case m, ok := <-msgs:
				if !ok {
					msgs = nil
					break
				}
				batch = append(batch[:0], m)
			more:
				for len(batch) < liveBatch {
					select {
					case m, ok := <-msgs:
						if !ok {
							msgs = nil
							break more
						}
						batch = append(batch, m)
					default:
						break more
					}
				}
				parsed = v.deliver(lp, batch, parsed)
			case err, ok := <-errs:
				if !ok {
					errs = nil
					break
				}
				v.partErr(lp, fmt.Errorf("read %s/%d: %w (retrying)", lp.topic, lp.p, err))
			}
		}
		_ = pc.Close()
	}
}

// deliver applies a batch of lp's records; their ids are read before the
// lock is taken.
func (v *LiveVerifier) deliver(lp *livePart, batch []*sarama.ConsumerMessage, parsed []parsedID) []parsedID {
	if v.beforeDeliver != nil {
		v.beforeDeliver(lp.input)
	}
	parsed = parsed[:0]
	for _, m := range batch {
		id, ok := v.ids.Of(m.Value)
		parsed = append(parsed, parsedID{off: m.Offset, id: id, ok: ok, ts: m.Timestamp.UnixMilli()})
	}
	now := time.Now()
	v.mu.Lock()
	if lp.input {
		v.st.addInput(lp, parsed)
	} else {
		v.st.addOutput(lp, parsed)
	}
	lp.msgAt = now
	v.mu.Unlock()
	select {
	case v.progress <- struct{}{}:
	default:
	}
	clear(parsed) // drop the references into the records
	return parsed
}

func (v *LiveVerifier) partErr(lp *livePart, err error) {
	v.mu.Lock()
	lp.err, lp.errAt = err.Error(), time.Now()
	v.mu.Unlock()
}

func liveBackoff(attempt int) time.Duration {
	return min(liveBackoffMin<<min(attempt, 5), liveBackoffMax)
}

// sleepCtx waits d, or less when ctx ends (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
