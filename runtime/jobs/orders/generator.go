package orders

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/internal/clock"
	"github.com/faultline-dev/faultline/runtime"
)

// Generator is the deterministic, seeded input of the default job: orders
// and payments, each topic with a fixed number of partitions. Every paid
// order has exactly one payment, in the payments partition with the same
// number as its order's; payments are shuffled within small blocks and run
// ahead of their orders, so the join sees a payment before its order about
// as often as after. The content of every (topic, partition, offset) is a
// pure function of the seed, so a source can seek anywhere and the
// verification oracle can read the same input independently.
type Generator struct {
	seed       int64
	orders     int64 // number of orders; 0 means unbounded
	partitions int
	rate       float64 // records/s over all readers; 0: as fast as possible

	mu         sync.Mutex
	paidPrefix [][]int64 // per partition: paid orders before block b
}

// Topics the generator serves.
const (
	TopicOrders   = "orders"
	TopicPayments = "payments"
)

// GeneratorPartitions is the partition count of each generated topic.
const GeneratorPartitions = 4

const payBlock = 32 // orders of one partition whose payments are shuffled together

// NewGenerator returns a generator of records input records (orders plus
// payments, one more when the last order's payment passes the count; 0 for
// an unbounded input).
func NewGenerator(seed, records int64, partitions int) *Generator {
	g := &Generator{seed: seed, partitions: partitions, paidPrefix: make([][]int64, partitions)}
	if records > 0 {
		var n, total int64
		for total < records {
			total++
			if g.Paid(n) {
				total++
			}
			n++
		}
		g.orders = n
	}
	return g
}

// WithRate limits the generator's readers to about rate records/s in all.
func (g *Generator) WithRate(rate float64) *Generator { g.rate = rate; return g }

// Bounded reports whether the input has an end.
func (g *Generator) Bounded() bool { return g.orders > 0 }

// Orders is the number of orders of a bounded input.
func (g *Generator) Orders() int64 { return g.orders }

func (g *Generator) mix(i int64, salt uint64) uint64 {
	x := uint64(g.seed)*0x9E3779B97F4A7C15 ^ uint64(i)*0xBF58476D1CE4E5B9 ^ salt*0x94D049BB133111EB
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	x ^= x >> 31
	return x
}

// Paid reports whether order i has a payment (nine in ten have).
func (g *Generator) Paid(i int64) bool { return g.mix(i, 1)%100 < 90 }

// OrderAt returns order i.
func (g *Generator) OrderAt(i int64) Order {
	h := g.mix(i, 2)
	return Order{
		OrderID:     orderID(i),
		Customer:    "c-" + strconv.FormatUint(h%100, 10),
		AmountCents: 100 + int64((h>>8)%20000),
	}
}

func orderID(i int64) string { return fmt.Sprintf("o-%06d", i) }

// partitionOrders is how many orders partition p holds (bounded input).
func (g *Generator) partitionOrders(p int) int64 {
	if g.orders <= int64(p) {
		return 0
	}
	return (g.orders-int64(p)-1)/int64(g.partitions) + 1
}

// block returns the order indices whose payments make up block b of payments
// partition p, in their shuffled order.
func (g *Generator) block(p int, b int64) []int64 {
	var ids []int64
	for k := b * payBlock; k < (b+1)*payBlock; k++ {
		i := k*int64(g.partitions) + int64(p)
		if g.orders > 0 && i >= g.orders {
			break
		}
		if g.Paid(i) {
			ids = append(ids, i)
		}
	}
	// Deterministic Fisher-Yates.
	for j := len(ids) - 1; j > 0; j-- {
		r := int(g.mix(b*int64(g.partitions)+int64(p), 3+uint64(j)) % uint64(j+1))
		ids[j], ids[r] = ids[r], ids[j]
	}
	return ids
}

// paymentBlock finds the block of payments partition p that holds offset
// off: its index, its first offset and its order indices. ok is false past
// the end of a bounded input.
func (g *Generator) paymentBlock(p int, off int64) (b, start int64, ids []int64, ok bool) {
	g.mu.Lock()
	pre := g.paidPrefix[p]
	if len(pre) == 0 {
		pre = append(pre, 0)
	}
	// Extend the prefix sums until they pass off (or the input ends).
	for pre[len(pre)-1] <= off {
		last := int64(len(pre) - 1)
		if g.orders > 0 && last*payBlock*int64(g.partitions)+int64(p) >= g.orders {
			g.paidPrefix[p] = pre
			g.mu.Unlock()
			return 0, 0, nil, false
		}
		pre = append(pre, pre[last]+int64(len(g.block(p, last))))
	}
	g.paidPrefix[p] = pre
	// The block is the last one starting at or before off.
	b = int64(sort.Search(len(pre), func(i int) bool { return pre[i] > off })) - 1
	start = pre[b]
	g.mu.Unlock()
	return b, start, g.block(p, b), true
}

// PaymentDue reports whether a writer that has written ordersWritten
// orders of partition p may write the payment at offset payOffset of
// payments partition p: the block of orders it belongs to has begun, so
// that payments run at most a block ahead of their orders. A writer that
// writes the two topics at the same pace drifts apart otherwise (there are
// fewer payments than orders): after ten minutes at 8,000 records/s a
// payment came a minute before its order.
func (g *Generator) PaymentDue(p int, payOffset, ordersWritten int64) bool {
	b, _, _, ok := g.paymentBlock(p, payOffset)
	return !ok || b*payBlock <= ordersWritten
}

// paymentAt finds the order whose payment is at offset off of partition p.
func (g *Generator) paymentAt(p int, off int64) (int64, bool) {
	_, start, ids, ok := g.paymentBlock(p, off)
	if !ok {
		return 0, false
	}
	return ids[off-start], true
}

// EndOffset is the number of records in a partition of a bounded input.
func (g *Generator) EndOffset(topic string, p int) int64 {
	switch topic {
	case TopicOrders:
		return g.partitionOrders(p)
	case TopicPayments:
		var n int64
		blocks := (g.partitionOrders(p) + payBlock - 1) / payBlock
		for b := int64(0); b < blocks; b++ {
			n += int64(len(g.block(p, b)))
		}
		return n
	}
	return 0
}

// Read returns the raw record at (topic, partition, offset), or false past
// the end.
func (g *Generator) Read(topic string, p int, off int64) ([]byte, bool) {
	switch topic {
	case TopicOrders:
		if g.orders > 0 && off >= g.partitionOrders(p) {
			return nil, false
		}
		o := g.OrderAt(off*int64(g.partitions) + int64(p))
		return o.AppendJSON(make([]byte, 0, 80)), true
	case TopicPayments:
		i, ok := g.paymentAt(p, off)
		if !ok {
			return nil, false
		}
		return g.payment(i), true
	}
	return nil, false
}

func (g *Generator) payment(order int64) []byte {
	o := g.OrderAt(order)
	pay := Payment{OrderID: o.OrderID, PaymentID: "p-" + o.OrderID[2:], AmountCents: o.AmountCents}
	return pay.AppendJSON(make([]byte, 0, 80))
}

// Source returns the generator's topic as a job source.
func (g *Generator) Source(topic string) (runtime.Source, error) {
	if topic != TopicOrders && topic != TopicPayments {
		return nil, fmt.Errorf("the generator has no topic %q (it has %q and %q)", topic, TopicOrders, TopicPayments)
	}
	return &genSource{g: g, topic: topic}, nil
}

type genSource struct {
	g     *Generator
	topic string
}

func (s *genSource) Topic() string   { return s.topic }
func (s *genSource) Partitions() int { return s.g.partitions }

// Reader reads partitions on the wall clock.
func (s *genSource) Reader(partitions []int32, offsets map[int32]int64) (runtime.SourceReader, error) {
	return s.ReaderOn(clock.Real{}, partitions, offsets)
}

// readerOn reads partitions, keeping the generator's rate on clk
// (clockedSource).
func (s *genSource) ReaderOn(clk clock.Clock, partitions []int32, offsets map[int32]int64) (runtime.SourceReader, error) {
	r := &genReader{g: s.g, topic: s.topic, next: map[int32]int64{}, blocks: map[int32]*payBlockCache{}, clk: clk, start: clk.Now()}
	r.parts = append(r.parts, partitions...)
	sort.Slice(r.parts, func(i, j int) bool { return r.parts[i] < r.parts[j] })
	for _, p := range r.parts {
		if int(p) >= s.g.partitions {
			return nil, fmt.Errorf("topic %s has no partition %d", s.topic, p)
		}
		r.next[p] = offsets[p]
	}
	if s.g.rate > 0 {
		// Each topic gets half of the rate, split over its partitions.
		r.rate = s.g.rate / 2 * float64(len(r.parts)) / float64(s.g.partitions)
	}
	return r, nil
}

type genReader struct {
	g     *Generator
	topic string
	parts []int32
	next  map[int32]int64
	rr    int
	// the payments block last read, per partition, for sequential reads
	blocks map[int32]*payBlockCache

	rate    float64
	clk     clock.Clock
	start   time.Time
	emitted int64
}

func (r *genReader) Poll(ctx context.Context, dst []runtime.Record, max int) ([]runtime.Record, bool, error) {
	if r.rate > 0 {
		allowed := int64(r.rate*clock.Since(r.clk, r.start).Seconds()) - r.emitted
		if allowed <= 0 {
			after, t := clock.After(r.clk, time.Duration(float64(time.Second)/r.rate))
			select {
			case <-after:
			case <-ctx.Done():
				t.Stop()
			}
			return dst, false, nil
		}
		if allowed < int64(max) {
			max = int(allowed)
		}
	}
	n := 0
	for n < max {
		progressed := false
		for range r.parts {
			p := r.parts[r.rr%len(r.parts)]
			r.rr++
			b, ok := r.read(p, r.next[p])
			if !ok {
				continue
			}
			r.next[p]++
			dst = append(dst, runtime.Record{Bytes: b})
			n++
			progressed = true
			if n == max {
				break
			}
		}
		if !progressed {
			r.emitted += int64(n)
			return dst, len(r.parts) == 0 || r.g.Bounded(), nil
		}
	}
	r.emitted += int64(n)
	return dst, false, nil
}

type payBlockCache struct {
	start int64
	ids   []int64
}

func (r *genReader) read(p int32, off int64) ([]byte, bool) {
	if r.topic != TopicPayments {
		return r.g.Read(r.topic, int(p), off)
	}
	c := r.blocks[p]
	if c == nil || off < c.start || off >= c.start+int64(len(c.ids)) {
		_, start, ids, ok := r.g.paymentBlock(int(p), off)
		if !ok {
			return nil, false
		}
		c = &payBlockCache{start: start, ids: ids}
		r.blocks[p] = c
	}
	return r.g.payment(c.ids[off-c.start]), true
}

func (r *genReader) Offsets() map[int32]int64 {
	out := make(map[int32]int64, len(r.next))
	for p, o := range r.next {
		out[p] = o
	}
	return out
}

func (r *genReader) Close() error { return nil }

// ReadInputAfter implements InputReader for the generator.
func (g *Generator) ReadInputAfter(_ context.Context, topic string, bounds map[int32]int64, f func(value []byte, eventTime, watermark int64) error) error {
	for p := 0; p < g.partitions; p++ {
		end := g.EndOffset(topic, p) // a walk over the partition's blocks: once
		for off := bounds[int32(p)]; off < end; off++ {
			b, ok := g.Read(topic, p, off)
			if !ok {
				break
			}
			if err := f(b, 0, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadInput implements InputReader for the generator.
func (g *Generator) ReadInput(_ context.Context, topic string, bounds map[int32]int64, f func(value []byte, eventTime, watermark int64) error) error {
	for p := 0; p < g.partitions; p++ {
		n := g.EndOffset(topic, p)
		if bounds != nil {
			n = bounds[int32(p)]
		}
		for off := int64(0); off < n; off++ {
			b, ok := g.Read(topic, p, off)
			if !ok {
				return fmt.Errorf("input %s/%d ends before offset %d", topic, p, off)
			}
			if err := f(b, 0, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// Topics are the generator's topics, orders first: what an input writer
// writes (fill.Input).
func (g *Generator) Topics() []string { return []string{TopicOrders, TopicPayments} }

// Partitions is how many partitions each topic has.
func (g *Generator) Partitions() int { return g.partitions }

// Due reports whether the record at off of topic's partition p may be
// written yet: a payment waits for its block of orders (PaymentDue), so
// that an order and its payment are written close together, unless the
// orders are not being written.
func (g *Generator) Due(topic string, p int, off int64, written func(topic string) (int64, bool)) bool {
	if topic != TopicPayments {
		return true
	}
	orders, ok := written(TopicOrders)
	return !ok || g.PaymentDue(p, off, orders)
}

// Key is the Kafka key of a generated record: its order id.
func (g *Generator) Key(value []byte) []byte { return orderKey(value) }

// orderKey pulls the order id out of a generated record, for the message key.
func orderKey(b []byte) []byte {
	const k = `"order_id":"`
	for i := 0; i+len(k) < len(b); i++ {
		if string(b[i:i+len(k)]) == k {
			j := i + len(k)
			e := j
			for e < len(b) && b[e] != '"' {
				e++
			}
			return b[j:e]
		}
	}
	return nil
}
