package kafka

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/IBM/sarama"
)

// MissingTopics returns those of names the cluster does not have, sorted.
func MissingTopics(cl sarama.Client, names []string) ([]string, error) {
	if err := cl.RefreshMetadata(); err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	have, err := cl.Topics()
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	var missing []string
	for _, n := range names {
		if !slices.Contains(have, n) && !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	slices.Sort(missing)
	return missing, nil
}

// EnsureTopics creates the topics that do not exist yet, and waits until
// every partition of those it created answers at its leader: a Kafka
// cluster answers CreateTopics once its controller has recorded them, a
// moment before a broker leads their partitions, and a request there in
// between fails with NOT_LEADER_OR_FOLLOWER.
//
// inputs are topics the input writer writes by partition: one that exists
// already must have the partitions asked.
func EnsureTopics(ctx context.Context, cl sarama.Client, topics map[string]int32, inputs ...string) error {
	admin, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		return err
	}
	existing, err := admin.ListTopics()
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	var created []string
	for name, parts := range topics {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if d, ok := existing[name]; ok {
			if name != "" && d.NumPartitions < parts && slices.Contains(inputs, name) {
				return fmt.Errorf("topic %s has %d partitions; the input writer writes %d", name, d.NumPartitions, parts)
			}
			continue
		}
		err := admin.CreateTopic(name, &sarama.TopicDetail{NumPartitions: parts, ReplicationFactor: 1}, false)
		if err != nil && err != sarama.ErrTopicAlreadyExists {
			if te, ok := err.(*sarama.TopicError); !ok || te.Err != sarama.ErrTopicAlreadyExists {
				return fmt.Errorf("create topic %s: %w", name, err)
			}
		}
		created = append(created, name)
	}
	return awaitLeaders(ctx, cl, created, topicReadyTimeout)
}

// topicReadyTimeout is how long a new topic's partitions may take to get a
// leader that answers.
const topicReadyTimeout = 30 * time.Second

// awaitLeaders waits until every partition of topics has a leader that
// answers a ListOffsets request, or the timeout has passed, or ctx ended.
func awaitLeaders(ctx context.Context, cl sarama.Client, topics []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, t := range topics {
		for {
			err := answersAtLeaders(cl, t)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("topic %s was created, but its partitions had no leader that answers after %s: %w", t, timeout, err)
			}
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			cl.RefreshMetadata(t)
		}
	}
	return nil
}

// answersAtLeaders asks the leader of every partition of topic for its end
// offset.
func answersAtLeaders(cl sarama.Client, topic string) error {
	parts, err := cl.Partitions(topic)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		return fmt.Errorf("no partitions yet")
	}
	for _, p := range parts {
		if _, err := cl.GetOffset(topic, p, sarama.OffsetNewest); err != nil {
			return fmt.Errorf("partition %d: %w", p, err)
		}
	}
	return nil
}
