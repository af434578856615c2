package sink

import (
	"fmt"
	"testing"

	"github.com/IBM/sarama"
)

// Kafka's own vectors for Utils.murmur2 (UtilsTest.testMurmur2).
func TestMurmur2KafkaVectors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := murmur2([]byte(tc.in)); got != tc.want {
				t.Fatalf("murmur2(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}

// The partitioner of guarantee none and the record writer's keyPartition
// put every key where Sarama's own Java-compatible partitioner does, for
// keys of every length modulo 4; a record without a key goes anywhere.
func TestKafkaPartitionerMatchesTheJavaProducer(t *testing.T) {
	ours, theirs := newKafkaPartitioner("t"), sarama.NewMurmur2Partitioner("t")
	for i := 0; i < 2000; i++ {
		key := []byte(fmt.Sprintf("customer-%d", i))[:8+i%5]
		for _, n := range []int32{1, 3, 4, 10, 97} {
			msg := &sarama.ProducerMessage{Key: sarama.ByteEncoder(key)}
			got, err := ours.Partition(msg, n)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := theirs.Partition(msg, n)
			if got != want || keyPartition(key, n) != want {
				t.Fatalf("key %q over %d partitions: %d (keyPartition %d), want %d", key, n, got, keyPartition(key, n), want)
			}
		}
	}
	p := newKafkaPartitioner("t").(sarama.DynamicConsistencyPartitioner)
	for _, msg := range []*sarama.ProducerMessage{{}, {Key: sarama.ByteEncoder(nil)}} {
		if p.MessageRequiresConsistency(msg) {
			t.Errorf("a record without a key (%#v) must not need one partition", msg.Key)
		}
		if got, err := p.Partition(msg, 4); err != nil || got < 0 || got >= 4 {
			t.Errorf("a record without a key: partition %d, %v", got, err)
		}
	}
}
