package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/verify"
)

// Retention deletes from the embedded broker's log what no reader needs any
// more, so that a job left running keeps its state dir and the broker's
// memory bounded (Kafka deletes by age or size, retention.ms and
// retention.bytes; here the readers decide). A record goes once every
// reader is past it:
//   - the job: a recovery reads the input from the offsets of a retained
//     checkpoint or savepoint (the oldest bounds the input), and the output
//     from where those checkpoints' pre-committed transactions began
//     (checkpoint.Completed.OutputFloor), to find what a lost one left
//     unwritten; the consumer group's offsets are a checkpoint's, never
//     behind the oldest retained one;
//   - the verification: the ledger (verify.Ledger) must have accounted for
//     it. Each round first moves the ledger up to the job's bounds, reading
//     the input below them and the committed output below its last stable
//     offset, and saves it; only then does it delete. The final
//     verification goes on from the saved ledger, so nothing it counts is
//     lost with the records;
//   - other readers (the live verifier of the terminal UI) say how far they
//     have read.
//
// A partition's last record always stays, and with it the end of the
// partition's log (see keepLast).
//
// Run owns the ledger while it runs; the caller uses it again once Run has
// returned.
type Retention struct {
	cfg RetentionConfig
	// deleted is, per Kafka topic and partition, where the log starts after
	// the last deletion.
	deleted checkpoint.Offsets
	// newest is, per input topic and partition, the newest event time
	// accounted for in this process: the ledger forgets the first sides
	// the TTL expired by the least of them (prune).
	newest checkpoint.Offsets
}

// RetentionConfig says what a Retention trims and how.
type RetentionConfig struct {
	Client kafka.Client
	// Inputs maps the generator's topics ("orders", "payments") to the
	// Kafka topics the job reads; Output is the Kafka topic its sink writes.
	Inputs map[string]string
	Output string
	// Ledger is the verification ledger to move forward, saved at Path.
	Ledger *verify.Ledger
	Path   string
	// Checkpoints lists the retained checkpoints and savepoints.
	Checkpoints func(ctx context.Context) ([]*checkpoint.Completed, error)
	// Start says where the job began reading a topic when the ledger does
	// not know (a fresh run: the sources' start offsets); nil or missing
	// partitions: the start of the log.
	Start func(topic string) map[int32]int64
	// Readers, when set, says how far the other readers have read, per
	// Kafka topic and partition: nothing at or after it is deleted. ok
	// false means they still need everything: nothing is deleted.
	Readers func() (offsets checkpoint.Offsets, ok bool)
	// Every is the time between rounds.
	Every time.Duration
	// Logf reports what each round did and why a round failed.
	Logf func(format string, args ...any)
}

// roundRecords is the most a round reads of one partition at once, so that
// what it holds in memory stays small (a variable for tests).
var roundRecords int64 = 20_000

// NewRetention returns a Retention for cfg; Run starts it.
func NewRetention(cfg RetentionConfig) *Retention {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	return &Retention{cfg: cfg, deleted: checkpoint.Offsets{}}
}

// Run does a round at once and then every cfg.Every until ctx ends. A
// round that fails is logged and tried again next time: nothing is deleted
// that the ledger has not saved.
func (r *Retention) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.Every)
	defer t.Stop()
	for {
		if err := r.Round(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logf("broker retention: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Round moves the ledger up to what the retained checkpoints need, saves
// it, and deletes what every reader is past.
//
// The output's last stable offset is read before the checkpoints: a
// checkpoint that completes in between is then among them when its
// transactions are below that offset. Read the other way round (as it
// was), a checkpoint completing and committing between the two reads was
// missing from the floor, and the output its restore reads again (from
// where its pre-committed transactions began) was deleted: the next start
// found the log short of it and refused to run.
func (r *Retention) Round(ctx context.Context) error {
	cl, err := r.cfg.Client.NewClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	outParts, err := cl.Partitions(r.cfg.Output)
	if err != nil {
		return fmt.Errorf("topic %s: %w", r.cfg.Output, err)
	}
	lso, err := kafka.ListOffsets(cl, r.cfg.Output, outParts, sarama.ReadCommitted)
	if err != nil {
		return err
	}
	cps, err := r.cfg.Checkpoints(ctx)
	if err != nil {
		return fmt.Errorf("list checkpoints: %w", err)
	}
	if len(cps) == 0 {
		return nil // nothing to recover from yet: keep everything
	}

	inFloor := checkpoint.Offsets{}
	for gen, topic := range r.cfg.Inputs {
		parts, err := cl.Partitions(topic)
		if err != nil {
			return fmt.Errorf("topic %s: %w", topic, err)
		}
		floor := floorOf(cps, parts, func(c *checkpoint.Completed) map[int32]int64 { return c.SourceOffsets()[topic] })
		if err := r.account(ctx, cl, gen, topic, floor); err != nil {
			return err
		}
		inFloor[topic] = floor
	}
	if err := r.accountOutput(ctx, cl, lso); err != nil {
		return err
	}
	r.prune()
	r.cfg.Ledger.Compact()
	if err := r.cfg.Ledger.Save(r.cfg.Path); err != nil {
		return err
	}

	// The ledger is saved: delete below it, and below what the job and the
	// other readers still need.
	var readers checkpoint.Offsets
	if r.cfg.Readers != nil {
		var ok bool
		if readers, ok = r.cfg.Readers(); !ok {
			return nil
		}
	}
	want, outFloor := r.below(cps, outParts, inFloor)
	if err := keepLast(cl, want); err != nil {
		return err
	}
	for topic, parts := range want {
		for p, to := range parts {
			if rp, ok := readers[topic][p]; ok {
				to = min(to, rp)
			}
			if to <= r.deleted[topic][p] {
				delete(parts, p)
				continue
			}
			parts[p] = to
		}
	}
	r.cfg.Logf("broker retention: output floor %v, ledger %v, deleting below %v", outFloor, r.cfg.Ledger.Positions, want)
	return r.delete(cl, want)
}

// below is, per partition, what the job and the ledger let go: the input
// below both the retained checkpoints' offsets (inFloor) and the ledger,
// the output below both the ledger and where the retained checkpoints'
// pre-committed transactions began (outFloor; a checkpoint with nothing
// pre-committed reads no output on recovery).
func (r *Retention) below(cps []*checkpoint.Completed, outParts []int32, inFloor checkpoint.Offsets) (want checkpoint.Offsets, outFloor map[int32]int64) {
	outFloor = floorOf(cps, outParts, func(c *checkpoint.Completed) map[int32]int64 { return c.OutputFloor()[r.cfg.Output] })
	want = checkpoint.Offsets{r.cfg.Output: {}}
	for _, p := range outParts {
		to, _ := r.cfg.Ledger.Position(r.cfg.Output, p)
		if f, ok := outFloor[p]; ok {
			to = min(to, f)
		}
		want[r.cfg.Output][p] = to
	}
	for topic, floor := range inFloor {
		want[topic] = map[int32]int64{}
		for p, f := range floor {
			to, _ := r.cfg.Ledger.Position(topic, p)
			want[topic][p] = min(to, f)
		}
	}
	return want, outFloor
}

// keepLast lowers want so that each partition keeps its last record. The
// broker deletes whole segments, the last one too once all of it lies
// below the new start, and reads a partition without a segment back as
// empty from offset 0: the end it had is written nowhere else. After a
// crash the input would be written again from 0, and the output would go
// on at offsets the ledger has counted already.
func keepLast(cl sarama.Client, want checkpoint.Offsets) error {
	for topic, parts := range want {
		var ps []int32
		for p := range parts {
			ps = append(ps, p)
		}
		if len(ps) == 0 {
			continue
		}
		ends, err := kafka.ListOffsets(cl, topic, ps, sarama.ReadUncommitted)
		if err != nil {
			return err
		}
		for p, to := range parts {
			parts[p] = min(to, ends[p]-1)
		}
	}
	return nil
}

// floorOf is, per partition of parts, the lowest offset offsets gives over
// the checkpoints; offsets nil means a checkpoint puts no bound on the
// topic, and a partition missing from a non-nil map gets 0 (keep
// everything). A partition no checkpoint bounds is left out.
func floorOf(cps []*checkpoint.Completed, parts []int32, offsets func(*checkpoint.Completed) map[int32]int64) map[int32]int64 {
	floor := map[int32]int64{}
	for _, c := range cps {
		offs := offsets(c)
		if offs == nil {
			continue
		}
		for _, p := range parts {
			o := offs[p] // 0 when missing
			if cur, ok := floor[p]; !ok || o < cur {
				floor[p] = o
			}
		}
	}
	return floor
}

// from is where the ledger goes on reading partition p of topic.
func (r *Retention) from(topic string, p int32) (int64, bool) {
	if o, ok := r.cfg.Ledger.Position(topic, p); ok {
		return o, true
	}
	if r.cfg.Start != nil {
		if o, ok := r.cfg.Start(topic)[p]; ok {
			return o, true
		}
	}
	return 0, false
}

// account reads input topic (the generator's gen) from the ledger's
// positions up to floor and adds it to the ledger.
func (r *Retention) account(ctx context.Context, cl sarama.Client, gen, topic string, floor map[int32]int64) error {
	if r.newest == nil {
		r.newest = checkpoint.Offsets{}
	}
	if r.newest[topic] == nil {
		r.newest[topic] = map[int32]int64{}
	}
	newest := r.newest[topic]
	for p := range floor {
		if _, ok := newest[p]; !ok {
			newest[p] = 0 // not heard from yet: it holds prune back
		}
	}
	return r.advance(ctx, cl, topic, floor, false, func(rec runtime.OutputRecord) {
		id, _ := r.cfg.Ledger.IDOf(rec.Value)
		r.cfg.Ledger.Input(gen, id, rec.Time)
		newest[rec.Partition] = max(newest[rec.Partition], rec.Time)
	})
}

// prune has the ledger forget the first sides the TTL expired, by the least
// over the input partitions of the newest event time accounted for of
// each (the join's watermark), once every partition has been heard from
// in this process: a partner may still come from a partition that lags.
func (r *Retention) prune() {
	var now int64
	for _, topic := range r.cfg.Inputs {
		if len(r.newest[topic]) == 0 {
			return
		}
		for _, t := range r.newest[topic] {
			if t == 0 {
				return
			}
			if now == 0 || t < now {
				now = t
			}
		}
	}
	r.cfg.Ledger.PruneAt(now)
}

// accountOutput reads the committed output from the ledger's positions up to
// the last stable offsets lso (below it every transaction is decided) and
// adds it to the ledger.
func (r *Retention) accountOutput(ctx context.Context, cl sarama.Client, lso map[int32]int64) error {
	return r.advance(ctx, cl, r.cfg.Output, lso, true, func(rec runtime.OutputRecord) {
		id, ok := r.cfg.Ledger.IDOf(rec.Value)
		r.cfg.Ledger.Output(id, ok, rec.Time)
	})
}

// advance reads topic (read_committed when committed) from the ledger's
// position of each partition up to its target, hands each record to add
// and moves the ledger's positions there. It reads at most roundRecords
// of a partition at once, so that what it holds stays small.
func (r *Retention) advance(ctx context.Context, cl sarama.Client, topic string, targets map[int32]int64, committed bool, add func(runtime.OutputRecord)) error {
	for {
		from, to := map[int32]int64{}, map[int32]int64{}
		for p, target := range targets {
			start, known := r.from(topic, p)
			if !known {
				var err error
				if start, err = logStart(cl, topic, p); err != nil {
					return err
				}
			}
			if target > start {
				from[p], to[p] = start, min(target, start+roundRecords)
			} else if !known {
				r.cfg.Ledger.SetPosition(topic, p, start)
			}
		}
		if len(to) == 0 {
			return nil
		}
		recs, err := kafka.Read(ctx, r.cfg.Client, topic, from, to, committed)
		if err != nil {
			return fmt.Errorf("account for %s: %w", topic, err)
		}
		for _, rec := range recs {
			add(rec)
		}
		for p, o := range to {
			r.cfg.Ledger.SetPosition(topic, p, o)
		}
	}
}

// logStart is the first offset partition p of topic still holds.
func logStart(cl sarama.Client, topic string, p int32) (int64, error) {
	o, err := cl.GetOffset(topic, p, sarama.OffsetOldest)
	if err != nil {
		return 0, fmt.Errorf("start of %s/%d: %w", topic, p, err)
	}
	return o, nil
}

// delete asks the broker to delete every partition's records below want.
func (r *Retention) delete(cl sarama.Client, want checkpoint.Offsets) error {
	for topic, parts := range want {
		if len(parts) == 0 {
			continue
		}
		byLeader := map[*sarama.Broker]map[int32]int64{}
		for p, to := range parts {
			b, err := cl.Leader(topic, p)
			if err != nil {
				return fmt.Errorf("leader of %s/%d: %w", topic, p, err)
			}
			if byLeader[b] == nil {
				byLeader[b] = map[int32]int64{}
			}
			byLeader[b][p] = to
		}
		for b, offs := range byLeader {
			req := &sarama.DeleteRecordsRequest{Version: 1, Timeout: 10 * time.Second,
				Topics: map[string]*sarama.DeleteRecordsRequestTopic{topic: {PartitionOffsets: offs}}}
			resp, err := b.DeleteRecords(req)
			if err != nil {
				return fmt.Errorf("delete records of %s: %w", topic, err)
			}
			for p, pr := range resp.Topics[topic].Partitions {
				if pr.Err != sarama.ErrNoError {
					return fmt.Errorf("delete records of %s/%d below %d: %w", topic, p, offs[p], pr.Err)
				}
				if r.deleted[topic] == nil {
					r.deleted[topic] = map[int32]int64{}
				}
				r.deleted[topic][p] = offs[p]
			}
		}
	}
	return nil
}
