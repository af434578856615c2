package kafka

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/IBM/sarama"
)

// DefaultRetryTimeout is how long the sink's requests to Kafka
// (InitProducerID, AddPartitionsToTxn, Produce, EndTxn) are retried while
// they fail with an error that may pass, such as a leader or coordinator
// moving to another broker (Kafka: the producer's delivery.timeout.ms).
const DefaultRetryTimeout = 60 * time.Second

// The backoff between two tries doubles from retryBackoff up to
// retryBackoffMax, each wait 20 % shorter or longer at random so that the
// writers of several subtasks do not retry in step (Kafka:
// retry.backoff.ms and retry.backoff.max.ms).
const (
	retryBackoff    = 100 * time.Millisecond
	retryBackoffMax = time.Second
	// unreachableTries: a broker that cannot be connected to this many
	// tries in a row fails the request at once, whatever the timeout, so
	// that a failover is not held up (the restart strategy retries).
	unreachableTries = 2
)

// RetryPolicy is how a request to Kafka is retried: the sink's (Flink: the
// Kafka producer's retries, retry.backoff.ms and delivery.timeout.ms) and
// the source's offset commits. Now and Sleep are the clock it waits on;
// tests step a clock of their own.
type RetryPolicy struct {
	Timeout    time.Duration // retry until this long after the first try
	Backoff    time.Duration // the first wait
	BackoffMax time.Duration
	Now        func() time.Time
	// Sleep waits d, or less when stop is closed (false then).
	Sleep func(d time.Duration, stop <-chan struct{}) bool
	// Jitter spreads a wait.
	Jitter func(time.Duration) time.Duration
	// Final are errors of the caller's own that retrying cannot help
	// (matched with errors.Is), besides those Do knows.
	Final []error
}

// DefaultRetryPolicy retries for DefaultRetryTimeout on the wall clock,
// with the backoffs of Kafka's producer.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		Timeout: DefaultRetryTimeout, Backoff: retryBackoff, BackoffMax: retryBackoffMax,
		Now: time.Now, Sleep: sleepUnlessStopped, Jitter: jitter20,
	}
}

func sleepUnlessStopped(d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}

// jitter20 is d, 20 % shorter or longer at random.
func jitter20(d time.Duration) time.Duration {
	spread := int64(d) * 2 / 5
	if spread <= 0 {
		return d
	}
	return d - time.Duration(spread/2) + time.Duration(rand.Int64N(spread+1))
}

// wait is the backoff after the try-th failure (1 for the first).
func (p RetryPolicy) wait(try int) time.Duration {
	d := p.BackoffMax
	if try <= 30 && p.Backoff<<(try-1) < p.BackoffMax {
		d = p.Backoff << (try - 1)
	}
	return min(p.Jitter(d), p.BackoffMax)
}

// Do runs try until it succeeds, fails with an error that retrying cannot
// help, the broker was unreachable unreachableTries times in a row, or the
// next try would begin after the policy's timeout; it waits a backoff
// between tries, unless stop is closed (nil: never). The error names what
// was tried.
func (p RetryPolicy) Do(what string, stop <-chan struct{}, try func() error) error {
	start := p.Now()
	unreachable := 0
	for n := 1; ; n++ {
		err := try()
		if err == nil {
			return nil
		}
		switch p.classOf(err) {
		case retryNever:
			return fmt.Errorf("%s: %w", what, err)
		case retryUnreachable:
			if unreachable++; unreachable >= unreachableTries {
				return fmt.Errorf("%s: %w", what, err)
			}
		default:
			unreachable = 0
		}
		d := p.wait(n)
		if elapsed := p.Now().Sub(start); elapsed+d > p.Timeout {
			return fmt.Errorf("%s: still failing after %d tries in %s: %w", what, n, elapsed.Round(time.Millisecond), err)
		}
		if !p.Sleep(d, stop) {
			return fmt.Errorf("%s: %w", what, ErrWriterClosed)
		}
	}
}

type retryClass int

const (
	retryAgain       retryClass = iota // after a backoff
	retryUnreachable                   // the broker could not be connected to
	retryNever
)

// ErrWriterClosed means a writer was closed while a request waited to be
// sent or tried again; Do returns it when stop is closed during a backoff.
var ErrWriterClosed = errors.New("the writer was closed")

// UnreachableError is a broker the writer could not connect to (refused,
// timed out, or closed before it answered ApiVersions): Do gives up on it
// after unreachableTries tries in a row.
type UnreachableError struct {
	What string // the broker's address, or what was looked for
	Err  error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("%s cannot be reached: %v", e.What, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// classOf says whether a request that failed with err may succeed
// when sent again. Kafka's retriable errors are (a caller whose request
// names a coordinator or a leader refreshes it before the next try, see
// NeedsCoordinatorRefresh); a broken connection is too; every other
// Kafka error is not (fenced, invalid transaction state, authorization,
// …), nor is a mistake of our own (p.Final among them).
func (p RetryPolicy) classOf(err error) retryClass {
	var kerr sarama.KError
	if errors.As(err, &kerr) && !retriableKError(kerr) {
		return retryNever
	}
	var unreachable *UnreachableError
	switch {
	case errors.As(err, &unreachable):
		return retryUnreachable
	case errors.As(err, &kerr):
		return retryAgain
	case errors.Is(err, ErrWriterClosed), errors.Is(err, sarama.ErrClosedClient), errors.Is(err, sarama.ErrUnsupportedVersion),
		slices.ContainsFunc(p.Final, func(final error) bool { return errors.Is(err, final) }):
		return retryNever
	}
	return retryAgain // the connection broke, or the broker's answer did
}

// retriableKError: the errors Kafka's Java client retries (its
// RetriableException subclasses) among those these requests can get.
func retriableKError(kerr sarama.KError) bool {
	switch kerr {
	case sarama.ErrNotLeaderForPartition, sarama.ErrLeaderNotAvailable, sarama.ErrRequestTimedOut,
		sarama.ErrNotEnoughReplicas, sarama.ErrNotEnoughReplicasAfterAppend, sarama.ErrNetworkException,
		sarama.ErrUnknownTopicOrPartition, sarama.ErrKafkaStorageError, sarama.ErrReplicaNotAvailable,
		sarama.ErrFencedLeaderEpoch, sarama.ErrUnknownLeaderEpoch, sarama.ErrBrokerNotAvailable,
		sarama.ErrConcurrentTransactions, sarama.ErrNotCoordinatorForConsumer,
		sarama.ErrConsumerCoordinatorNotAvailable, sarama.ErrOffsetsLoadInProgress:
		return true
	}
	return false
}

// NeedsCoordinatorRefresh reports whether err says that the coordinator
// (of a transaction or a consumer group) moved or is not known yet.
func NeedsCoordinatorRefresh(err error) bool {
	return errors.Is(err, sarama.ErrNotCoordinatorForConsumer) || errors.Is(err, sarama.ErrConsumerCoordinatorNotAvailable)
}
