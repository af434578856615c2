package runtime

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/faultline-dev/faultline/runtime/view"
)

// What a decoding operator does with a record it cannot parse
// (--on-bad-record).
const (
	// BadRecordFail fails the task: the job restarts and meets the record
	// again, until the restart strategy gives up (Flink's behaviour without
	// a deserialization error handler).
	BadRecordFail = "fail"
	// BadRecordSkip drops the record and counts it.
	BadRecordSkip = "skip"
	// BadRecordDeadLetter writes the record to the dead-letter topic and
	// counts it.
	BadRecordDeadLetter = "dead-letter"
)

// PoisonRecord is what the poison fault writes into an input topic: bytes
// no parser accepts.
var PoisonRecord = []byte("\x00\xffpoison: not JSON, not an order, not a payment\xff")

// ParseOnBadRecord reads what to do with a record a parse cannot read
// ("" is BadRecordFail); an error is a *ConfigError.
func ParseOnBadRecord(s string) (string, error) {
	switch s {
	case "":
		return BadRecordFail, nil
	case BadRecordFail, BadRecordSkip, BadRecordDeadLetter:
		return s, nil
	}
	return "", &ConfigError{Key: KeyOnBadRecord, Value: fmt.Sprintf("%q", s), Want: "fail, skip or dead-letter"}
}

// DeadLetters takes the records a job could not parse (a dead-letter
// queue). Its writes are at least once: a record met again after a restart
// is written again.
type DeadLetters interface {
	// DeadLetter writes record, which task could not parse for reason;
	// from is where the source read it (Topic "": not known).
	DeadLetter(task string, record []byte, from Origin, reason string) error
	// Topic names where they go, for messages.
	Topic() string
}

// badRecords is the job's policy for records that cannot be parsed, and
// its counters.
type badRecords struct {
	progress *commitProgress // for sinks: not about bad records, but passed the same way
	ttl      *TTLCounts      // for joins, passed the same way
	// replaySkipped counts, for the sinks, the records a restore past a
	// damaged checkpoint did not write again (see sinkOp.skip).
	replaySkipped atomic.Int64
	mode          string
	dlq           DeadLetters
	obs           *Observer
	count         map[string]*atomic.Int64 // by action: skipped, dead-lettered
}

func newBadRecords(mode string, dlq DeadLetters, obs *Observer) *badRecords {
	return &badRecords{mode: mode, dlq: dlq, obs: obs, ttl: &TTLCounts{}, count: map[string]*atomic.Int64{
		"skipped": {}, "dead-lettered": {},
	}}
}

// handle decides what a decode error err of record in task becomes: nil
// when the record is skipped or dead-lettered, the error (failing the
// task) otherwise. A record of the other schema means the operator reads
// the wrong topic: no restart can help, so the error is unrecoverable.
func (b *badRecords) handle(task string, rec *Record, err error) error {
	record := rec.Bytes
	var bad *ErrBadRecord
	if !errors.As(err, &bad) {
		return err
	}
	if bad.OtherSchema != "" {
		return unrecoverable(fmt.Errorf("%w: schema %s can never parse this input, which holds %ss (does the source read the wrong topic?)", err, bad.Schema, bad.OtherSchema))
	}
	var action string
	switch b.mode {
	case BadRecordSkip:
		action = "skipped"
	case BadRecordDeadLetter:
		if b.dlq == nil {
			return fmt.Errorf("%w (and there is no dead-letter topic to write it to)", err)
		}
		if derr := b.dlq.DeadLetter(task, record, EventTimeOf(rec).Origin, bad.Reason); derr != nil {
			return fmt.Errorf("%w; writing it to dead-letter topic %s: %w", err, b.dlq.Topic(), derr)
		}
		action = "dead-lettered"
	default:
		return err
	}
	n := b.count[action].Add(1)
	e := view.BadRecord{Task: task, Action: action, Reason: bad.Reason, Record: snippet(record), Total: n}
	if action == "dead-lettered" {
		e.Topic = b.dlq.Topic()
	}
	b.obs.Emit(e)
	return nil
}

// Counts returns how many records were skipped and dead-lettered.
func (b *badRecords) Counts() (skipped, deadLettered int64) {
	return b.count["skipped"].Load(), b.count["dead-lettered"].Load()
}

// snippet is record for a message: at most 80 bytes, as text.
func snippet(record []byte) string {
	if len(record) > 80 {
		return string(record[:80]) + "…"
	}
	return string(record)
}

// TTLCounts counts what the state TTL of the job's operators did (the
// orders job's join), over every attempt of the job; OperatorContext.
// StateTTL hands it to them.
type TTLCounts struct {
	// NotJoined counts the orders whose payment came more than the TTL
	// apart in event time: they are not joined.
	NotJoined atomic.Int64
	// Expired counts the waiting sides the cleanup dropped: orders never
	// paid, and sides whose partner will come too late to join.
	Expired atomic.Int64
}
