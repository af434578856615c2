package sink

import "github.com/IBM/sarama"

// keyPlacer gives a record with a key the partition Kafka's Java producer's
// default partitioner gives it (murmur2 of the key, made positive by
// dropping its sign bit, modulo the partitions: Java's
// BuiltInPartitioner.partitionForKey), with Sarama's murmur2 partitioner,
// so that a Kafka Streams or Flink job reading the output finds a key
// where its own producer would have put it. Sarama's default hash
// partitioner uses FNV-1a, which puts keys elsewhere than every Java,
// librdkafka (murmur2_random) or franz-go producer does. One goroutine
// uses a keyPlacer: it reuses its message.
type keyPlacer struct {
	p   sarama.Partitioner
	key sarama.ByteEncoder
	msg sarama.ProducerMessage
}

func newKeyPlacer(topic string) *keyPlacer {
	k := &keyPlacer{p: sarama.NewMurmur2Partitioner(topic)}
	k.msg.Key = &k.key
	return k
}

// partition is the partition among n of a record with this (non-nil) key.
func (k *keyPlacer) partition(key []byte, n int32) int32 {
	k.key = key
	p, _ := k.p.Partition(&k.msg, n) // a ByteEncoder never fails to encode
	return p
}

// producerMessage is a record as the guarantee-none producer sends it: a
// nil key is Kafka's null key (no Key at all, so that Sarama's murmur2
// partitioner spreads such records rather than hashing an empty key).
func producerMessage(topic string, key, value []byte) *sarama.ProducerMessage {
	msg := &sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(value)}
	if key != nil {
		msg.Key = sarama.ByteEncoder(key)
	}
	return msg
}
