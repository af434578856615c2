package sink

import (
	"encoding/binary"

	"github.com/IBM/sarama"
)

// murmur2 is the 32-bit MurmurHash2 that Kafka's Java client hashes a
// record's key with (Java: Utils.murmur2): seed 0x9747b28c, the key read as
// little-endian 32-bit words, its last one to three bytes folded in at the
// end. The result is Java's signed int.
func murmur2(data []byte) int32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	h := uint32(seed) ^ uint32(len(data))
	words := len(data) &^ 3
	for i := 0; i < words; i += 4 {
		k := binary.LittleEndian.Uint32(data[i:])
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch tail := data[words:]; len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// keyPartition is the partition among n that the Java producer's default
// partitioner gives a record with this (non-null) key: murmur2 of the key
// made positive by dropping its sign bit, modulo n (Java:
// BuiltInPartitioner.partitionForKey). A Kafka Streams or Flink job reading
// the output finds a key where its own producer would have put it.
func keyPartition(key []byte, n int32) int32 {
	return int32(uint32(murmur2(key))&0x7fffffff) % n
}

// kafkaPartitioner is a sarama.Partitioner that places a record with a key
// as Kafka's Java producer does (keyPartition) and one without a key on a
// random partition. Sarama's own hash partitioner uses FNV-1a, which puts
// keys elsewhere than every Java, librdkafka (murmur2_random) or franz-go
// producer does.
type kafkaPartitioner struct {
	random sarama.Partitioner
}

// newKafkaPartitioner is a sarama.PartitionerConstructor for
// kafkaPartitioner.
func newKafkaPartitioner(topic string) sarama.Partitioner {
	return &kafkaPartitioner{random: sarama.NewRandomPartitioner(topic)}
}

// Partition implements sarama.Partitioner.
func (p *kafkaPartitioner) Partition(msg *sarama.ProducerMessage, n int32) (int32, error) {
	key, ok, err := messageKey(msg)
	if err != nil {
		return -1, err
	}
	if !ok {
		return p.random.Partition(msg, n)
	}
	return keyPartition(key, n), nil
}

// RequiresConsistency implements sarama.Partitioner: a key always goes to
// the same partition.
func (p *kafkaPartitioner) RequiresConsistency() bool { return true }

// MessageRequiresConsistency implements sarama.DynamicConsistencyPartitioner:
// a record without a key may go elsewhere when it is retried.
func (p *kafkaPartitioner) MessageRequiresConsistency(msg *sarama.ProducerMessage) bool {
	_, ok, _ := messageKey(msg)
	return ok
}

// messageKey is msg's key and whether it has one: a nil key, also a nil
// byte slice in an encoder, is Kafka's null key.
func messageKey(msg *sarama.ProducerMessage) ([]byte, bool, error) {
	if msg.Key == nil {
		return nil, false, nil
	}
	key, err := msg.Key.Encode()
	if err != nil {
		return nil, false, err
	}
	return key, key != nil, nil
}
