package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
	"github.com/faultline-dev/faultline/runtime/kafka/fill"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
)

// BenchmarkCheckLog checks a log of 400,000 input records (about 34 MiB in
// 8 partitions of 1 MiB segments), as a run does before the embedded
// broker reads it; it also reports how long the broker's whole start on
// that log takes, the check included (start-ms).
func BenchmarkCheckLog(b *testing.B) {
	dir := b.TempDir()
	e, err := broker.StartEmbedded(0, dir, kafkatest.Topics("revenue", 1))
	if err != nil {
		b.Fatal(err)
	}
	c := kafka.Client{Brokers: []string{e.Addr}}
	cl, err := c.NewClient()
	if err != nil {
		b.Fatal(err)
	}
	gen := orders.NewGenerator(1, 400_000, orders.GeneratorPartitions)
	if _, err := fill.NewWriter(c, cl, gen).Fill(context.Background()); err != nil {
		b.Fatal(err)
	}
	cl.Close()
	e.Close()
	b.ResetTimer()
	for b.Loop() {
		if err := broker.CheckLog(dir, broker.LogNeeds{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	start := time.Now()
	e, err = broker.StartEmbedded(0, dir, kafkatest.Topics("revenue", 1))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "start-ms")
	e.Close()
}
