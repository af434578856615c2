package kafka

import (
	"context"
	"errors"

	"faultline/checkpoint"
)

// LiveStatus is the live verification line: what a read_committed consumer
// of the output topic sees right now, checked against the input.
type LiveStatus struct {
	// Available is false until the first check has completed.
	Available bool
	// Committed counts the records in the committed output since the start
	// offsets; Duplicates the order ids seen more than once among them.
	// Both are live: they follow the output as it is committed.
	Committed  int
	Duplicates int
	// Lost counts the expected records (paid orders, or orders for an
	// "orders" job) that checkpoint AsOf covers and that are not in the
	// committed output, once every transaction of AsOf is visible.
	Lost int
	AsOf int64
	// Err says why verification cannot go on (a topic that cannot be read),
	// when it cannot.
	Err string
}

// Committed tells the live verifier how far the job's output is committed:
// the newest checkpoint id whose sink transactions have all been committed,
// and its source offsets by generator topic ("orders", "payments") and
// partition. ok is false while no checkpoint's output is committed.
type Committed func() (id int64, bounds checkpoint.Offsets, ok bool)

// LiveVerifier follows, while a job runs, its input topics and the
// read_committed view of its output topic, and keeps LiveStatus up to date
// (the oracle of the final report, run continuously). See NewLiveVerifier.
type LiveVerifier struct {
	// (written by the implementation)
}

// LiveConfig says what a LiveVerifier reads.
type LiveConfig struct {
	Client Client
	// Inputs maps the generator's topics ("orders", and "payments" for a
	// paid-orders job) to the Kafka topics the job reads them from.
	Inputs map[string]string
	// InputFrom is, per generator topic, the offset of each partition the
	// job's input starts at (nil or missing: the beginning).
	InputFrom map[string]map[int32]int64
	// Output is the topic the sink writes; OutputFrom the offsets its
	// output starts at (nil: the beginning).
	Output     string
	OutputFrom map[int32]int64
	// Expect is the job spec's verify kind: "paid-orders" or "orders".
	Expect string
}

// ErrNotImplemented is returned until the live verifier is written.
var ErrNotImplemented = errors.New("live verification is not implemented")

// NewLiveVerifier returns a verifier for cfg; Run starts it.
func NewLiveVerifier(cfg LiveConfig) *LiveVerifier { return &LiveVerifier{} }

// Run follows the topics until ctx ends, checking Lost each time committed
// reports a newer checkpoint. It returns nil when ctx ends, or the error
// that stopped it.
func (v *LiveVerifier) Run(ctx context.Context, committed Committed) error { return ErrNotImplemented }

// Status is the latest verification; safe to call at any time, from any
// goroutine, and cheap (the UI calls it on every frame).
func (v *LiveVerifier) Status() LiveStatus { return LiveStatus{Err: ErrNotImplemented.Error()} }
