package broker_test

import (
	"fmt"
	"testing"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime/kafka/broker"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
)

// The embedded broker rolls small segments, in memory (each one is a slice
// that doubles as it fills) and on disk (retention frees whole segments
// only).
func TestEmbeddedBrokerHasSmallSegments(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		e, err := broker.StartEmbedded(0, dir, kafkatest.Topics("revenue", 1))
		if err != nil {
			t.Fatal(err)
		}
		adm, err := sarama.NewClusterAdmin([]string{e.Addr}, sarama.NewConfig())
		if err != nil {
			e.Close()
			t.Fatal(err)
		}
		results, err := adm.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.BrokerResource, Name: "0"}}, sarama.DescribeConfigsOptions{})
		adm.Close()
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, r := range results {
			if r.ErrorCode != 0 {
				t.Fatalf("describe broker %s: %v %s", r.Name, r.ErrorCode, r.ErrorMsg)
			}
			for _, c := range r.Configs {
				if c.Name == "log.segment.bytes" {
					got = c.Value
				}
			}
		}
		want := fmt.Sprint(broker.MemorySegmentBytes)
		if dir != "" {
			want = fmt.Sprint(broker.DiskSegmentBytes)
		}
		if got != want {
			t.Errorf("data dir %q: log.segment.bytes %q, want %s", dir, got, want)
		}
	}
}
