package kafka

import (
	"errors"
	"fmt"
	"math/rand/v2"
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

// retryPolicy is how a request of the sink is retried (Flink: the Kafka
// producer's retries, retry.backoff.ms and delivery.timeout.ms). now and
// sleep are the clock it waits on; tests step a clock of their own.
type retryPolicy struct {
	timeout    time.Duration // retry until this long after the first try
	backoff    time.Duration // the first wait
	backoffMax time.Duration
	now        func() time.Time
	// sleep waits d, or less when stop is closed (false then).
	sleep func(d time.Duration, stop <-chan struct{}) bool
	// jitter spreads a wait.
	jitter func(time.Duration) time.Duration
}

func defaultRetryPolicy() retryPolicy {
	return retryPolicy{
		timeout: DefaultRetryTimeout, backoff: retryBackoff, backoffMax: retryBackoffMax,
		now: time.Now, sleep: sleepUnlessStopped, jitter: jitter20,
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
func (p retryPolicy) wait(try int) time.Duration {
	d := p.backoffMax
	if try <= 30 && p.backoff<<(try-1) < p.backoffMax {
		d = p.backoff << (try - 1)
	}
	return min(p.jitter(d), p.backoffMax)
}

// do runs try until it succeeds, fails with an error that retrying cannot
// help, the broker was unreachable unreachableTries times in a row, or the
// next try would begin after the policy's timeout; it waits a backoff
// between tries, unless stop is closed (nil: never). The error names what
// was tried.
func (p retryPolicy) do(what string, stop <-chan struct{}, try func() error) error {
	start := p.now()
	unreachable := 0
	for n := 1; ; n++ {
		err := try()
		if err == nil {
			return nil
		}
		switch retryClassOf(err) {
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
		if elapsed := p.now().Sub(start); elapsed+d > p.timeout {
			return fmt.Errorf("%s: still failing after %d tries in %s: %w", what, n, elapsed.Round(time.Millisecond), err)
		}
		if !p.sleep(d, stop) {
			return fmt.Errorf("%s: %w", what, errWriterClosed)
		}
	}
}

type retryClass int

const (
	retryAgain       retryClass = iota // after a backoff
	retryUnreachable                   // the broker could not be connected to
	retryNever
)

// unreachableError is a broker the writer could not connect to (refused,
// timed out, or closed before it answered ApiVersions).
type unreachableError struct {
	what string // the broker's address, or what was looked for
	err  error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("%s cannot be reached: %v", e.what, e.err)
}
func (e *unreachableError) Unwrap() error { return e.err }

// retryClassOf says whether a request that failed with err may succeed
// when sent again. Kafka's retriable errors are, after the refresh that
// refreshAfter does; a broken connection is too; every other Kafka error is
// not (fenced, invalid transaction state, authorization, …), nor is a
// mistake of our own.
func retryClassOf(err error) retryClass {
	var kerr sarama.KError
	if errors.As(err, &kerr) && !retriableKError(kerr) {
		return retryNever
	}
	var unreachable *unreachableError
	switch {
	case errors.As(err, &unreachable):
		return retryUnreachable
	case errors.As(err, &kerr):
		return retryAgain
	case errors.Is(err, errWriterClosed), errors.Is(err, sarama.ErrClosedClient), errors.Is(err, ErrNoCommonVersion),
		errors.Is(err, ErrRecordTooLarge), errors.Is(err, sarama.ErrUnsupportedVersion):
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

// needsCoordinatorRefresh: the transaction coordinator moved or is not
// known yet.
func needsCoordinatorRefresh(err error) bool {
	return errors.Is(err, sarama.ErrNotCoordinatorForConsumer) || errors.Is(err, sarama.ErrConsumerCoordinatorNotAvailable)
}

// needsMetadataRefresh: the partition's leader moved or is not known yet.
func needsMetadataRefresh(err error) bool {
	for _, e := range []sarama.KError{sarama.ErrNotLeaderForPartition, sarama.ErrLeaderNotAvailable,
		sarama.ErrUnknownTopicOrPartition, sarama.ErrFencedLeaderEpoch, sarama.ErrUnknownLeaderEpoch, sarama.ErrKafkaStorageError} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
