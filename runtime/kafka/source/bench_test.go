package source

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
	"github.com/faultline-dev/faultline/runtime/kafka/fill"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
)

// bareConsume reads every record of the input topics with plain Sarama
// partition consumers, start-up included, and returns how long it took.
func bareConsume(b *testing.B, c kafka.Client, total int64) time.Duration {
	start := time.Now()
	cfg, _ := c.Config()
	cl, err := c.NewClientWith(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	cons, err := sarama.NewConsumerFromClient(cl)
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	done := make(chan int64)
	for _, topic := range []string{orders.TopicOrders, orders.TopicPayments} {
		for p := int32(0); p < orders.GeneratorPartitions; p++ {
			end, _ := cl.GetOffset(topic, p, sarama.OffsetNewest)
			pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
			if err != nil {
				b.Fatal(err)
			}
			go func() {
				defer pc.AsyncClose()
				var n int64
				for m := range pc.Messages() {
					n++
					if m.Offset+1 >= end {
						break
					}
				}
				done <- n
			}()
		}
	}
	var n int64
	for i := 0; i < 2*orders.GeneratorPartitions; i++ {
		n += <-done
	}
	if n != total {
		b.Fatalf("bare consumer read %d records, want %d", n, total)
	}
	return time.Since(start)
}

// runJob runs the default job on the Kafka topics, bounded, with
// exactly-once checkpoints every second and the transactional sink.
func runJob(b *testing.B, c kafka.Client, total int64) time.Duration {
	start := time.Now()
	cl, err := c.NewClient()
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	env := &runtime.Env{Sources: map[string]runtime.Source{}, Outputs: map[string]runtime.TxnOutput{}, TxnPrefix: "bench"}
	for _, topic := range []string{orders.TopicOrders, orders.TopicPayments} {
		ends, err := kafka.EndOffsets(cl, topic)
		if err != nil {
			b.Fatal(err)
		}
		s, err := NewSource(c, cl, topic, StartEarliest, "", ends)
		if err != nil {
			b.Fatal(err)
		}
		env.Sources[topic] = s
	}
	out, err := sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	env.Outputs["revenue"] = out
	j, err := runtime.New(runtime.Config{Job: orders.Default(), Env: env, Checkpoint: checkpoint.Config{Interval: time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	obs := j.Observer()
	go func() {
		for range obs.Events() {
		}
	}()
	res, err := j.Run(context.Background(), runtime.RunOptions{})
	obs.Close()
	if err != nil || res.Status != runtime.JobFinished || res.RecordsIn != total {
		b.Fatalf("job: %v, status %v, read %d of %d", err, res.Status, res.RecordsIn, total)
	}
	return time.Since(start)
}

// BenchmarkJobVersusBareConsumer reads the same input topics of the
// embedded broker with a bare Sarama consumer and with the whole default job
// (exactly-once checkpoints every second, transactional sink), alternating,
// and reports both rates and their ratio (goal: the job at least half the
// bare consumer), and for each the process's CPU time per input record and
// the cores it kept busy (CPU time over wall time), which show whether a
// rate is bound by the CPU.
func BenchmarkJobVersusBareConsumer(b *testing.B) {
	const records = 2_000_000
	e, err := broker.StartEmbedded(0, "", kafkatest.Topics("revenue", 1))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	c := kafka.Client{Brokers: []string{e.Addr}}
	cl, err := c.NewClient()
	if err != nil {
		b.Fatal(err)
	}
	gen := orders.NewGenerator(1, records, orders.GeneratorPartitions)
	total, err := fill.NewWriter(c, cl, gen).Fill(context.Background())
	cl.Close()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var bare, job, bareCPU, jobCPU time.Duration
	for i := 0; i < b.N; i++ {
		c0 := processCPU()
		bare += bareConsume(b, c, total)
		c1 := processCPU()
		job += runJob(b, c, total)
		bareCPU, jobCPU = bareCPU+c1-c0, jobCPU+processCPU()-c1
	}
	read := float64(total) * float64(b.N)
	bareRate := read / bare.Seconds()
	jobRate := read / job.Seconds()
	b.ReportMetric(bareRate, "rec/s-bare-consumer")
	b.ReportMetric(jobRate, "rec/s-job")
	b.ReportMetric(jobRate/bareRate, "ratio")
	if bareCPU > 0 {
		b.ReportMetric(float64(bareCPU.Nanoseconds())/read, "cpu-ns/rec-bare-consumer")
		b.ReportMetric(float64(jobCPU.Nanoseconds())/read, "cpu-ns/rec-job")
		b.ReportMetric(bareCPU.Seconds()/bare.Seconds(), "cores-bare-consumer")
		b.ReportMetric(jobCPU.Seconds()/job.Seconds(), "cores-job")
	}
	b.ReportMetric(0, "ns/op")
}
