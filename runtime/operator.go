package runtime

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/faultline-dev/faultline/backend"
	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/clock"
)

// OperatorContext is what an operator gets when it opens (Flink:
// StreamingRuntimeContext + StateInitializationContext).
type OperatorContext struct {
	Task           checkpoint.TaskID
	Parallelism    int
	MaxParallelism int
	Attempt        int64
	// Checkpointing tells whether periodic or final checkpoints will come;
	// without them a sink commits at the end of its input.
	Checkpointing bool
	// Keyed is the subtask's keyed state, already restored.
	Keyed backend.KeyedBackend
	// restored operator state: name → the values every subtask of the
	// operator had in the checkpoint restored from (union redistribution).
	restored map[string][][]byte
	// Restored is true when the job restarted from a checkpoint.
	Restored bool
	// RestoredFrom is that checkpoint's id.
	RestoredFrom int64
	// TrackRollback asks the operator to keep what it needs to count the
	// records an individual failover would lose (see RollbackCounter).
	TrackRollback bool
	// Replay is set when the restore went back past newer completed
	// checkpoints whose state could not be read (a damaged checkpoint):
	// the source offsets of the newest of them, or empty when they are not
	// known. The sink's output already holds what the job emits again
	// until its sources pass them. Set without Restored, on a start with
	// no checkpoint at all (RunOptions.SkipCommitted), it is empty: the
	// whole committed output is emitted again.
	Replay checkpoint.Offsets
	// Completed returns a completed checkpoint, by id.
	Completed func(id int64) (*checkpoint.Completed, bool)
	// clk is the job's clock (nil outside a subtask: the wall clock).
	clk clock.Clock
	// batchStart is when the subtask began the batch of input it is
	// processing (nil outside a subtask).
	batchStart *time.Time
	// InputChannels is how many input channels the subtask reads, over all
	// its inputs (Flink: the channels of its input gates): one per
	// upstream subtask of each input edge.
	InputChannels int
	// channel is the input channel, 0 to InputChannels-1, of the batch the
	// subtask is processing (nil outside a subtask); InputWatermarks reads
	// it.
	channel *int
	// stop is closed when the subtask is cancelled (nil outside a
	// subtask): what Open waits on gives up then.
	stop <-chan struct{}
	// watermark is where NoteWatermark publishes (nil outside a subtask).
	watermark *atomic.Int64
	// bad is what the job does with records its operators cannot decode,
	// and where it counts what the joins' state TTL did (nil outside a
	// job: a bad record fails the operator, the counts go nowhere).
	bad    *badRecords
	ownTTL *TTLCounts
}

// StandaloneContext is the context of an operator opened outside a job
// (a job's unit tests, tools): subtask 0 of 1, keyed state kb (nil: none)
// over maxParallelism key groups, reading channels input channels, the
// record at hand from channel *ch (nil: channel 0). A bad record fails the
// operator; its state TTL counts are its own.
func StandaloneContext(kb backend.KeyedBackend, maxParallelism, channels int, ch *int) *OperatorContext {
	return &OperatorContext{Keyed: kb, Parallelism: 1, MaxParallelism: maxParallelism, InputChannels: channels, channel: ch}
}

// BadRecord hands the engine a record the operator could not decode (err
// an *ErrBadRecord): it fails the job, skips the record or sends it to
// the dead-letter topic, as the job is configured (Config.OnBadRecord).
// An error it returns is the operator's to return; any other err comes
// back as it is.
func (c *OperatorContext) BadRecord(rec *Record, err error) error {
	if c.bad == nil {
		return err
	}
	return c.bad.handle(c.Task.String(), rec, err)
}

// StateTTL is where an operator with a state TTL counts what it did,
// shared by the job's operators, for the report's state_ttl; outside a
// job, counts of its own.
func (c *OperatorContext) StateTTL() *TTLCounts {
	if c.bad == nil || c.bad.ttl == nil {
		if c.ownTTL == nil {
			c.ownTTL = &TTLCounts{}
		}
		return c.ownTTL
	}
	return c.bad.ttl
}

// NoteWatermark publishes the subtask's current input watermark (event-time
// ms; Flink: currentInputWatermark), for the UI and the load events. An
// operator that keeps no watermark never calls it.
func (c *OperatorContext) NoteWatermark(ms int64) {
	if c.watermark != nil {
		c.watermark.Store(ms)
	}
}

// BatchStart is when the subtask began the batch of input records it is
// processing, a processing time for each of them that costs no clock read
// (a batch takes well under a millisecond); the job clock's current time
// outside a subtask's input.
func (c *OperatorContext) BatchStart() time.Time {
	if c.batchStart == nil || c.batchStart.IsZero() {
		if c.clk == nil {
			return clock.Real{}.Now()
		}
		return c.clk.Now()
	}
	return *c.batchStart
}

// RestoredState returns the values of operator state name that every subtask
// of this operator had in the restored checkpoint.
func (c *OperatorContext) RestoredState(name string) [][]byte { return c.restored[name] }

// RestoredNames lists the names of the restored operator state entries
// that start with prefix, sorted.
func (c *OperatorContext) RestoredNames(prefix string) []string {
	var out []string
	for name := range c.restored {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Collector takes the records an operator emits.
type Collector interface {
	Collect(rec Record)
}

// Operator is the life cycle every operator shares (Flink: StreamOperator).
type Operator interface {
	Open(ctx *OperatorContext) error
	Close() error
}

// OneInput processes records of a single input (Flink: OneInputStreamOperator).
type OneInput interface {
	Operator
	Process(rec *Record, out Collector) error
}

// TwoInput processes records of two inputs (Flink: TwoInputStreamOperator).
type TwoInput interface {
	Operator
	Process1(rec *Record, out Collector) error
	Process2(rec *Record, out Collector) error
}

// StateSnapshotter is an operator with operator (non-keyed) state; the
// synchronous part of a snapshot calls it. Keyed state is snapshotted by the
// task through the keyed backend. Nothing may change the values it returns
// afterwards: the asynchronous part writes them out, and a store may keep
// them as they are.
type StateSnapshotter interface {
	SnapshotState(id int64) (map[string][]byte, error)
}

// CheckpointListener is told when a checkpoint completed (Flink:
// CheckpointListener.notifyCheckpointComplete).
type CheckpointListener interface {
	NotifyCheckpointComplete(id int64) error
}

// CheckpointAbortListener is told when a checkpoint was aborted.
type CheckpointAbortListener interface {
	NotifyCheckpointAborted(id int64) error
}

// InputEnder is told when every input has ended (Flink: BoundedMultiInput
// endInput / finish).
type InputEnder interface {
	EndInput(out Collector) error
}

// Source is one input topic (Flink: Source with its split enumerator): it
// has partitions and opens readers on them at given offsets.
type Source interface {
	Topic() string
	Partitions() int
	// Reader reads partitions from offsets; a partition without an offset
	// starts at the beginning.
	Reader(partitions []int32, offsets map[int32]int64) (SourceReader, error)
}

// SourceReader reads the partitions assigned to one source subtask (Flink:
// SourceReader).
type SourceReader interface {
	// Poll appends up to max records to dst and returns it; done reports
	// that every assigned partition reached its end (bounded input).
	Poll(ctx context.Context, dst []Record, max int) (out []Record, done bool, err error)
	// Offsets is the next offset to read of every assigned partition.
	Offsets() map[int32]int64
	Close() error
}

// WaitingReader is a SourceReader that says how long its Poll calls
// have waited for records to come, in all (the wall clock's time): a
// source subtask counts that as idle, not busy, though the Poll it waited
// in returned records (Flink: a source waiting for data is idle).
type WaitingReader interface {
	Waited() time.Duration
}

// LagReporter is a SourceReader that knows how far behind its input it
// is: the most records any of its partitions holds past the next one it
// reads, as the broker last told (Flink: the Kafka source's
// records-lag-max), -1 while it does not know.
type LagReporter interface {
	Lag() int64
}

// ClockedSource is a Source whose readers keep time (a generator at a
// rate): a subtask opens them on the job's clock.
type ClockedSource interface {
	ReaderOn(clk clock.Clock, partitions []int32, offsets map[int32]int64) (SourceReader, error)
}

// OffsetCommitter is a SourceReader that reports its progress outside the
// job when a checkpoint completes (Flink: KafkaSourceReader commits the
// checkpoint's offsets to the consumer group in notifyCheckpointComplete).
// The job never reads these offsets back while it runs; failures to commit
// them are logged, not fatal.
type OffsetCommitter interface {
	CommitOffsets(offsets map[int32]int64) error
}

// OutputPositioner is an operator writing to an external system that can
// say, at a snapshot, where in it the transactions the snapshot
// pre-committed begin (checkpoint.SubtaskAck.OutputFrom).
type OutputPositioner interface {
	OutputFrom() checkpoint.Offsets
}

// ErrTxnLost means the output no longer has a prepared transaction: it was
// aborted behind the sink's back (a broker that died with open
// transactions, a transaction timeout), so committing it is impossible.
var ErrTxnLost = errors.New("the prepared transaction is gone from the output")

// TxnOutput is the transactional external system a two-phase-commit sink
// writes to (Flink: TwoPhaseCommittingSink, as with Kafka transactions).
// Transactions are named by the sink: prefix + sequence number, where the
// prefix is unique to one sink subtask; a name may be used again once its
// transaction ended.
type TxnOutput interface {
	// Write adds a record to transaction txn, beginning it if it is not open.
	Write(txn string, key, value []byte) error
	// Prepare flushes txn (pre-commit) and returns a committable: what
	// Commit needs to finish it, later and even from another process. A
	// transaction with nothing written gives "" (nothing to commit).
	Prepare(txn string) (committable string, err error)
	// Commit finishes a prepared transaction. Committing one that is
	// already committed is a no-op, or ErrTxnLost when the output can no
	// longer tell (the Kafka output's pooled transactional id began a
	// newer transaction since); one that was aborted is an error
	// (ErrTxnLost). On ErrTxnLost the sink asks the output what of the
	// transaction it lacks (see redoLost).
	Commit(committable string) error
	// AbortLingering aborts the open transactions named prefix+N for every
	// N ≥ from: what a failed attempt or process left behind. An output
	// may abort every open transaction of the prefix (the Kafka output's
	// ids come from a pool): the sink commits the restored checkpoint's
	// pre-committed transactions before it calls this.
	AbortLingering(prefix string, from int64) error
}

// PositionReader is a TxnOutput that can say where in the output a
// transaction named by its committable began (the Kafka output: topic and
// offsets; ok false when it cannot tell).
type PositionReader interface {
	PositionOf(committable string) (topic string, from map[int32]int64, ok bool)
}

// CommittedReader is a PositionReader that can read its committed output
// from given positions (the Kafka output). A read gives up when ctx ends.
type CommittedReader interface {
	PositionReader
	CommittedFrom(ctx context.Context, from map[int32]int64) ([]OutputRecord, error)
}

// CommittedChecker is a TxnOutput that can read back the records of a
// prepared transaction whatever became of it, and say which of them its
// committed output lacks. Kafka keeps an aborted transaction's records in
// its log, marked aborted: the Kafka output reads them by producer id and
// epoch from where the transaction began. A sink whose restored checkpoint
// pre-committed a transaction the output lost (ErrTxnLost) writes again
// what is missing of it (see redoLost), and a sink restored past newer
// checkpoints tells its own records from theirs (see committedPast).
type CommittedChecker interface {
	// Prepared returns the records of the transaction of committable.
	Prepared(ctx context.Context, committable string) ([]OutputRecord, error)
	// Missing returns those of recs that the committed output lacks at
	// or after where the transaction of committable began.
	Missing(ctx context.Context, committable string, recs []OutputRecord) ([]OutputRecord, error)
}

// CommitReporter is an OffsetCommitter that can say whether its last
// commit, the one its Close waits for, failed.
type CommitReporter interface {
	LastCommitError() error
}

// TimedWriter is a TxnOutput that takes each record's timestamp from the
// sink (its processing time) instead of reading the clock for each.
type TimedWriter interface {
	WriteAt(txn string, key, value []byte, at time.Time) error
}
