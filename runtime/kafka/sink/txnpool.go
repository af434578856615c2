package sink

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

// The sink names its transactions <prefix>/<operator>/<subtask>/<n>, with n
// counting up for every checkpoint (and <…>/<n>/redo/0 for a lost one it
// writes again). A Kafka transactional id per name would leave a new id on
// the cluster at every checkpoint, each kept by the broker until
// transactional.id.expiration.ms (7 days). Instead each sink subtask draws
// its transactional ids from a pool of its own (Flink's KafkaSink: the
// POOLING transaction naming strategy): <prefix>/<operator>/<subtask>/<k>,
// k the lowest slot whose last transaction has ended. A slot is held from
// the transaction's first record until its commit; one open transaction
// and the pre-committed ones waiting for their checkpoint need a slot
// each, so a subtask uses two or three ids, more only while checkpoints
// fail in a row.
//
// Recovery finds the slots a failed attempt or process left open by
// initialising them in order (which aborts what is open) up to the first
// that was never used: slots are taken lowest first, so the used ones
// come before it.

// idPool is a sink subtask's transactional ids.
type idPool struct {
	held []bool // per slot: its transaction is open or waits for its commit
	// clean: every slot was initialised (aborted) since the pool last
	// handed one out, so aborting again has nothing to do.
	clean bool
}

// take returns the lowest free slot and holds it.
func (p *idPool) take() int {
	p.clean = false
	for k, h := range p.held {
		if !h {
			p.held[k] = true
			return k
		}
	}
	p.held = append(p.held, true)
	return len(p.held) - 1
}

// release frees slot k (its transaction ended).
func (p *idPool) release(k int) {
	if k >= 0 && k < len(p.held) {
		p.held[k] = false
	}
}

// poolKey is the sink subtask's part of a transaction name, or of a
// prefix that AbortLingering gets: what precedes the sequence number, a
// redo's suffix left out ("p/sink/0/17/redo/0" and "p/sink/0/" give
// "p/sink/0/").
func poolKey(name string) string {
	if i := strings.Index(name, "/redo/"); i >= 0 {
		name = name[:i]
	}
	return strings.TrimRight(name, "0123456789")
}

// slotOf is the pool key and slot of a transactional id the pool handed
// out (ok false for another).
func slotOf(id string) (key string, slot int, ok bool) {
	key = strings.TrimRight(id, "0123456789")
	n, err := strconv.Atoi(id[len(key):])
	return key, n, err == nil && !strings.Contains(id, "/redo/")
}

// pool is the pool of key; o.mu is held.
func (o *Output) pool(key string) *idPool {
	p := o.pools[key]
	if p == nil {
		p = &idPool{}
		o.pools[key] = p
	}
	return p
}

// takeID holds a free transactional id for transaction name; o.mu is
// held.
func (o *Output) takeID(name string) string {
	key := poolKey(name)
	return key + strconv.Itoa(o.pool(key).take())
}

// releaseID frees the transactional id of a transaction that ended; o.mu
// is held.
func (o *Output) releaseID(id string) {
	if key, slot, ok := slotOf(id); ok {
		if p := o.pools[key]; p != nil {
			p.release(slot)
		}
	}
}

// abortPool initialises every transactional id of key's pool that was
// ever used, which aborts any transaction still open under one, and frees
// them all.
func (o *Output) abortPool(key string) error {
	o.mu.Lock()
	clean := o.pool(key).clean
	o.mu.Unlock()
	if clean {
		return nil
	}
	for k := 0; ; k++ {
		id := key + strconv.Itoa(k)
		_, epoch, err := o.initProducerID(id)
		if err != nil {
			return fmt.Errorf("abort lingering transaction %s: %w", id, err)
		}
		if epoch == 0 { // never used: neither is any later slot
			break
		}
	}
	o.mu.Lock()
	p := o.pool(key)
	clear(p.held)
	p.clean = true
	for c := range o.prepared { // aborted now: never committed
		if poolKey(strings.SplitN(c, "|", 2)[0]) == key {
			delete(o.prepared, c)
		}
	}
	o.mu.Unlock()
	return nil
}

// committedAlready reports whether c, a transaction with transactional id
// txn, is known to be in the committed output, so that committing it
// (again: a recovery, a run's stop settling its outputs) is nothing to do:
// this output committed it, the newest it committed with txn, or Missing
// found all of its records there. The broker could not tell once the
// pool's id began a newer transaction (ErrTxnLost), and the sink would
// read the output to find out what it holds: about 0.3 s for each sink
// subtask of a stopped run.
func (o *Output) committedAlready(txn, c string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.committed[txn] == c || o.whole[c]
}

// idempotent is an at-least-once sink subtask's idempotent producer: a
// producer id whose batches the broker deduplicates by sequence number, so
// that a batch sent again after a lost answer is not written twice. Its
// sequence numbers go on from one barrier's writer to the next; a writer
// that did not flush cleanly may have sent batches past them, so its
// producer is dropped and the next writer asks for a new one.
type idempotent struct {
	pid   int64
	epoch int16
	seq   []int32 // per partition, the next sequence number
}

// takeIdempotent hands out key's idempotent producer, asking the broker for
// one when there is none; it is the caller's until putIdempotent gives it
// back. o.mu is held.
func (o *Output) takeIdempotent(key string) (*idempotent, error) {
	p := o.idem[key]
	delete(o.idem, key)
	if p != nil {
		return p, nil
	}
	pid, epoch, err := o.initIdempotent()
	if err != nil {
		return nil, fmt.Errorf("idempotent producer for %s: %w", o.topic, err)
	}
	return &idempotent{pid: pid, epoch: epoch}, nil
}

// putIdempotent gives a producer back after a clean flush, with the
// sequence numbers its writer reached.
func (o *Output) putIdempotent(key string, p *idempotent, seq []int32) {
	p.seq = append(p.seq[:0], seq...)
	o.mu.Lock()
	o.idem[key] = p
	o.mu.Unlock()
}

// initIdempotent asks a broker for a producer id without a transactional
// id (an idempotent producer).
func (o *Output) initIdempotent() (int64, int16, error) { return o.initProducer(nil) }

// AwaitCommitted waits until a read_committed consumer of the output topic
// can read everything this output's committed transactions wrote, or
// timeout has passed, or ctx ended. Kafka answers EndTxn once a commit is decided and
// writes the commit markers into the partitions after that, so a read right
// after the last commit (the run's verification) could stop short at a
// partition's last stable offset and call the newest records lost. The
// embedded broker writes the markers before it answers.
func (o *Output) AwaitCommitted(ctx context.Context, timeout time.Duration) error {
	o.mu.Lock()
	want := maps.Clone(o.committedEnd)
	o.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for p, end := range want {
		for {
			stable, err := o.stableOffset(p)
			if err == nil && stable >= end {
				break
			}
			if time.Now().After(deadline) {
				if err == nil {
					err = fmt.Errorf("its last stable offset is %d, before %d where the committed transactions end", stable, end)
				}
				return fmt.Errorf("%s/%d after %s: %w", o.topic, p, timeout, err)
			}
			select {
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
	}
	return nil
}

// stableOffset asks partition p's leader for its last stable offset (the
// end a read_committed consumer reads to).
func (o *Output) stableOffset(p int32) (int64, error) {
	b, err := o.cl.Leader(o.topic, p)
	if err != nil {
		_ = o.cl.RefreshMetadata(o.topic)
		return 0, err
	}
	req := &sarama.OffsetRequest{Version: 2, IsolationLevel: sarama.ReadCommitted}
	req.AddBlock(o.topic, p, sarama.OffsetNewest, 1)
	resp, err := b.GetAvailableOffsets(req)
	if err != nil {
		_ = o.cl.RefreshMetadata(o.topic)
		return 0, err
	}
	blk := resp.GetBlock(o.topic, p)
	switch {
	case blk == nil:
		return 0, fmt.Errorf("no answer for partition %d", p)
	case blk.Err != sarama.ErrNoError:
		return 0, blk.Err
	}
	return blk.Offset, nil
}
