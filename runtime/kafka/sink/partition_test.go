package sink

import (
	"testing"

	"github.com/IBM/sarama"
)

// Keys land where Kafka's Java producer puts them: its own murmur2 vectors
// (UtilsTest.testMurmur2), made positive and taken modulo the partitions
// as BuiltInPartitioner.partitionForKey does, over several partition
// counts.
func TestKeysLandWhereTheJavaProducerPutsThem(t *testing.T) {
	k := newKeyPlacer("t")
	for _, tc := range []struct {
		in     string
		murmur int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	} {
		for _, n := range []int32{1, 3, 4, 10, 97} {
			want := int32(uint32(tc.murmur)&0x7fffffff) % n
			if got := k.partition([]byte(tc.in), n); got != want {
				t.Errorf("key %q over %d partitions: %d, want %d", tc.in, n, got, want)
			}
		}
	}
}

// A record without a key, also one whose key is a nil slice, has Kafka's
// null key: the guarantee-none producer spreads such records instead of
// hashing an empty key onto one partition, as Sarama's murmur2 partitioner
// would for a ByteEncoder of nil.
func TestRecordsWithoutAKeySpread(t *testing.T) {
	p := sarama.NewMurmur2Partitioner("t")
	seen := map[int32]bool{}
	for range 200 {
		msg := producerMessage("t", nil, []byte("v"))
		if msg.Key != nil {
			t.Fatalf("a nil key sent as %#v, not as Kafka's null key", msg.Key)
		}
		part, err := p.Partition(msg, 8)
		if err != nil {
			t.Fatal(err)
		}
		seen[part] = true
	}
	if len(seen) < 2 {
		t.Errorf("200 records without a key all went to partition(s) %v", seen)
	}
	if msg := producerMessage("t", []byte("k"), nil); msg.Key == nil {
		t.Errorf("a key was dropped")
	}
}
