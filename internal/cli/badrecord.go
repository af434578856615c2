package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/atomicfile"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/view"
)

// badRecordFile is the state dir's note of the records a run with
// --on-bad-record fail stopped at: records no parser accepts, in the input
// ahead of the last checkpoint. Every run with that policy meets them
// again and fails the same way, so the summary and the next run's start
// say so. The note goes when a checkpoint's source offsets are past every
// record it names (a run with skip or dead-letter got past them), and with
// everything else in the state dir (reset, --fresh).
const badRecordFile = "bad-record.json"

// badRecordAt is where an input record lies that the job cannot parse.
type badRecordAt struct {
	Topic     string `json:"topic"` // the Kafka topic
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Reason    string `json:"reason,omitempty"` // why it cannot be parsed
}

// String is where the record lies, as topic/partition@offset.
func (b badRecordAt) String() string { return fmt.Sprintf("%s/%d@%d", b.Topic, b.Partition, b.Offset) }

// badRecordNote is the content of badRecordFile.
type badRecordNote struct {
	Records []badRecordAt `json:"records"`
}

// readBadRecords reads the state dir's badRecordFile. The note is advice:
// none, or one that cannot be read, is no record.
func readBadRecords(stateDir string) []badRecordAt {
	b, err := os.ReadFile(filepath.Join(stateDir, badRecordFile))
	if err != nil {
		return nil
	}
	var n badRecordNote
	if json.Unmarshal(b, &n) != nil {
		return nil
	}
	return n.Records
}

// writeBadRecords replaces the state dir's badRecordFile with recs, whole
// or not at all; without records it removes it.
func writeBadRecords(stateDir string, recs []badRecordAt) error {
	path := filepath.Join(stateDir, badRecordFile)
	if len(recs) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", badRecordFile, err)
		}
		return nil
	}
	b, err := json.MarshalIndent(badRecordNote{Records: recs}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", badRecordFile, err)
	}
	return nil
}

// aheadOf keeps the records that checkpoint c has not got past: those at
// or after its source offset of their partition (the next offset to read).
// A job restored from c meets them again. Every record is ahead of no
// checkpoint (nil).
func aheadOf(recs []badRecordAt, c *checkpoint.Completed) []badRecordAt {
	if c == nil {
		return recs
	}
	offs := c.SourceOffsets()
	var out []badRecordAt
	for _, b := range recs {
		if next, ok := offs[b.Topic][b.Partition]; !ok || next <= b.Offset {
			out = append(out, b)
		}
	}
	return out
}

// badRecordWarning says what recs, the bad records ahead of checkpoint c
// (nil: none completed), mean for the runs to come: what ("the input
// holds a bad record at orders/0@670, ahead of the last checkpoint (5)")
// and what to do. The way back to a clean start is `faultline reset` with
// the embedded broker, whose log in the state dir holds the input; a
// cluster's topics keep the record whatever the state dir holds.
func badRecordWarning(recs []badRecordAt, c *checkpoint.Completed, embedded bool, explicitDir, stateDir string) (what, advice string) {
	where := make([]string, 0, 3)
	for i, b := range recs {
		if i == 3 {
			where = append(where, fmt.Sprintf("%d more", len(recs)-i))
			break
		}
		where = append(where, b.String())
	}
	list := where[0]
	if len(where) > 1 {
		list = strings.Join(where[:len(where)-1], ", ") + " and " + where[len(where)-1]
	}
	what, it := "the input holds a bad record at "+list, "it"
	if len(recs) > 1 {
		what, it = "the input holds bad records at "+list, "them"
	}
	if c != nil {
		what += fmt.Sprintf(", ahead of the last checkpoint (%d)", c.ID)
	} else {
		what += ", and no checkpoint is past " + it
	}
	advice = "every run with --on-bad-record fail stops at " + it + " again; go on with --on-bad-record skip or dead-letter"
	if embedded {
		reset := "faultline reset"
		if explicitDir != "" {
			reset += " --state-dir " + shellWord(stateDir)
		}
		advice += ", or start over with `" + reset + "`"
	}
	return what, advice
}

// shellWord quotes s for a shell when it needs it.
func shellWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// warnBadRecords, before a run starts, says when the state dir's input
// holds a bad record ahead of the last checkpoint and this run would stop
// at it (--on-bad-record fail): on stderr, which leaves the headless
// contract on stdout as it is. It drops from the note what the last
// checkpoint has got past.
func (r *runState) warnBadRecords(ctx context.Context, embedded bool) {
	recs := readBadRecords(r.stateDir)
	if len(recs) == 0 {
		return
	}
	latest, err := r.store.Latest(ctx)
	if err != nil {
		return
	}
	ahead := aheadOf(recs, latest)
	if len(ahead) < len(recs) {
		if err := writeBadRecords(r.stateDir, ahead); err != nil {
			r.logger.Printf("%v", err)
		}
	}
	if len(ahead) > 0 && r.o.onBadRecord == runtime.BadRecordFail {
		what, advice := badRecordWarning(ahead, latest, embedded, r.o.stateDir, r.stateDir)
		fmt.Fprintf(r.stderr, "faultline: %s: %s\n", what, advice)
		r.notices = append(r.notices, view.Notice{Text: what, Advice: advice})
	}
}

// noteBadRecords keeps the state dir's badRecordFile true once the job has
// ended, and returns the bad records ahead of its last checkpoint. A run
// that stopped with --on-bad-record fail after a parsing subtask failed
// reads its input after that checkpoint for the records it will meet
// again; any run drops from the note what its last checkpoint got past.
func (r *runState) noteBadRecords(res *runtime.Result) []badRecordAt {
	recs := aheadOf(readBadRecords(r.stateDir), res.Latest)
	if r.failedParsing(res) {
		found, err := r.findBadRecords(res.Latest)
		if err != nil {
			r.log.Warn("looking for the record the job could not parse", "err", err)
		} else {
			recs = found
		}
	}
	if err := writeBadRecords(r.stateDir, recs); err != nil {
		r.logger.Printf("%v", err)
	}
	return recs
}

// failedParsing reports whether the job stopped short of its end with
// --on-bad-record fail after a subtask that parses its input failed: a bad
// record may be what stopped it.
func (r *runState) failedParsing(res *runtime.Result) bool {
	if r.o.onBadRecord != runtime.BadRecordFail || res.Status == runtime.JobFinished {
		return false
	}
	for _, f := range res.Failures {
		name := f.Task
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[:i]
		}
		if op := r.p.job.Op(name); op != nil && (op.Type == orders.TypeParse || op.Type == orders.TypeEnrich) {
			return true
		}
	}
	return false
}

// parsers are, per Kafka topic, how the operators that read it straight
// from a source parse its records.
func (r *runState) parsers() map[string][]func([]byte) error {
	order := func(v []byte) error { _, err := orders.DecodeOrder(v); return err }
	payment := func(v []byte) error { _, err := orders.DecodePayment(v); return err }
	out := map[string][]func([]byte) error{}
	for _, op := range r.p.job.Operators {
		var parse func([]byte) error
		switch {
		case op.Type == orders.TypeParse && op.Schema == orders.SchemaPayment:
			parse = payment
		case op.Type == orders.TypeParse || op.Type == orders.TypeEnrich:
			parse = order
		default:
			continue
		}
		for _, in := range op.Inputs {
			if src := r.p.job.Op(in.From); src != nil && src.Type == spec.TypeSource {
				topic := r.p.topicMap[src.Name]
				out[topic] = append(out[topic], parse)
			}
		}
	}
	return out
}

// findBadRecords reads the input that a job restored from checkpoint c
// (nil: none) reads, from c's source offsets (where this run started, for
// a partition c does not name) to the end each partition has now, and
// returns, per partition, the first record the job fails on when it is a
// bad record (see firstBad). It gives up after 30 s.
func (r *runState) findBadRecords(c *checkpoint.Completed) ([]badRecordAt, error) {
	deadline := time.Now().Add(30 * time.Second)
	var offs checkpoint.Offsets
	if c != nil {
		offs = c.SourceOffsets()
	}
	cl, err := r.p.client.NewReaderClient()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	consumer, err := sarama.NewConsumerFromClient(cl)
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	parsers := r.parsers()
	topics := make([]string, 0, len(parsers))
	for t := range parsers {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	var found []badRecordAt
	for _, topic := range topics {
		parts, err := cl.Partitions(topic)
		if err != nil {
			return nil, fmt.Errorf("topic %s: %w", topic, err)
		}
		var started map[int32]int64
		if s := r.sources[topic]; s != nil {
			started = s.StartOffsets()
		}
		for _, part := range parts {
			from, ok := offs[topic][part]
			if !ok {
				from, ok = started[part]
			}
			oldest, err := cl.GetOffset(topic, part, sarama.OffsetOldest)
			if err != nil {
				return nil, fmt.Errorf("start offset of %s/%d: %w", topic, part, err)
			}
			if !ok || from < oldest {
				from = oldest
			}
			end, err := cl.GetOffset(topic, part, sarama.OffsetNewest)
			if err != nil {
				return nil, fmt.Errorf("end offset of %s/%d: %w", topic, part, err)
			}
			if from >= end {
				continue
			}
			b, err := firstBad(consumer, topic, part, from, end, parsers[topic], deadline)
			if err != nil {
				return nil, err
			}
			if b != nil {
				found = append(found, *b)
			}
		}
	}
	return found, nil
}

// firstBad reads partition part of topic from offset from up to end and
// returns the first record that one of parsers fails on, when it is a bad
// record (nil: none). A record of the other schema ends the search with
// none: the job fails on it whatever --on-bad-record says, and reads
// nothing after it.
func firstBad(consumer sarama.Consumer, topic string, part int32, from, end int64, parsers []func([]byte) error, deadline time.Time) (*badRecordAt, error) {
	pc, err := consumer.ConsumePartition(topic, part, from)
	if err != nil {
		return nil, fmt.Errorf("read %s/%d from offset %d: %w", topic, part, from, err)
	}
	defer pc.Close()
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	for {
		select {
		case m := <-pc.Messages():
			if m.Offset >= end {
				return nil, nil
			}
			for _, parse := range parsers {
				err := parse(m.Value)
				if err == nil {
					continue
				}
				var bad *runtime.ErrBadRecord
				if errors.As(err, &bad) && bad.OtherSchema == "" {
					return &badRecordAt{Topic: topic, Partition: part, Offset: m.Offset, Reason: bad.Reason}, nil
				}
				return nil, nil
			}
			if m.Offset+1 >= end {
				return nil, nil
			}
		case err := <-pc.Errors():
			return nil, fmt.Errorf("read %s/%d: %w", topic, part, err)
		case <-timeout.C:
			return nil, fmt.Errorf("read %s/%d: still short of offset %d after 30 s", topic, part, end)
		}
	}
}
