package kafka

import (
	"context"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime"
)

// TxnRecords hands f every record that producer pid wrote at epoch into
// partition p of topic from offset from on, in offset order, up to that
// transaction's end marker, to (when not -1: the offset after its last
// record) or the partition's end, whichever comes first: the records of one
// transaction, read back from the log whether it was committed or
// aborted. A broker keeps an aborted transaction's records in its log,
// marked aborted, until its retention removes them; an exactly-once sink
// reads a prepared transaction it lost back from there (see
// runtime.CommittedChecker). It gives up when ctx ends.
func TxnRecords(ctx context.Context, cl sarama.Client, topic string, p int32, from, to int64, pid int64, epoch int16, f func(runtime.OutputRecord) error) error {
	end, err := cl.GetOffset(topic, p, sarama.OffsetNewest)
	if err != nil {
		return fmt.Errorf("end of %s/%d: %w", topic, p, err)
	}
	if to >= 0 {
		end = min(end, to)
	}
	for off, began := from, false; off < end; {
		if err := ctx.Err(); err != nil {
			return err
		}
		blk, err := fetchOnce(cl, topic, p, off, sarama.ReadUncommitted)
		if err != nil {
			return err
		}
		next := off
		for _, rs := range blk.RecordsSet {
			rb := rs.RecordBatch
			if rb == nil {
				if rs.MsgSet != nil {
					return fmt.Errorf("fetch %s/%d: %w", topic, p, errLegacyRecords)
				}
				continue
			}
			if rb.PartialTrailingRecord {
				break
			}
			next = max(next, rb.LastOffset()+1)
			if rb.ProducerID != pid || rb.LastOffset() < off {
				continue
			}
			if rb.Control {
				// The transaction's marker ends it; a broker that aborts
				// a transaction on its timeout writes it at a higher
				// epoch. A marker before its first record is an earlier
				// transaction's.
				if began && rb.ProducerEpoch >= epoch {
					return nil
				}
				continue
			}
			if rb.ProducerEpoch != epoch {
				continue
			}
			began = true
			for _, r := range rb.Records {
				if o := rb.FirstOffset + r.OffsetDelta; o < off || o >= end {
					continue
				}
				rec := runtime.OutputRecord{Key: r.Key, Value: r.Value, Time: rb.FirstTimestamp.Add(r.TimestampDelta).UnixMilli()}
				if err := f(rec); err != nil {
					return err
				}
			}
		}
		if next == off {
			return fmt.Errorf("read %s/%d at %d: the broker returned nothing below its end %d", topic, p, off, end)
		}
		off = next
	}
	return nil
}
